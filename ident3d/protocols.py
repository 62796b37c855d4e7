"""Evaluation protocols as versioned objects: what each computes and every change that moved a number.

A protocol's ``name`` is what results, entries and ``--protocol`` say; its ``version`` goes up, with a
changelog line, whenever a change can move any metric value on any input (tests/test_golden_metrics.py
pins the values of fixed inputs per version and fails when one moves without a bump).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Protocol:
    name: str
    version: str
    summary: str
    changelog: tuple[tuple[str, str], ...]  # (version, what changed), oldest first

    def __post_init__(self) -> None:
        if not self.changelog or self.changelog[-1][0] != self.version:
            raise ValueError(f"protocol {self.name}: the changelog must end at version {self.version}")


CONSTANT_LATENT = ("1.1", "a latent that is constant on the scored set (every value equal) has R² 1 "
                   "only when it is predicted exactly, else 0 (scikit-learn's r2_score, which the "
                   "original code used); before, any prediction of it scored 1. No track has a "
                   "constant latent, so no leaderboard entry moves.")

REGISTRY = {p.name: p for p in (
    Protocol(
        name="ident3d-eval-v1",
        version="1.1",
        summary="the whole test split in index order, halved at random (seed 0) into fit and score sets; "
                "linear R² (affine least squares), kernel R² (RBF kernel ridge, a 4 x 4 grid, 3-fold CV "
                "on at most 4,000 fit points, chosen per latent) and MCC (Pearson and Spearman, Hungarian "
                "matching on the fit set, scored on the score set); per-latent values clipped to [0, 1] "
                "before the mean",
        changelog=(("1.0", "first version"), CONSTANT_LATENT)),
    Protocol(
        name="cl-ica-2021",
        version="1.1",
        summary="the procedure of Zimmermann et al. (ICML 2021): 4,096 test images drawn with a fixed "
                "seed, halved into fit and score sets for linear R²; MCC (Pearson) on all 4,096 with its "
                "own matching; the raw per-latent R² averaged, then the mean clipped to [0, 1]",
        changelog=(("1.0", "first version"), CONSTANT_LATENT)),
)}
NAMES = tuple(REGISTRY)

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


def get_protocol(name: str) -> Protocol:
    from ident3d.errors import SubmissionError

    if name not in REGISTRY:
        raise SubmissionError(f"unknown protocol {name!r}; expected one of {', '.join(NAMES)}. "
                              "Fix: pass one of them (`ident3d evaluate --help` describes each).")
    return REGISTRY[name]
