"""The colour defect on the CPU track, computed from leaderboard entries: each hue latent's R² with the
original colour mapping (``legacy``) against ``v2``, beside the ceiling the legacy plateaus put on it.

    python -m ident3d.baselines.reports --write --only NAME    # write it (ident3d.baselines.reports)

The arms are normal-box on the two CPU tracks (``baselines/cpu_track.toml``), scored under
ident3d-eval-v1 (linear and kernel R² per latent). The difference legacy - v2 gets a 95% Welch t
interval and a verdict only with at least ``MIN_SEEDS`` seeds per arm (``relations``' rule). The
ceiling (``ident3d.variants.ceilings``) is what no read-out of the images can pass: the legacy mapping
sends a stretch of each hue to one colour.
"""

from __future__ import annotations

from ident3d.baselines.experiment import load_experiment
from ident3d.baselines.relations import EXPERIMENT, MIN_SEEDS, Arm, arm_of, difference_text
from ident3d.variants import get_variant
from ident3d.variants.ceilings import readout_ceilings

PROTOCOL, PRESET = "ident3d-eval-v1", "normal-box"
HUES = ("object_hue", "spotlight_hue", "ground_hue")
READOUTS = {"linear_r2": "linear", "nonlinear_r2": "kernel"}


def hue_arms(entries: list[dict]) -> dict[str, dict[tuple[str, str], Arm]]:
    """Per data set (legacy, v2): per (hue, read-out), the R² of normal-box's seeds."""
    experiment = load_experiment(EXPERIMENT)
    prefix = experiment.entry_prefix + "_"
    runs = {run.folder: run for run in experiment.runs if run.preset == PRESET}
    values: dict[str, dict[tuple[str, str], list[float]]] = {}
    for entry in entries:
        folder = entry["id"].removeprefix(prefix)
        if entry["protocol"] != PROTOCOL or folder not in runs or not entry["id"].startswith(prefix):
            continue
        for latent in entry["result"]["per_latent"]:
            for readout in READOUTS:
                if latent["factor"] in HUES and latent.get(readout) is not None:
                    key = (latent["factor"], readout)
                    values.setdefault(runs[folder].data, {}).setdefault(key, []).append(latent[readout])
    return {data: {key: arm_of(data, v) for key, v in by_key.items()} for data, by_key in values.items()}


def _cell(arm: Arm | None) -> str:
    return "not measured" if arm is None else f"{100 * arm.mean:.2f} (n={arm.n})"


def section(entries: list[dict]) -> str:
    ceilings = readout_ceilings(get_variant("legacy"))
    arms = hue_arms(entries)
    legacy, v2 = arms.get("legacy", {}), arms.get("v2", {})
    lines = [f"Each hue of normal-box on the legacy track against v2 ({PROTOCOL}, per-latent R² in percent), "
             "with the difference legacy - v2 and its 95% Welch t interval (a verdict needs "
             f"{MIN_SEEDS} seeds per arm), beside the ceiling the legacy mapping's plateaus put on any "
             "read-out of the images (`ident3d.variants.ceilings`; v2's is 100 for every hue):", "",
             "| hue | read-out | legacy ceiling | legacy | v2 | legacy - v2 |",
             "|---|---|---:|---:|---:|---|"]
    for hue in HUES:
        for readout, name in READOUTS.items():
            key = (hue, readout)
            both = key in legacy and key in v2
            difference = difference_text(legacy[key], v2[key]) if both else "not measured"
            lines.append(f"| {hue} | {name} | {100 * ceilings[hue]:.2f} | {_cell(legacy.get(key))} | "
                         f"{_cell(v2.get(key))} | {difference} |")
    cap = sum(1 - c for c in ceilings.values()) / len(ceilings)
    lines += ["", f"The plateaus alone can lower the mean R² over the ten latents by at most {100 * cap:.2f} "
              "points; what the images hide does not explain a loss larger than that."]
    return "\n".join(lines)

