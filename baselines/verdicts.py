"""The project's one rule for a verdict: a 95% interval against the region a claim allows.

A claim allows a region of values: "reproduces the paper's 98.62" allows 98.62 ± a tolerance, "a is
level with b" allows a difference within ±5 points, "a reads more than b" allows a difference above
0. The claim is decided only when the interval of what was measured lies wholly inside that region
(it holds) or wholly outside it (it does not); an interval across its edge, or fewer than
``MIN_SEEDS`` seeds, decides nothing and says with how many seeds. Used by the synthetic tables
(``ident3d.baselines.synthetic.report``) and the relations of Table 4 (``ident3d.baselines.relations``).
"""

from __future__ import annotations

import math

import numpy as np
from scipy.stats import t as student_t

MIN_SEEDS = 3
HIGH = 95.0  # a paper value at or above this (percent) is met within 2 points, a lower one within 5


def t_interval(values: list[float] | np.ndarray) -> tuple[float, float, float]:
    """Mean and 95% Student t interval of ``values`` (seeds, or paired differences); with one value
    the interval is unknown (nan)."""
    a = np.asarray(values, dtype=np.float64)
    if len(a) < 2:
        return float(a.mean()), math.nan, math.nan
    half = float(student_t.ppf(0.975, len(a) - 1) * a.std(ddof=1) / math.sqrt(len(a)))
    return float(a.mean()), float(a.mean()) - half, float(a.mean()) + half


def decide(low: float, high: float, region: tuple[float, float]) -> bool | None:
    """True when [low, high] lies inside ``region``, False when wholly outside it, None otherwise."""
    lo, hi = region
    if lo <= low and high <= hi:
        return True
    if high < lo or low > hi:
        return False
    return None


def undecided(seeds: int) -> str:
    return f"not decidable with {seeds} seed{'s' * (seeds != 1)}"


def tolerance(target: float) -> float:
    """How near a paper value (percent) a reproduction must lie: 2 points near ceiling, else 5."""
    return 2.0 if target >= HIGH else 5.0


def reproduction(values: list[float], target: float) -> str:
    """Whether seeds ``values`` reproduce the paper's ``target`` (both percent), by the rule above."""
    if len(values) < MIN_SEEDS:
        return undecided(len(values))
    _, low, high = t_interval(values)
    tol = tolerance(target)
    found = decide(low, high, (target - tol, target + tol))
    if found is None:
        return undecided(len(values))
    return ("reproduced" if found else "not reproduced") + f" (paper {target:.2f} ± {tol:g})"
