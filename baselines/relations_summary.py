"""The summary at the top of docs/cpu-track.md: the relations of the paper's Table 4 on the CPU track
and AnInfoNCE against its controls, computed from leaderboard entries (the full tables, with every
metric per relation, follow on the same page).

    python -m ident3d.baselines.relations_summary            # print the block
    python -m ident3d.baselines.relations_summary --write    # write it into docs/cpu-track.md
"""

from __future__ import annotations

from ident3d.baselines.anisotropy import arm_seeds, differences_lines
from ident3d.baselines.relations import (
    EXACT,
    EXACT_DATA,
    LEVEL,
    MIN_SEEDS,
    PROTOCOL,
    RELATIONS,
    TRACK,
    WHOSE_WORDS,
    arms_here,
    arms_paper,
    decide,
    snapping_lines,
    summary_lines,
)


def section(entries: list[dict]) -> str:
    here, paper = arms_here(entries), arms_paper(entries)
    verdicts = [decide(r, here) for r in RELATIONS]
    return "\n".join([
        f"Each relation of Table 4 as this project reads it, on the CPU track's verified entries ({TRACK}, "
        f"protocol {PROTOCOL}): the difference of the seed means in points with its 95% Welch t interval; "
        f"a verdict needs {MIN_SEEDS} seeds per arm (\"level\": the interval within ±{100 * LEVEL:.0f} "
        "points). The paper's own numbers are judged by the same rule. " + WHOSE_WORDS, "",
        *summary_lines(here, paper), "",
        f"Of {len(RELATIONS)} relations: holds {verdicts.count('holds')}, does not hold "
        f"{verdicts.count('does not hold')}, not decidable "
        f"{sum(v.startswith('not decidable') for v in verdicts)} (a descriptive table: no correction for "
        "multiplicity; the caveats under the full table below say what else).", "",
        "The Laplace relation again on exactly rendered pairs (snapped to the track's training latents the "
        "two conditionals are nearly alike in spread and tails; docs/cpu-track.md measures both), by the "
        "same rule:", "",
        *summary_lines(arms_here(entries, EXACT_DATA), paper, EXACT), "",
        *snapping_lines(here, arms_here(entries, EXACT_DATA)), "",
        "AnInfoNCE (Rusak et al., AISTATS 2025) against its controls on the same exactly rendered pairs "
        "with one distinct positive scale per latent (ident3d-eval-v1; the arms, per-latent results and "
        "the learned Lambda are below): AnInfoNCE minus each other arm in points, with its "
        f"95% Welch t interval and a direction only with {MIN_SEEDS} seeds per arm:", "",
        *differences_lines(arm_seeds(entries))])

