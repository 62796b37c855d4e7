"""Evaluation protocols as versioned objects: what each computes, how it scores, and every change
that moved a number.

A protocol's ``name`` is what results, entries and ``--protocol`` say; its ``version`` goes up, with a
changelog line, whenever a change can move any metric value on any input (tests/test_protocols.py
pins the values of fixed inputs per version and fails when one moves without a bump).

A protocol in ``REGISTRY`` scores itself: ``protocol.score(z, h)`` splits the rows, fits its read-outs
and returns ``Scores``; ``protocol.mean`` averages a per-latent metric its way. Adding a protocol is
one new ``ScoringProtocol`` here and its golden values (docs/architecture.md, "Protocols"). The
companion protocols (DCI, read-out extrapolation, OOD) are computed by ``ident3d-eval-v1`` on its
own fit and score rows, each versioned on its own.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

if TYPE_CHECKING:
    from ident3d.extrapolation import ExtrapolationReadouts
    from ident3d.metrics import AffineReadout, Readouts

SPLIT_SEED = 0  # the seeded permutation that splits the rows into fit and score sets
CLICA_SAMPLE = 4096


def shuffled_rows(n: int, seed: int, paired: bool = False) -> np.ndarray:
    """The rows ``0 .. n - 1`` in a seeded random order. On a paired split (rows 2i and 2i + 1 share
    their content latents: a content/style split) whole pairs are shuffled and each pair's rows stay
    adjacent, so cutting the order at an even position (``even_cut``) never parts a pair; a last row
    without a partner comes last."""
    rng = np.random.default_rng(seed)
    if not paired:
        return rng.permutation(n)
    return np.concatenate([pair_rows(rng.permutation(n // 2)), np.arange(2 * (n // 2), n)])


def pair_rows(pairs: np.ndarray) -> np.ndarray:
    """The rows of pairs (pair k is rows 2k and 2k + 1), each pair's two rows adjacent in the order of
    ``pairs`` along its last axis (its other axes kept: one resample per row of a 2-d array)."""
    pairs = np.asarray(pairs)
    return np.stack([2 * pairs, 2 * pairs + 1], axis=-1).reshape(*pairs.shape[:-1], -1)


def even_cut(k: int, paired: bool) -> int:
    """Where to cut a ``shuffled_rows`` order of ``k`` rows in two halves: ``k // 2``, made even on a
    paired split so that a pair is never cut."""
    return k // 2 - (k // 2) % 2 if paired else k // 2


@dataclass(frozen=True)
class Metric:
    """A number that results and the board report, named once: its key (in results, entries, the
    board's data), its column label and full title, what it means (the legend's sentence), and how the
    board treats it. A per-latent metric has a value per latent in a result's ``per_latent`` rows and
    the protocol's mean in its ``metrics``; any other is a companion protocol's number, read from its
    section of the result (``leaderboard.companions`` says where)."""

    name: str
    label: str  # the column's header
    title: str  # the metric's full name (the legend, the Hub's metric names)
    meaning: str  # what it measures, after the title in the legend
    per_latent: bool = False
    rank: int | None = None  # its place in the ranking key (0 first); None: not ranked by
    in_gap: bool = False  # a fresh draw's memorisation gap is taken on it
    higher_is_better: bool = True
    column: bool = True  # a column of the board's tables
    required: bool = False  # every protocol reports it (a result must hold a number)
    paper_reports: bool = False  # every paper's table reports it (an entry copied from a paper must too)

    @property
    def legend(self) -> str:
        return f"{self.title}: {self.meaning}"


def _companion_metrics() -> tuple[Metric, ...]:
    """The companion protocols' board columns: DCI, read-out extrapolation, an OOD track's region splits,
    and a content/style split's blocks (a content encoder should read content, not style)."""
    dci = (Metric("dci_disentanglement", "D", "D, DCI disentanglement",
                  "whether each feature serves one latent (Eastwood & Williams, ICLR 2018); read it "
                  "beside I"),
           Metric("dci_completeness", "C", "C, DCI completeness",
                  "whether each latent lives in one feature; read it beside I"),
           Metric("dci_informativeness", "I", "I, DCI informativeness",
                  "how much of each latent an elastic-net read-out of all features recovers"),
           Metric("extrapolation_linear_r2", "extrapolation R²", "extrapolation R²",
                  "the linear read-out fitted where a latent is at most 0.5 and scored where it is above"))
    ood = tuple(Metric(f"ood_{region}_linear_r2", f"OOD {region} R²", f"OOD {region} R²",
                       f"the linear read-out of the test split scored on the OOD track's {region} region, "
                       "never shown in training") for region in OOD_REGIONS)
    blocks = tuple(Metric(f"{block}_{fit}_r2", f"{block} R² ({fit})", f"{block} R² ({fit})",
                          f"the mean {fit} R² of the {block} latents on content/style pairs "
                          f"({'high' if content else 'low'} is what a content encoder should score)",
                          higher_is_better=content)
                   for block, content in (("content", True), ("style", False))
                   for fit in ("linear", "kernel"))
    return (*dci, *ood, *blocks)


OOD_REGIONS = ("interpolation", "extrapolation", "composition")  # an OOD track's test-<region> splits
METRICS: dict[str, Metric] = {m.name: m for m in (
    Metric("linear_r2", "R²", "linear R²",
           "the share of each latent's variance a linear read-out of the features recovers on held-out "
           "test images, averaged over the latents", per_latent=True, rank=1, in_gap=True, required=True,
           paper_reports=True),
    Metric("mcc_pearson", "MCC", "MCC (Pearson)",
           "each latent's |Pearson correlation| with the feature it is matched to (one feature per "
           "latent), averaged", per_latent=True, rank=0, in_gap=True, required=True),
    Metric("nonlinear_r2", "kernel R²", "kernel R²",
           "as linear R², with a kernel ridge read-out (recovery up to a nonlinear map)", per_latent=True),
    Metric("mcc_spearman", "MCC (Spearman)", "MCC (Spearman)",
           "as MCC, with Spearman's rank correlation", per_latent=True, column=False),
    *_companion_metrics(),
)}


def per_latent_metrics() -> tuple[str, ...]:
    """The per-latent metrics, in ``METRICS`` order (the order of the board's columns): a result's
    ``metrics`` and ``per_latent`` keys."""
    return tuple(name for name, m in METRICS.items() if m.per_latent)


def ranking_metrics() -> tuple[str, ...]:
    """The metrics a table ranks by, first key first."""
    return tuple(m.name for m in sorted((m for m in METRICS.values() if m.rank is not None),
                                        key=lambda m: m.rank))


def gap_metrics() -> tuple[str, ...]:
    """The metrics a fresh draw's memorisation gap is taken on."""
    return tuple(name for name, m in METRICS.items() if m.in_gap)


@dataclass(frozen=True)
class Protocol:
    name: str
    version: str
    summary: str
    changelog: tuple[tuple[str, str], ...]  # (version, what changed), oldest first

    def __post_init__(self) -> None:
        if not self.changelog or self.changelog[-1][0] != self.version:
            raise ValueError(f"protocol {self.name}: the changelog must end at version {self.version}")


@dataclass(frozen=True)
class Scores:
    """What a protocol measured on one split: raw per-latent values in latent order by metric, the
    rows that fitted the read-outs and the rows scored, the Pearson matching of features to latents,
    the kernel ridge choices, and the companion protocols' sections by result key (``dci``,
    ``extrapolation``, ``ood``); and the fitted read-outs (of ``ident3d-eval-v1``), which score a
    fresh draw with no refit."""

    values: dict[str, np.ndarray]  # per-latent metric -> raw values; a metric not computed is absent
    assignment: np.ndarray
    fit: np.ndarray
    test: np.ndarray
    kernel: list[dict[str, Any]] | None = None
    companions: dict[str, dict[str, Any]] = field(default_factory=dict)
    assignment_spearman: np.ndarray | None = None
    unseen: np.ndarray | None = None  # rows no read-out was fitted or matched on (default: test)
    readouts: Readouts | None = None  # the affine and kernel read-outs of every latent, on the fit rows
    extrapolation: ExtrapolationReadouts | None = None  # read-out extrapolation's, on the fit rows

    def unseen_rows(self) -> np.ndarray:
        """The rows a fresh draw's gap compares with: read by the fitted read-outs as the draw is, so
        public and fresh differ only in whether the model could have seen the images."""
        return self.test if self.unseen is None else self.unseen

    def per_latent(self, metric: str) -> np.ndarray | None:
        """The raw values of a per-latent metric (``METRICS``), None when the protocol does not compute it."""
        return self.values.get(metric)


@dataclass(frozen=True)
class ScoringProtocol(Protocol):
    """A protocol that results are scored under (``--protocol``)."""

    clips_each_latent: ClassVar[bool]  # clip per-latent values to [0, 1] before the mean, or the mean after
    reads_ood_splits: ClassVar[bool]  # scores a track's rendered OOD splits too

    def score(self, z: np.ndarray, h: np.ndarray, names: list[str] | None = None,
              ood: Mapping[str, tuple[np.ndarray, np.ndarray]] | None = None, paired: bool = False) -> Scores:
        """Split, fit and score latents ``z`` from features ``h`` (rows aligned); ``names`` label the
        latents, ``ood`` maps an OOD split's name to its (latents, features), and ``paired`` says the
        rows come in content/style pairs (2i, 2i + 1), which every split of the rows keeps together:
        a score row whose partner, with the same content, fitted the read-out would be read through
        its partner (``shuffled_rows``)."""
        raise NotImplementedError

    def score_draw(self, z_fit: np.ndarray, h_fit: np.ndarray, public: Scores, z: np.ndarray, h: np.ndarray,
                   names: list[str] | None = None,
                   ood: Mapping[str, tuple[np.ndarray, np.ndarray]] | None = None, paired: bool = False
                   ) -> Scores:
        """Score a fresh draw ``(z, h)`` with the read-outs ``public`` fitted on the public split's fit
        rows ``(z_fit, h_fit)``: every metric the protocol reports on the public split, on images the
        model cannot have seen (``ood``: the draw's region splits; ``paired``: as in ``score``). Here
        linear R² and Pearson MCC with the public matching; a protocol with more read-outs scores them
        too."""
        from ident3d.metrics import AffineReadout

        return Scores(self.gap_values(AffineReadout.fit(h_fit, z_fit), public.assignment, z, h),
                      assignment=public.assignment, fit=public.fit, test=np.arange(len(z)))

    def gap_values(self, linear: AffineReadout, assignment: np.ndarray, z: np.ndarray, h: np.ndarray
                   ) -> dict[str, np.ndarray]:
        """The per-latent values of the gap's metrics (``gap_metrics()``) on a scored set, from the
        public split's fitted affine read-out and Pearson matching: the numbers a memorisation gap
        compares between the public split's held-out rows and a fresh draw."""
        from ident3d import metrics

        pearson, _ = metrics.mcc(z, h, "pearson", assignment)
        return {"linear_r2": metrics.r2_per_latent(z.astype(np.float64), linear.predict(h)),
                "mcc_pearson": pearson}

    def report(self, s: Scores, names: Sequence[str], classes: Sequence[ClassFactor], style: Collection[str],
               fit: tuple[np.ndarray, np.ndarray], score: tuple[np.ndarray, np.ndarray]) -> dict[str, Any]:
        """The result fields of one scored set (the public split's score rows, or a fresh draw): each
        per-latent metric's mean and values (in [0, 1]; a negative R² is reported as 0), class accuracy
        (a class read-out fitted on ``fit``, every latent column and the features of the fit rows, and
        scored on ``score``), the companions' sections and, when ``style`` names a content/style split's
        style latents, the block scores."""
        from ident3d import metrics

        keys = per_latent_metrics()
        per = {k: _unit(s.per_latent(k)) for k in keys}
        per_latent = [{"factor": name, **{k: per[k][i] if per[k] else None for k in keys}}
                      for i, name in enumerate(names)]
        accuracy = [{"factor": c.name, "n_classes": c.n_classes, "chance": 1 / c.n_classes,
                     "accuracy": metrics.class_accuracy(fit[0][:, c.column], fit[1], score[0][:, c.column],
                                                        score[1], c.n_classes)} for c in classes]
        blocks = block_scores(style, per_latent)
        return {
            "metrics": {k: self.mean(s.per_latent(k)) for k in keys},
            "per_latent": per_latent,
            **({"classes": accuracy, "class_accuracy": float(np.mean([c["accuracy"] for c in accuracy]))}
               if accuracy else {}),
            **s.companions,
            **({"blocks": blocks} if blocks else {}),
        }

    def slow_part(self, n: int) -> str | None:
        """What scoring ``n`` rows spends its time on, said before it starts (None when it is quick)."""
        return None

    def mean(self, raw: np.ndarray | None) -> float | None:
        """The reported mean of a per-latent metric, in [0, 1]."""
        if raw is None:
            return None
        values = np.clip(raw, 0.0, 1.0) if self.clips_each_latent else np.asarray(raw, np.float64)
        return float(np.clip(values.mean(), 0.0, 1.0))


@dataclass(frozen=True)
class HeldOutHalves(ScoringProtocol):
    """``ident3d-eval-v1``: every row, halved at random; read-outs fitted on one half, scored on the
    other; the companions computed on the same halves."""

    clips_each_latent: ClassVar[bool] = True
    reads_ood_splits: ClassVar[bool] = True

    def slow_part(self, n: int) -> str | None:
        return (f"fitting the read-outs on {n // 2} of {n} points: linear, MCC, and kernel ridge with a grid "
                "search per latent (the slow part)")

    def score(self, z: np.ndarray, h: np.ndarray, names: list[str] | None = None,
              ood: Mapping[str, tuple[np.ndarray, np.ndarray]] | None = None, paired: bool = False) -> Scores:
        from ident3d import metrics
        from ident3d.dci import dci
        from ident3d.extrapolation import ExtrapolationReadouts
        from ident3d.ood import ood_scores
        from ident3d.parallel_fits import parallel_fits

        order = shuffled_rows(len(z), SPLIT_SEED, paired)
        fit, test = order[: even_cut(len(z), paired)], order[even_cut(len(z), paired):]
        with parallel_fits() as pool:  # DCI, the longest part, first: the kernel fits fill the other cores
            dci_scores = pool.submit(dci, z[fit], h[fit], z[test], h[test])
            kernel = metrics.choose_kernels(z[fit], h[fit], seed=SPLIT_SEED, pool=pool)
            fitted = pool.submit(metrics.Readouts.fit, h[fit], z[fit], kernel, seed=SPLIT_SEED)
            extrapolation = ExtrapolationReadouts.fit(z[fit], h[fit], kernel, pool=pool)
            readouts, dci_section = fitted.result(), dci_scores.result()
        _, assign_p = metrics.mcc(z[fit], h[fit], "pearson")
        _, assign_s = metrics.mcc(z[fit], h[fit], "spearman")
        pearson, _ = metrics.mcc(z[test], h[test], "pearson", assign_p)
        spearman, _ = metrics.mcc(z[test], h[test], "spearman", assign_s)
        names = names or [f"latent_{j}" for j in range(z.shape[1])]
        companions = {"dci": _versioned("ident3d-dci", dci_section),
                      "extrapolation": _versioned("ident3d-extrapolation",
                                                  extrapolation.score(z[test], h[test], names))}
        if ood:
            companions["ood"] = _versioned("ident3d-ood", ood_scores(readouts, z[test], h[test], names, ood))
        score_z = z[test].astype(np.float64)
        values = {"linear_r2": metrics.r2_per_latent(score_z, readouts.linear.predict(h[test])),
                  "nonlinear_r2": metrics.r2_per_latent(score_z, readouts.kernel.predict(h[test])),
                  "mcc_pearson": pearson, "mcc_spearman": spearman}
        return Scores(values, assignment=assign_p, fit=fit, test=test, kernel=kernel, companions=companions,
                      assignment_spearman=assign_s, readouts=readouts, extrapolation=extrapolation)

    def score_draw(self, z_fit: np.ndarray, h_fit: np.ndarray, public: Scores, z: np.ndarray, h: np.ndarray,
                   names: list[str] | None = None,
                   ood: Mapping[str, tuple[np.ndarray, np.ndarray]] | None = None, paired: bool = False
                   ) -> Scores:
        """The public split's read-outs scored on the draw with no refit: linear and kernel R² (the
        kernels chosen on the public split), both MCCs with the public matchings, read-out extrapolation
        and the draw's region splits. DCI is fitted and scored on the draw's own halves: its D and C
        describe the fitted read-out itself, which a model that memorised the public split would
        shape."""
        from ident3d import metrics
        from ident3d.dci import dci
        from ident3d.ood import ood_scores
        from ident3d.parallel_fits import parallel_fits

        names = names or [f"latent_{j}" for j in range(z.shape[1])]
        order = shuffled_rows(len(z), SPLIT_SEED, paired)
        first, second = order[: even_cut(len(z), paired)], order[even_cut(len(z), paired):]
        with parallel_fits() as pool:  # DCI's fit beside the fitted read-outs' predictions
            dci_scores = pool.submit(dci, z[first], h[first], z[second], h[second])
            pearson, _ = metrics.mcc(z, h, "pearson", public.assignment)
            spearman, _ = metrics.mcc(z, h, "spearman", public.assignment_spearman)
            companions = {"extrapolation": _versioned("ident3d-extrapolation",
                                                      public.extrapolation.score(z, h, names))}
            if ood:
                companions["ood"] = _versioned("ident3d-ood", ood_scores(public.readouts, z, h, names, ood))
            score_z = z.astype(np.float64)
            values = {"linear_r2": metrics.r2_per_latent(score_z, public.readouts.linear.predict(h)),
                      "nonlinear_r2": metrics.r2_per_latent(score_z, public.readouts.kernel.predict(h)),
                      "mcc_pearson": pearson, "mcc_spearman": spearman}
            companions = {"dci": _versioned("ident3d-dci", dci_scores.result()), **companions}
        return Scores(values, assignment=public.assignment, fit=public.fit, test=np.arange(len(z)),
                      kernel=public.kernel, companions=companions,
                      assignment_spearman=public.assignment_spearman, readouts=public.readouts,
                      extrapolation=public.extrapolation)


@dataclass(frozen=True)
class ClassFactor:
    """A discrete latent (the object's class): its name, its column among the latents, its classes."""

    name: str
    column: int
    n_classes: int


def _unit(values: np.ndarray | None) -> list[float] | None:
    """Scores as floats in [0, 1]; a negative R² (worse than the mean) is reported as 0."""
    return None if values is None else [float(np.clip(v, 0.0, 1.0)) for v in values]


def block_scores(style: Collection[str], per_latent: list[dict[str, Any]]) -> dict[str, Any] | None:
    """Block identifiability of a content/style split (von Kügelgen et al., NeurIPS 2021): the mean
    linear and kernel R² of the content latents (shared within a pair) and of the style latents
    (redrawn, named by ``style``), from the per-latent values; None when nothing is style."""
    if not style:
        return None
    out: dict[str, Any] = {"style_factors": sorted(style)}
    for block in ("content", "style"):
        rows = [r for r in per_latent if (r["factor"] in style) == (block == "style")]
        for metric, key in (("linear_r2", "linear_r2"), ("nonlinear_r2", "kernel_r2")):
            values = [r[metric] for r in rows if r[metric] is not None]
            out[f"{block}_{key}"] = float(np.mean(values)) if values else None
    return out


def _versioned(companion: str, section: dict[str, Any]) -> dict[str, Any]:
    """A companion protocol's result section, headed by its name and version."""
    return {"protocol": companion, "version": COMPANIONS[companion].version, **section}


@dataclass(frozen=True)
class ClIca2021(ScoringProtocol):
    """``cl-ica-2021``: the original procedure's fixed sample, linear R² on its halves and Pearson MCC
    on all of it, with the original's mean (raw values averaged, then clipped). One documented
    deviation: the model runs in ``eval()`` mode (the original left BatchNorm in training mode, which
    makes numbers depend on batch composition)."""

    clips_each_latent: ClassVar[bool] = False
    reads_ood_splits: ClassVar[bool] = False
    sample_seed: int = SPLIT_SEED  # results use 0; others measure how far the random sample moves a score

    def score(self, z: np.ndarray, h: np.ndarray, names: list[str] | None = None,
              ood: Mapping[str, tuple[np.ndarray, np.ndarray]] | None = None, paired: bool = False) -> Scores:
        from ident3d import metrics

        order = shuffled_rows(len(z), self.sample_seed, paired)
        sample, rest = order[:CLICA_SAMPLE], order[CLICA_SAMPLE:]  # CLICA_SAMPLE is even: no pair is cut
        fit, test = sample[: even_cut(len(sample), paired)], sample[even_cut(len(sample), paired):]
        pearson, assign_p = metrics.mcc(z[sample], h[sample], "pearson")
        # The matching was chosen on the whole sample, so its rows read MCC optimistically: the gap of a
        # fresh draw compares with the rows outside the sample, when the split has any.
        return Scores({"linear_r2": metrics.linear_r2(z[fit], h[fit], z[test], h[test]),
                       "mcc_pearson": pearson}, assignment=assign_p, fit=fit, test=test,
                      unseen=rest if len(rest) >= 4 else None)


CONSTANT_LATENT = ("1.1", "a latent that is constant on the scored set (every value equal) has R² 1 "
                   "only when it is predicted exactly, else 0 (scikit-learn's r2_score, which the "
                   "original code used); before, any prediction of it scored 1. No track has a "
                   "constant latent, so no leaderboard entry moves.")
PAIRS_KEPT = ("1.2", "on a content/style split (rows 2i and 2i + 1 share their content latents) the rows "
                     "are halved into fit and score sets by pair, so no scored row has its partner among "
                     "the fit rows; before, about half did, and a local read-out (kernel R²) of a model "
                     "that ignores style read a scored row's content through its partner, higher than on "
                     "a fresh draw. Only content/style entries move.")
PAIRS_SAMPLED = ("1.2", "on a content/style split the 4,096-row sample is 2,048 pairs, halved by pair, so no "
                        "scored row has its partner (same content) among the fit rows; the original code "
                        "had no paired test set. Only content/style entries move.")

REGISTRY: dict[str, ScoringProtocol] = {p.name: p for p in (
    HeldOutHalves(
        name="ident3d-eval-v1",
        version="1.2",
        summary="the whole test split in index order, halved at random (seed 0; a content/style split "
                "by pair) into fit and score sets; "
                "linear R² (affine least squares), kernel R² (RBF kernel ridge, a 4 x 4 grid, 3-fold CV "
                "on at most 4,000 fit points, chosen per latent) and MCC (Pearson and Spearman, Hungarian "
                "matching on the fit set, scored on the score set); per-latent values clipped to [0, 1] "
                "before the mean",
        changelog=(("1.0", "first version"), CONSTANT_LATENT, PAIRS_KEPT)),
    ClIca2021(
        name="cl-ica-2021",
        version="1.2",
        summary="the procedure of Zimmermann et al. (ICML 2021): 4,096 test images drawn with a fixed "
                "seed (on a content/style split, 2,048 pairs), halved into fit and score sets for linear "
                "R²; MCC (Pearson) on all 4,096 with its own matching; the raw per-latent R² averaged, then "
                "the mean clipped to [0, 1]",
        changelog=(("1.0", "first version"), CONSTANT_LATENT, PAIRS_SAMPLED)),
)}
NAMES = tuple(REGISTRY)
DEFAULT = "ident3d-eval-v1"


def result_file(protocol: str) -> str:
    """The name of a run folder's result under ``protocol``: ``result.json`` for the default protocol
    (what ``ident3d train`` writes), ``result-<protocol>.json`` for any other."""
    return "result.json" if protocol == DEFAULT else f"result-{protocol}.json"

# Computed with ident3d-eval-v1 on its fit and score halves, each in its own section of the result with
# its own version: what a number means there moves only with that version.
COMPANIONS = {p.name: p for p in (
    Protocol(
        name="ident3d-dci",
        version="1.0",
        summary="DCI (Eastwood and Williams, 2018): disentanglement, completeness and informativeness from "
                "the importance matrix of an elastic-net read-out (alpha 0.01, l1 ratio 0.5) of the "
                "standardised latents from the standardised features (ident3d.dci)",
        changelog=(("1.0", "first version"),)),
    Protocol(
        name="ident3d-extrapolation",
        version="1.0",
        summary="read-out extrapolation: linear and kernel read-outs fitted where a latent is at most 0.5 "
                "and scored above it, and on the corners of latent pairs; R² against the latent's "
                "variance over the score set (ident3d.extrapolation)",
        changelog=(("1.0", "first version"),)),
    Protocol(
        name="ident3d-ood",
        version="1.2",
        summary="rendered OOD splits of an OOD track (regions the training split never showed): the "
                "linear and kernel read-outs fitted on the in-distribution fit half and scored on each "
                "OOD split, R² against the latent's in-distribution variance; every split's features "
                "standardised with the in-distribution split's statistics (ident3d.ood)",
        changelog=(("1.0", "first version"),
                   ("1.1", "each OOD split's features are standardised with the in-distribution "
                           "features' mean and spread; 1.0 standardised each split on its own, which "
                           "re-centred every region and removed the shift that carries its held-out "
                           "latents (their R² read about 0 for every model). Every 1.0 OOD score moves."),
                   ("1.2", "a latent constant over the in-distribution score half scores 0 in every "
                           "split; 1.1 divided by its variance, rounding noise near 1e-33, and read "
                           "a value that changed with the CPU's BLAS kernels. No score of a latent "
                           "that varies moves."))),
)}


def get_protocol(name: str) -> ScoringProtocol:
    from ident3d.errors import SubmissionError

    if name not in REGISTRY:
        raise SubmissionError(f"unknown protocol {name!r}; expected one of {', '.join(NAMES)}. "
                              "Fix: pass one of them (`ident3d evaluate --help` describes each).")
    return REGISTRY[name]
