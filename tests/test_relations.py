"""The relations of the paper's Table 4 (ident3d.baselines.relations): the rule, and the section of
docs/cpu-track.md, which must be what the committed entries give."""

from pathlib import Path

import pytest

from ident3d.baselines.experiment import load_experiment
from ident3d.baselines.relations import (
    EXACT,
    EXPERIMENT,
    PROTOCOL,
    RELATIONS,
    TRACK,
    Arm,
    arm_name,
    arms_paper,
    decide,
    interval,
    learning_rate_reading,
    original_lines,
    snapping_lines,
    summary_lines,
    verdict,
)
from ident3d.leaderboard.entries import ENTRIES_DIR, load_entries


def arm(name, mean, n=3):
    """Both metrics of one arm at ``mean`` with a seed sd of one point over ``n`` seeds."""
    return {"linear_r2": Arm(name, mean, 0.01, n), "mcc_pearson": Arm(name, mean, 0.01, n)}


def test_a_verdict_needs_three_seeds_and_an_interval_on_the_right_side():
    three = Arm("a", 0.80, 0.01, 3)
    assert interval(three, Arm("b", 0.70, 0.01, 2)) is None  # two seeds: no verdict
    assert verdict("above", interval(three, Arm("b", 0.70, 0.01, 2)), 2) == "not decidable with 2 seeds"
    diff, low, high = interval(three, Arm("b", 0.70, 0.01, 3))
    assert diff == pytest.approx(0.10) and 0 < low < 0.10 < high
    assert verdict("above", (diff, low, high), 3) == "holds"
    assert verdict("above", interval(Arm("a", 0.70, 0.01, 3), three), 3) == "does not hold"
    assert verdict("above", interval(Arm("a", 0.80, 0.20, 3), Arm("b", 0.70, 0.20, 3)), 3) == \
        "not decidable with 3 seeds"  # the interval straddles 0
    assert verdict("level", interval(three, Arm("b", 0.79, 0.01, 3)), 3) == "holds"
    assert verdict("level", interval(three, Arm("b", 0.60, 0.01, 3)), 3) == "does not hold"
    pixels = Arm("pixels", 0.50, 0.007, 20)  # no seed: its score on 20 samples of the protocol
    assert interval(three, pixels)[1] > 0 and interval(Arm("a", 0.8, None, 1), pixels) is None


def test_the_papers_own_numbers_satisfy_every_relation_it_states():
    paper = arms_paper(load_entries(ENTRIES_DIR))
    assert [decide(relation, paper) for relation in RELATIONS] == ["holds"] * len(RELATIONS)


def test_each_original_row_is_set_against_its_variant_with_an_interval():
    here = {"normal-box": arm("normal-box", 0.60), "normal-box-original": arm("normal-box-original", 0.40),
            "laplace-box": arm("laplace-box", 0.60),
            "laplace-box-original": arm("laplace-box-original", 0.60, n=2)}
    text = "\n".join(original_lines(here))
    assert "normal-box-original 40.00 (n=3) vs normal-box 60.00 (n=3): difference -20.00 [" in text
    assert "**does not hold**" in text  # 20 points apart: not level
    assert "laplace-box-original 60.00 (n=2) vs laplace-box 60.00 (n=3): difference +0.00; " \
           "**not decidable with 2 seeds**" in text
    assert text.count("not measured") == 4 + 4  # two rows x two metrics not run; no lr 1e-4 arm


def test_a_run_at_another_learning_rate_or_batch_is_an_arm_of_its_own():
    arms = {run.folder: arm_name(run) for run in load_experiment(EXPERIMENT).runs}
    assert arms["v2-normal-box-original-s0"] == "normal-box-original"
    assert arms["v2-normal-box-original-lr1e-4-s0"] == "normal-box-original at lr 0.0001"
    assert arms["v2-normal-box-s0"] == "normal-box" and arms["v2-supervised"] == "supervised"
    assert arms["v2-normal-box-batch512"] == "normal-box at batch 512"  # not a fourth seed of normal-box
    here = {"normal-box": arm("normal-box", 0.60), "normal-box-original": arm("normal-box-original", 0.48),
            "normal-box-original at lr 0.0001": arm("normal-box-original at lr 0.0001", 0.59)}
    text = "\n".join(original_lines(here))
    text = text[text.index("The learning rate as a confound"):]
    assert ("normal-box-original at lr 0.0001 59.00 (n=3) vs normal-box-original 48.00 (n=3): difference "
            "+11.00 [") in text
    assert ("normal-box-original at lr 0.0001 59.00 (n=3) vs normal-box 60.00 (n=3): difference "
            "-1.00 [") in text
    assert text.count("**does not hold**") == 1 and text.count("**holds**") == 1


def test_the_learning_rate_reading_gives_each_seeds_angle_and_flags_different_renders():
    experiment = load_experiment(EXPERIMENT)

    def entry(folder, angle, render):
        run = next(run for run in experiment.runs if run.folder == folder)
        latents = [{"factor": "object_x", "linear_r2": 0.9},
                   {"factor": "spotlight_angle", "linear_r2": angle}]
        return {"id": experiment.entry_id(run), "dataset": TRACK, "protocol": PROTOCOL,
                "result": {"per_latent": latents, "dataset": {"manifest_sha256": render * 64}}}

    same = [entry(f"v2-normal-box-original-lr1e-4-s{seed}", angle, "a")
            for seed, angle in enumerate((0.0, 0.004, 0.6))]
    same.append(entry("v2-normal-box-s0", 0.87, "a"))
    (line,) = learning_rate_reading(same)
    assert "normal-box 87.00; normal-box-original at lr 0.0001 0.00, 0.40, 60.00." in line
    assert line.endswith(f"normal-box-original at lr 0.0001 `{'a' * 12}`.")  # one render: no caveat
    (line,) = learning_rate_reading([*same, entry("v2-normal-box-original-s0", 0.0, "b")])
    assert "normal-box-original 0.00;" in line and "different renders" in line
    assert learning_rate_reading([entry("v2-laplace-box-s1", 0.5, "a")]) == []  # no arm of the table


def test_snapping_sets_each_presets_exact_runs_against_its_snapped_ones():
    snapped = {"normal-box": arm("normal-box", 0.60), "laplace-box": arm("laplace-box", 0.55),
               "normal-unbounded": arm("normal-unbounded", 0.70)}
    exact = {"normal-box": arm("normal-box", 0.45), "laplace-box": arm("laplace-box", 0.50, n=1)}
    table = [line for line in snapping_lines(snapped, exact) if line.startswith("| ") and "---" not in line]
    rows = table[1:]
    assert len(rows) == 4  # normal-box and laplace-box, two metrics each; no exact normal-unbounded
    assert rows[0].startswith("| normal-box | R² | -15.00 [") and rows[0].endswith("; lower |")
    assert rows[2] == "| laplace-box | R² | -5.00; not decidable with 1 seed |"  # one exact seed


def test_the_summary_names_the_arms_of_each_difference_and_both_verdicts():
    here = {"supervised": arm("supervised", 0.95), "normal-box": arm("normal-box", 0.60),
            "normal-unbounded": arm("normal-unbounded", 0.70, n=2)}
    rows = summary_lines(here, here)
    close = next(row for row in rows if row.startswith("| Contrastive learning comes close"))
    # the best contrastive arm by R² is normal-unbounded, with two seeds: no interval, no verdict
    assert "| supervised - normal-unbounded: +25.00 | not decidable with 2 seeds |" in close
    sphere = next(row for row in rows if row.startswith("| Sphere reads less than Box"))
    assert sphere.endswith("| not measured | not measured | not measured |")
    exact = summary_lines({"laplace-box": arm("laplace-box", 0.58), "normal-box": arm("normal-box", 0.60)},
                          here, EXACT)
    assert len(exact) == 3
    assert "on exactly rendered pairs | R² | laplace-box - normal-box: -2.00 [" in exact[2]
    assert exact[2].endswith("| holds | not measured |")  # the paper's arms: no laplace-box in `here`


def test_the_adjusted_interval_is_the_bonferroni_one_and_the_count_reports_it():
    from scipy.stats import t as student_t

    from ident3d.baselines.relations import RELATIONS, Arm, interval

    a, b = Arm("a", 0.6, 0.02, 3), Arm("b", 0.5, 0.03, 3)
    diff, low, high = interval(a, b)
    _, low11, high11 = interval(a, b, 11)
    assert low11 < low < diff < high < high11
    ratio = (high11 - diff) / (high - diff)
    se = ((0.02 ** 2 + 0.03 ** 2) / 3) ** 0.5
    dof = (se ** 2) ** 2 / ((0.02 ** 2 / 3) ** 2 / 2 + (0.03 ** 2 / 3) ** 2 / 2)
    assert ratio == pytest.approx(student_t.ppf(1 - 0.025 / 11, dof) / student_t.ppf(0.975, dof))
    page = (Path(__file__).resolve().parents[1] / "docs/cpu-track.md").read_text()
    assert f"Bonferroni over {len(RELATIONS)} [" in page and "On the Bonferroni-adjusted intervals" in page


def test_every_arm_says_which_test_render_it_was_scored_on():
    from ident3d.baselines.relations import renders_lines, track_runs

    entries = load_entries(ENTRIES_DIR)
    [line] = renders_lines(entries)
    for arm, entry in track_runs(entries):
        assert f"{arm}: " in line and entry["result"]["dataset"]["manifest_sha256"][:12] in line


def test_every_relation_table_says_whose_words_the_relations_are():
    from ident3d.baselines import relations, relations_summary

    entries = [dict(e) for e in load_entries(ENTRIES_DIR)]
    for text in (relations.section(entries), relations_summary.section(entries)):
        assert relations.WHOSE_WORDS in text  # the project's reading, its band, no quote of the paper
        assert "the paper's claim" not in text and "as the paper states" not in text
        heads = [line for line in text.splitlines() if line.startswith("| relation")]
        assert heads and all(line.startswith(f"| {relations.RELATION_HEAD} |") for line in heads)
