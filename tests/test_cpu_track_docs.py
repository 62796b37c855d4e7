"""The tables of docs/cpu-track.md computed from the committed entries (ident3d.baselines.entries_report)."""

import statistics

from ident3d.baselines.entries_report import grouped, renders_lines, section
from ident3d.leaderboard.entries import ENTRIES_DIR, load_entries


def test_a_seed_group_is_its_seeds_mean_and_sample_sd():
    entries = load_entries(ENTRIES_DIR)
    runs = grouped(entries)["v2-normal-box"]
    assert [run.folder for run, _ in runs] == ["v2-normal-box-s0", "v2-normal-box-s1", "v2-normal-box-s2"]
    r2 = [found["cl-ica-2021"]["metrics"]["linear_r2"] for _, found in runs]
    row = next(line for line in section(entries).splitlines() if line.startswith("| v2-normal-box | "))
    assert f"| {100 * statistics.fmean(r2):.2f} ± {100 * statistics.stdev(r2):.2f} |" in row
    assert row.endswith("| 1,200 × 128 |") and "| v2 | 3 |" in row


def test_the_render_each_entry_was_scored_on_is_listed_with_its_group():
    entries = load_entries(ENTRIES_DIR)
    groups = grouped(entries)
    (run, found), *_ = groups["v2-normal-box"]
    sha = found["ident3d-eval-v1"]["result"]["dataset"]["manifest_sha256"]
    lines = renders_lines(groups)
    line = next(line for line in lines if f"render `{sha[:12]}`" in line)
    assert line.startswith("- `3dident-v2-64@1` ") and "v2-normal-box (" in line

    moved = {**found["cl-ica-2021"], "result": {**found["cl-ica-2021"]["result"],
                                                 "dataset": {"manifest_sha256": "f" * 64}}}
    lines = renders_lines({"v2-normal-box": [(run, {"cl-ica-2021": moved})]})
    assert lines[-1] == f"- `3dident-v2-64@1` render `{'f' * 12}`: v2-normal-box (1 entry)"
