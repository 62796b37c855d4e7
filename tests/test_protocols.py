"""Protocols are versioned: every metric of fixed inputs is pinned per protocol version, and a value
that moves without a version bump fails here.

    python tests/test_protocols.py --write     (after bumping a version in ident3d/protocols.py)

writes tests/golden/metrics.json; it refuses to change the pinned values of a version that stayed.
"""

from __future__ import annotations

import json
import sys
from functools import cache
from pathlib import Path

import numpy as np
import pytest
from threadpoolctl import threadpool_limits

from ident3d.protocols import COMPANIONS, NAMES, REGISTRY, Scores, per_latent_metrics

GOLDEN = Path(__file__).resolve().parent / "golden" / "metrics.json"
TOLERANCE = 1e-9
VERSIONED = {**REGISTRY, **COMPANIONS}  # companions are computed with ident3d-eval-v1, pinned on their own


def fixtures() -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Fixed inputs (true latents z, features h) that exercise each metric's behaviour."""
    rng = np.random.default_rng(2021)
    n, k = 600, 10
    z = rng.uniform(-1, 1, (n, k))
    permutation, scales = rng.permutation(k), rng.uniform(0.5, 3, k)
    mix = rng.normal(size=(k, k))
    constant = z.copy()
    constant[:, 3] = 0.2
    return {
        "identity": (z, z.copy()),
        "permutation, scale and noise": (z, z[:, permutation] * scales + 0.05 * rng.normal(size=(n, k))),
        "nonlinear mix": (z, np.tanh(z @ mix) + 0.01 * rng.normal(size=(n, k))),
        "pure noise": (z, rng.normal(size=(n, k))),
        "a constant latent": (constant, constant + 0.05 * rng.normal(size=(n, k))),
    }


@cache
def scored(protocol: str) -> dict[str, Scores]:
    return {name: REGISTRY[protocol].score(z, h) for name, (z, h) in fixtures().items()}


@cache
def scored_with_an_ood_split() -> dict[str, Scores]:
    """Each fixture cut at its first latent: the rows above 0.5 are an OOD split of the others."""
    out = {}
    for name, (z, h) in fixtures().items():
        held = z[:, 0] > 0.5
        out[name] = REGISTRY["ident3d-eval-v1"].score(z[~held], h[~held],
                                                      ood={"latent_0 > 0.5": (z[held], h[held])})
    return out


def companion_values(protocol: str, scored: Scores) -> dict[str, list[float] | None]:
    if protocol == "ident3d-ood":
        reference, (split,) = scored.companions["ood"]["in_distribution"], scored.companions["ood"]["splits"]
        return {f"{where}_{key}": [r[key] for r in rows["per_latent"]]
                for where, rows in (("in_distribution", reference), ("ood", split))
                for key in ("linear_r2", "kernel_r2")}
    if protocol == "ident3d-dci":
        dci = scored.companions["dci"]
        return {"disentanglement": [dci["disentanglement"]], "completeness": [dci["completeness"]],
                "informativeness": dci["per_latent"]["informativeness"],
                "completeness_per_latent": dci["per_latent"]["completeness"]}
    extrapolation = scored.companions["extrapolation"]
    return {"linear_r2": [r["linear_r2"] for r in extrapolation["per_latent"]],
            "kernel_r2": [r["kernel_r2"] for r in extrapolation["per_latent"]],
            "composition_linear_r2": [c["linear_r2"] for c in extrapolation["composition"]["corners"]],
            "composition_kernel_r2": [c["kernel_r2"] for c in extrapolation["composition"]["corners"]]}


def compute(protocol: str) -> dict[str, dict[str, list[float] | None]]:
    if protocol in COMPANIONS:
        inputs = scored_with_an_ood_split() if protocol == "ident3d-ood" else scored("ident3d-eval-v1")
        return {name: companion_values(protocol, s) for name, s in inputs.items()}
    return {name: {m: None if s.per_latent(m) is None else [float(v) for v in s.per_latent(m)]
                   for m in per_latent_metrics()}
            for name, s in scored(protocol).items()}


def moved(pinned: dict, computed: dict) -> list[str]:
    """Every (fixture, metric, latent) whose value differs by more than TOLERANCE."""
    found = []
    for fixture, values in computed.items():
        for metric, now in values.items():
            before = pinned.get(fixture, {}).get(metric)
            if (before is None) != (now is None) or (now is not None and (
                    len(now) != len(before) or not np.allclose(now, before, rtol=0, atol=TOLERANCE))):
                found.append(f"{fixture} / {metric}: {before} -> {now}")
    return found


@pytest.mark.parametrize("protocol", list(VERSIONED))
def test_pinned_metrics_move_only_with_a_version_bump(protocol):
    pinned = json.loads(GOLDEN.read_text())[protocol]
    version = VERSIONED[protocol].version
    assert pinned["version"] == version, (
        f"{protocol} is at version {version} but the pinned values are of {pinned['version']}. "
        "Fix: python tests/test_protocols.py --write")
    changes = moved(pinned["values"], compute(protocol))
    assert not changes, (f"{protocol} {version}: metric values moved without a version bump: {changes[:2]}. "
                         "Fix: if intended, bump the version in ident3d/protocols.py with a changelog "
                         "line, then python tests/test_protocols.py --write")


def test_the_fixtures_behave_as_named():
    values = json.loads(GOLDEN.read_text())["ident3d-eval-v1"]["values"]
    assert min(values["identity"]["linear_r2"]) > 0.999 and min(values["identity"]["mcc_pearson"]) > 0.999
    assert min(values["permutation, scale and noise"]["mcc_pearson"]) > 0.99
    assert max(values["pure noise"]["linear_r2"]) < 0.05
    assert values["a constant latent"]["linear_r2"][3] == 0.0  # predicted, but not exactly


def test_every_contract_names_the_registry_protocols():
    from ident3d.leaderboard.entries import entry_schema
    from ident3d.results import shipped_schema

    for schema in (shipped_schema("ident3d.schemas", "result-v1.json"), entry_schema()):
        assert schema["properties"]["protocol"] == {"$ref": "#/$defs/protocol"}
        assert schema["$defs"]["protocol"]["enum"] == list(NAMES)
    for protocol in REGISTRY.values():
        assert protocol.changelog[-1][0] == protocol.version and protocol.summary


def write() -> None:
    """Pin the current values; refuse to change those of a version that did not change."""
    old = json.loads(GOLDEN.read_text()) if GOLDEN.exists() else {}
    new = {}
    for protocol in VERSIONED:
        version, computed = VERSIONED[protocol].version, compute(protocol)
        previous = old.get(protocol)
        if previous and previous["version"] == version and moved(previous["values"], computed):
            sys.exit(f"error: {protocol} {version}: values moved but the version did not. Fix: bump it in "
                     "ident3d/protocols.py with a changelog line first.")
        same = previous and previous["version"] == version  # keep its values: no churn at 1e-16
        new[protocol] = previous if same else {"version": version, "values": computed}
    GOLDEN.parent.mkdir(exist_ok=True)
    GOLDEN.write_text(json.dumps(new, indent=1, sort_keys=True) + "\n")
    print(GOLDEN)


if __name__ == "__main__" and sys.argv[1:] == ["--write"]:
    write()


@pytest.mark.parametrize("protocol", NAMES)
def test_a_draw_of_the_public_score_rows_scores_as_the_public_split(protocol):
    """``score_draw`` applies the public split's read-outs to other rows: given the public score rows
    themselves, every read-out it shares with ``score`` (linear and kernel R², both MCCs, read-out
    extrapolation) gives the public values; DCI is refitted on the draw's own halves. One BLAS thread:
    ``score`` runs its fits side by side on a share of the threads, ``score_draw`` its predictions on
    all, and a BLAS call on two threads may round apart from the same call on one."""
    z, h = fixtures()["permutation, scale and noise"]
    scoring = REGISTRY[protocol]
    with threadpool_limits(limits=1, user_api="blas"):
        public = scoring.score(z, h)
        fit, test = public.fit, public.test
        draw = scoring.score_draw(z[fit], h[fit], public, z[test], h[test])
    for metric in per_latent_metrics():
        if protocol == "cl-ica-2021" and metric == "mcc_pearson":
            continue  # cl-ica matches and scores MCC on its whole sample, not on the score half
        mine, theirs = public.per_latent(metric), draw.per_latent(metric)
        assert (mine is None) == (theirs is None), metric
        if mine is not None:
            np.testing.assert_allclose(theirs, mine, atol=1e-9, err_msg=metric)
    if "extrapolation" in public.companions:
        assert draw.companions["extrapolation"] == public.companions["extrapolation"]
        assert draw.companions["dci"]["protocol"] == "ident3d-dci"
        assert 0 < draw.companions["dci"]["informativeness"] <= 1


def test_the_cl_ica_gap_compares_a_draw_with_rows_no_matching_was_chosen_on():
    """cl-ica-2021 chooses its matching on its whole 4,096-row sample, so MCC on any of those rows is
    read optimistically (the largest of many chance correlations); a fresh draw's gap then fired on an
    honest model. The gap's public rows are the split's rows outside the sample: features that carry
    nothing score there as on unseen rows."""
    from ident3d import metrics

    rng = np.random.default_rng(7)
    z, h = rng.uniform(-1, 1, (5000, 10)), rng.normal(size=(5000, 100))
    s = REGISTRY["cl-ica-2021"].score(z, h)
    unseen = s.unseen_rows()
    assert len(unseen) == 5000 - 4096 and not set(unseen) & set(s.fit) | set(s.test) & set(unseen)
    on = {name: metrics.mcc(z[rows], h[rows], "pearson", s.assignment)[0].mean()
          for name, rows in (("chosen", s.test), ("unseen", unseen))}
    def fresh(n):  # chance |r| shrinks with the rows scored: compare sets of one size
        noise = rng.uniform(-1, 1, (n, 10)), rng.normal(size=(n, 100))
        return metrics.mcc(*noise, "pearson", s.assignment)[0].mean()

    assert on["chosen"] - fresh(len(s.test)) > 0.015  # the bias the gap used to flag
    assert abs(on["unseen"] - fresh(len(unseen))) < 0.005
    assert np.array_equal(REGISTRY["ident3d-eval-v1"].score(z[:600], h[:600, :10]).unseen_rows(),
                          REGISTRY["ident3d-eval-v1"].score(z[:600], h[:600, :10]).test)


def paired_split(n_pairs: int = 600, seed: int = 3) -> tuple[np.ndarray, np.ndarray]:
    """A content/style split: rows 2i and 2i + 1 share six content latents and draw four style latents
    each; the features are three of the content latents (a style-invariant encoder that misses the
    other three), so a pair's two rows have the same features."""
    rng = np.random.default_rng(seed)
    content = np.repeat(rng.uniform(-1, 1, (n_pairs, 6)), 2, axis=0)
    z = np.hstack([content, rng.uniform(-1, 1, (2 * n_pairs, 4))])
    return z, content[:, :3].copy()


@cache
def scored_paired_split(protocol: str, paired: bool) -> Scores:
    return REGISTRY[protocol].score(*paired_split(), paired=paired)


@pytest.mark.parametrize("protocol", NAMES)
def test_a_paired_split_is_halved_by_pair(protocol):
    z, _ = paired_split()
    s = scored_paired_split(protocol, True)
    assert not set(s.fit // 2) & set(s.test // 2)
    unseen = s.unseen_rows()  # a fresh draw's gap resamples these by pair: rows 2k, 2k + 1 of the set
    assert (unseen[0::2] // 2 == unseen[1::2] // 2).all() and (unseen[0::2] % 2 == 0).all()
    assert len(s.fit) + len(s.test) == min(len(z), 4096) and len(s.fit) % 2 == 0


def test_a_pair_partner_no_longer_reads_a_latent_the_features_miss():
    """Halved row by row, a scored row's partner (same features, same content) sits among the fit rows
    for about half the rows, and the kernel read-out returns the partner's content: latents the features
    do not carry read far above 0 (the content/style baseline's rotations did, on its public split
    only). Halved by pair they read as on unseen images."""
    missed = slice(3, 6)  # content latents the features do not carry
    leaky = scored_paired_split("ident3d-eval-v1", False).per_latent("nonlinear_r2")[missed]
    kept = scored_paired_split("ident3d-eval-v1", True).per_latent("nonlinear_r2")[missed]
    assert leaky.min() > 0.2 and kept.max() < 0.05


def test_a_new_metric_and_protocol_reach_the_board_from_the_registry_alone(monkeypatch, tmp_path):
    """A contributor's new per-latent metric is one ``METRICS`` row and a new protocol one ``REGISTRY``
    row (both in protocols.py, plus its golden values): registered here, a result scored under the new
    protocol validates, enters the board and shows the new column and table in Markdown and page."""
    from dataclasses import replace

    from ident3d import protocols
    from ident3d.evaluation import evaluate
    from ident3d.fake_splits import write_fake_split
    from ident3d.leaderboard.build import outputs
    from ident3d.leaderboard.entries import entry_from_result, load_entries, write_entry
    from ident3d.leaderboard.site import page_data

    class Squared(protocols.ClIca2021):
        """cl-ica-2021 and, per latent, its squared matched correlation."""

        def score(self, z, h, names=None, ood=None, paired=False):
            s = super().score(z, h, names, ood, paired)
            return replace(s, values={**s.values, "mcc_squared": s.values["mcc_pearson"] ** 2})

    monkeypatch.setitem(protocols.METRICS, "mcc_squared", protocols.Metric(
        "mcc_squared", "MCC²", "squared MCC", "each latent's matched correlation, squared", per_latent=True))
    monkeypatch.setitem(protocols.REGISTRY, "squared-2026", Squared(
        name="squared-2026", version="1.0", summary="cl-ica-2021 with the squared matched correlation",
        changelog=(("1.0", "first version"),)))

    data = tmp_path / "data"
    write_fake_split(data, "test", n=300, size=16)
    z = np.load(data / "test/raw_latents.npy")
    np.save(tmp_path / "features.npy", z[:, :6] + 0.5 * np.random.default_rng(0).normal(size=(300, 6)))
    result = evaluate(tmp_path / "features.npy", data, protocol="squared-2026", progress=False)
    rows = result.document["per_latent"]
    assert result.document["protocol"] == "squared-2026"
    assert [r["mcc_squared"] for r in rows] == pytest.approx([r["mcc_pearson"] ** 2 for r in rows])
    assert 0.2 < result.metrics["mcc_squared"] < result.metrics["mcc_pearson"] < 0.7

    entries = tmp_path / "entries"
    path = write_entry(entry_from_result(result, "Doe2026Squared", authors=["J. Doe"]), entries)
    assert path == entries / "squared-2026" / "Doe2026Squared.json"
    board = outputs(entries, tmp_path / "BOARD.md", tmp_path / "site.html")
    markdown = board[tmp_path / "BOARD.md"].decode()
    assert "· squared-2026" in markdown and "| MCC² (%) |" in markdown
    assert "squared MCC: each latent's matched correlation, squared" in markdown
    page = page_data(load_entries(entries))
    assert ["mcc_squared", "MCC²", True, False] in page["metric_columns"]
    assert page["entries"][0]["metrics"]["mcc_squared"] == pytest.approx(result.metrics["mcc_squared"])
