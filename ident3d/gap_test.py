"""The memorisation test: does the public split score above images the model cannot have seen?

A fresh draw's rows and the public split's held-out rows are read by the same fixed read-outs (the
affine map and the latent-to-feature matching the protocol fitted on the public split's fit rows).
If the model has not memorised the public images, the two sets are draws of one distribution through
one function, so which row belongs to which set is arbitrary: the rows are exchangeable. The test
pools them and relabels them at random, keeping the two set sizes, and asks how often a relabelled
gap (public minus fresh) is at least the observed one. That p-value is exact whatever the set sizes
(a statistic biased on the smaller set is biased the same way in every relabelling) and whatever the
distribution of the per-row values.

Per metric the statistic is the set's mean over latents of
- linear R², each latent's R² of the fixed affine read-out clipped to [0, 1] before the mean (one
  latent read badly on one set cannot move the mean by more than 1 / latents), under every protocol;
- Pearson MCC, each latent's |correlation| with its matched feature.

Both are functions of per-row sums, so a relabelling costs one matrix product. The test is one-sided
(memorisation raises the public score) and Holm-adjusted across every metric and split it is asked
about (an OOD track's regions too): the flag fires when any adjusted p-value is at most ``LEVEL``.
A content/style split's rows come in pairs that share their content: pairs are relabelled whole.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from importlib.resources import files

import numpy as np

LEVEL = 0.025  # the flag's family-wise false-alarm level (the old flag's one-sided 2.5 % per interval)
PERMUTATIONS = 1999  # p-values in steps of 1 / 2000
NAME = "ident3d-gap-test/1"  # the test a result's fresh section was judged by; absent: the old intervals
_CHUNK = 250  # relabellings scored at a time (a (chunk, units) mask in memory)


def row_statistics(z: np.ndarray, prediction: np.ndarray, h_matched: np.ndarray) -> np.ndarray:
    """Per row the quantities whose sums give both statistics on any set of rows: for each latent the
    squared residual, the latent and its square (R²), the matched feature, its square and the product
    (Pearson); shape (rows, 6 * latents)."""
    z, p, y = (np.asarray(a, np.float64) for a in (z, prediction, h_matched))
    return np.concatenate([(z - p) ** 2, z, z * z, y, y * y, z * y], axis=1)


def _statistics(sums: np.ndarray, n: np.ndarray, latents: int) -> dict[str, np.ndarray]:
    """Clipped-per-latent linear R² and Pearson MCC means from row sums ``sums`` (..., 6 * latents) of
    sets of ``n`` rows (broadcast against the leading axes)."""
    residual, sz, szz, sy, syy, szy = np.split(sums, 6, axis=-1)
    n = np.asarray(n, np.float64)[..., None]
    total = szz - sz * sz / n
    r2 = np.where(total > 0, 1.0 - residual / np.where(total > 0, total, 1.0), 0.0)
    covariance, var_y = szy - sz * sy / n, syy - sy * sy / n
    denominator = np.sqrt(np.maximum(total * var_y, 0.0))
    correlation = np.where(denominator > 0, np.abs(covariance) / np.where(denominator > 0, denominator, 1.0),
                           0.0)
    return {"linear_r2": np.clip(r2, 0.0, 1.0).mean(-1), "mcc_pearson": np.minimum(correlation, 1.0).mean(-1)}


def permutation_p(public: np.ndarray, fresh: np.ndarray, latents: int, seed: int,
                  permutations: int = PERMUTATIONS, paired: bool = False) -> dict[str, dict[str, float]]:
    """Per metric the observed gap of the test's statistic (public minus fresh) and its one-sided
    permutation p-value, ``(1 + #{relabelled gap >= observed}) / (1 + permutations)``, from per-row
    statistics (``row_statistics``) of the two sets."""
    if paired:  # a pair's two rows are one draw: relabel them together (their sums add)
        public, fresh = (rows.reshape(len(rows) // 2, 2, -1).sum(1) for rows in (public, fresh))
    per_unit = 2 if paired else 1
    units = np.concatenate([public, fresh])
    m, total = len(public), units.sum(0)
    n_public, n_fresh = m * per_unit, (len(units) - m) * per_unit
    observed_public = _statistics(public.sum(0), n_public, latents)
    observed_fresh = _statistics(fresh.sum(0), n_fresh, latents)
    observed = {k: float(observed_public[k] - observed_fresh[k]) for k in observed_public}
    rng = np.random.default_rng([seed, 2])
    at_least = dict.fromkeys(observed, 0)
    labels = np.zeros(len(units))
    labels[:m] = 1.0  # m units are "public"; each relabelling shuffles which
    for start in range(0, permutations, _CHUNK):
        b = min(_CHUNK, permutations - start)
        sums = rng.permuted(np.broadcast_to(labels, (b, len(units))), axis=1) @ units
        on_public = _statistics(sums, n_public, latents)
        on_fresh = _statistics(total - sums, n_fresh, latents)
        for key, value in observed.items():  # a tolerance for the rounding of equal sums
            at_least[key] += int(np.sum(on_public[key] - on_fresh[key] >= value - 1e-12))
    return {key: {"statistic_gap": value, "p": (1 + at_least[key]) / (1 + permutations)}
            for key, value in observed.items()}


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm's step-down adjusted p-values, in the input's order: each is at most ``LEVEL`` exactly when
    Holm's procedure at that level rejects it, and the chance that any true null is rejected is at
    most the level whatever the dependence between the tests."""
    order = np.argsort(p_values, kind="stable")
    adjusted, running = [0.0] * len(p_values), 0.0
    for rank, index in enumerate(order):
        running = max(running, min(1.0, (len(p_values) - rank) * p_values[index]))
        adjusted[index] = running
    return adjusted


def adjust(gaps: Sequence[Mapping[str, dict]]) -> None:
    """Holm-adjust every metric's p-value across ``gaps`` (a fresh section's gap and its regions' gaps,
    each {metric: {..., "p": ...}}) in place: each metric gets ``p_holm`` and ``above_chance`` (its
    adjusted p-value at most ``LEVEL``)."""
    cells = [cell for gap in gaps for cell in gap.values()]
    for cell, adjusted in zip(cells, holm([cell["p"] for cell in cells]), strict=True):
        cell["p_holm"] = adjusted
        cell["above_chance"] = adjusted <= LEVEL


def described() -> dict[str, object]:
    """What a result's fresh section records of the test that judged it."""
    return {"name": NAME, "level": LEVEL, "permutations": PERMUTATIONS, "sided": "public above fresh",
            "adjustment": "Holm, across every metric and split"}


def false_alarms(protocol: str) -> str:
    """The test's measured false-alarm rate under ``protocol`` on splits no model saw, in words
    (``ident3d/flag_rate.json``, generated from ``ident3d.baselines.flag_calibration``'s record)."""
    measured = json.loads(files("ident3d").joinpath("flag_rate.json").read_text())
    row = measured["protocols"].get(protocol) if measured["test"] == NAME else None
    if row is None:
        return f"not measured under {protocol}"
    low, high = (100 * v for v in row["ci95"])
    return (f"{100 * row['flagged'] / row['splits']:.1f}% [{low:.1f}, {high:.1f}] of {row['splits']:,} "
            "splits no model saw")


def verdict(gap: Mapping[str, Mapping[str, float]], protocol: str) -> str:
    """A gap judged by this test, in words: flagged or not, the adjusted p-values, the measured
    false-alarm rate, and what a flag means for the rank."""
    flagged = [f"{key} p = {cell['p_holm']:.3f}" for key, cell in gap.items() if cell["above_chance"]]
    rate = f"false alarms {false_alarms(protocol)}"
    if flagged:
        return (f"memorisation test: flagged ({', '.join(flagged)}, Holm-adjusted, level {100 * LEVEL:g}%; "
                f"{rate}): the public split scores above unseen images, so the model may have memorised "
                "it; a warning only, the rank uses the fresh score")
    smallest = min(cell["p_holm"] for cell in gap.values())
    return (f"memorisation test: not flagged (smallest adjusted p = {smallest:.2f}, level {100 * LEVEL:g}%; "
            f"{rate}); it catches memorisation of the public split, not a model that adapts its answers "
            "to it, so the rank uses the fresh score")
