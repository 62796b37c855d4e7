"""LEADERBOARD.md shows the companion protocols' columns (DCI, read-out extrapolation) in a table where
a row's result has them, a seed group's as its runs' mean, and no such columns elsewhere."""

import copy

from ident3d.baselines import blocks_report, ood_report
from ident3d.leaderboard.markdown import render_markdown
from ident3d.leaderboard.ranking import fresh_draw, shown_result, signer


def with_companions(entry, d, extrapolation):
    entry = copy.deepcopy(entry)
    entry["result"]["dci"] = {"protocol": "ident3d-dci", "version": "1.0", "disentanglement": d,
                              "completeness": 0.5, "informativeness": 0.9}
    entry["result"]["extrapolation"] = {"protocol": "ident3d-extrapolation", "version": "1.0",
                                        "linear_r2": extrapolation, "kernel_r2": 0.1, "per_latent": []}
    return entry


def without_companions(entries):
    """The committed entries as they were before any was re-scored with the companion protocols."""
    out = []
    for entry in entries:
        entry = copy.deepcopy(entry)
        for section in (entry["result"] or {}, (entry["result"] or {}).get("fresh") or {}):
            for key in ("dci", "extrapolation", "ood"):
                section.pop(key, None)  # a verified row shows its fresh draw's
        out.append(entry)
    return out


def test_the_re_scored_pixel_entry_carries_its_companions(committed_entries):
    pixels = next(e for e in committed_entries if e.key == "ident3d-eval-v1/Ident2026CpuTrack_v2-pixels")
    assert pixels["result"]["dci"]["protocol"] == "ident3d-dci"
    assert pixels["result"]["extrapolation"]["protocol"] == "ident3d-extrapolation"


def test_companion_columns_appear_where_a_row_has_them(committed_entries):
    entries = without_companions(committed_entries)
    before = render_markdown(entries)
    assert "D (%)" not in before
    runs = [e for e in entries
            if e.get("seed_group") == "v2-normal-box" and e["protocol"] == "ident3d-eval-v1"]
    assert len(runs) == 3
    changed = {e.key: with_companions(e, 0.2 + 0.1 * i, 0.6) for i, e in enumerate(runs)}
    after = render_markdown([changed.get(e.key, e) for e in entries])
    table = after.split("· ident3d-eval-v1")[1].split("\n## ")[0]
    assert "| D (%) | C (%) | I (%) | extrapolation R² (%) |" in table
    group = next(line for line in table.splitlines() if f"`{runs[0]['id']}`" in line)  # normal-box's row
    assert "| 30.00 | 50.00 | 90.00 | 60.00 |" in group  # the mean of D = 0.2, 0.3, 0.4
    others = [line for line in table.splitlines() if "v2-supervised`" in line]
    assert others and all("| – | – | – | – |" in line for line in others)
    assert after.split("· ident3d-eval-v1")[0] == before.split("· ident3d-eval-v1")[0]


def test_an_ood_column_appears_only_for_the_splits_a_row_was_scored_on(committed_entries):
    entries = without_companions(committed_entries)
    # every seed of the supervised group (its row shows the seeds' mean), however many are committed
    targets = {e["id"] for e in entries
               if e.get("seed_group") == "v2-supervised" and e["protocol"] == "ident3d-eval-v1"}
    assert targets
    split = {"split": "test-extrapolation", "n": 2000, "linear_r2": 0.42, "kernel_r2": 0.3, "per_latent": []}
    ood = {"protocol": "ident3d-ood", "version": "1.0", "splits": [split],
           "in_distribution": {"linear_r2": 0.9, "kernel_r2": 0.9, "per_latent": []}}

    def scored_ood(entry):
        changed = copy.deepcopy(entry)
        changed["result"]["ood"] = copy.deepcopy(ood)
        return changed

    after = render_markdown([scored_ood(e) if e["id"] in targets else e for e in entries])
    table = after.split("· ident3d-eval-v1")[1].split("\n## ")[0]
    assert "| OOD extrapolation R² (%) | status |" in table and "OOD interpolation" not in table
    assert "| 42.00 |" in next(line for line in table.splitlines() if "v2-supervised`" in line)
    assert "D (%)" not in table  # no row has DCI here: no such column


def test_the_content_style_tables_show_the_block_r2_of_each_entry(committed_entries):
    from ident3d.leaderboard.markdown import percent

    entries = committed_entries
    markdown = render_markdown(entries)
    for protocol, fits in (("ident3d-eval-v1", ("linear", "kernel")), ("cl-ica-2021", ("linear",))):
        table = markdown.split(f"(`3dident-v2-64-cs@1`) · {protocol}")[1].split("\n## ")[0]
        labels = [f"{block} R² ({fit}) (%)" for block in ("content", "style") for fit in fits]
        assert "| " + " | ".join(labels) + " | status |" in table
        shown = [e for e in entries if e["dataset"] == "3dident-v2-64-cs@1" and e["protocol"] == protocol
                 and not e.get("archived")]  # an archived row is listed apart, not in the table
        assert shown
        assert any(signer(e) for e in shown)  # a verified row among them: it shows its fresh draw's
        for entry in shown:
            blocks = shown_result(entry)["blocks"]
            cells = [percent(blocks[f"{block}_{fit}_r2"]) for block in ("content", "style") for fit in fits]
            line = next(line for line in table.splitlines() if f"`{entry['id']}`" in line)
            assert "| " + " | ".join(cells) + " |" in line
    elsewhere = markdown.split("(`3dident-v2-64@1`) · ident3d-eval-v1")[1].split("\n## ")[0]
    assert "content R²" not in elsewhere  # no block columns where no row was scored on content/style pairs


def test_the_docs_tables_show_a_verified_entrys_fresh_draw_not_its_public_split(committed_entries):
    verified = [e for e in committed_entries if signer(e) and e["protocol"] == "ident3d-eval-v1"
                and ("ood" in e["result"] or "blocks" in e["result"])]
    assert {e["dataset"] for e in verified} >= {"3dident-v2-64-ood@1", "3dident-v2-64-cs@1"}
    ood_text, blocks_text = ood_report.section(verified), blocks_report.section(verified)
    for entry in verified:
        fresh, public = fresh_draw(entry), entry["result"]
        if "ood" in public:
            within = fresh["ood"]["in_distribution"]
            shown = f"| in distribution (fresh draw) | {100 * within['linear_r2']:.1f} /"
            assert shown in ood_text and public["ood"] != fresh["ood"]
            assert f"{100 * public['ood']['in_distribution']['linear_r2']:.1f} /" not in ood_text
        if "blocks" in public:
            assert f"| {100 * fresh['blocks']['content_linear_r2']:.1f} / " in blocks_text
            assert f"| {100 * public['blocks']['content_linear_r2']:.1f} / " not in blocks_text
