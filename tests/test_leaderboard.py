"""Leaderboard: schema-checked entries, deterministic outputs, stale detection, the page in Chromium."""

import collections
import copy
import functools
import http.server
import json
import re
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest
import yaml

from ident3d.errors import ResultError
from ident3d.leaderboard.build import build, stale
from ident3d.leaderboard.entries import (
    ENTRIES_DIR,
    Entry,
    entry_from_result,
    load_entries,
    validate_entry,
    write_entry,
)
from ident3d.leaderboard.hub_export import export
from ident3d.leaderboard.markdown import render_markdown
from ident3d.leaderboard.ranking import (
    PIXELS_LOSS,
    SUPERVISED_POSITIVES,
    rank_labels,
    ranked_tables,
    reference,
    table_of,
)
from ident3d.results import Result
from ident3d.variants import get_variant

PAPER = ENTRIES_DIR / "cl-ica-2021" / "Zimmermann2021Contrastive_normal-box.json"


def paper_entry():
    return json.loads(PAPER.read_text())


def first_table(entries) -> tuple[tuple[str, str], int]:
    """The table the board opens on, counted here independently of ranking.py: the track with the most
    ranked entries (ties: the first by name) under the default protocol, and its size."""
    ranked = [(e["dataset"], e["protocol"]) for e in entries if not e.get("archived")]
    tracks = collections.Counter(track for track, _ in ranked)
    track = min(tracks, key=lambda t: (-tracks[t], t))
    return (track, "ident3d-eval-v1"), ranked.count((track, "ident3d-eval-v1"))


def result_of(*args, **kwargs) -> Result:
    """``fake_result`` as the validated ``Result`` that ``entry_from_result`` takes."""
    return Result.parse(fake_result(*args, **kwargs))


def fake_result(r2=0.8, mcc=0.7, protocol="ident3d-eval-v1", sha="ab" * 32, track="3dident-published@1"):
    per = [{"factor": f, "linear_r2": r2, "nonlinear_r2": r2, "mcc_pearson": mcc, "mcc_spearman": mcc}
           for f in get_variant("v2").names]
    from ident3d.tracks import tracks

    known = tracks().get(track.partition("@")[0])  # a result agrees with the track it names
    n, size = (known.splits["test"].n, known.resolution) if known else (100, 64)
    return {"schema": "ident3d-result/1", "protocol": protocol,
            "dataset": {"name": "3dident", "split": "test", "variant": "v2", "n": n,
                        "manifest_sha256": "cd" * 32, "resolution": [size, size], "track": track},
            "model": {"name": "m", "file": "m.pt2", "sha256": sha, "kind": "exported-program",
                      "arch": None, "self_reported": False, "feature_dim": 10},
            "metrics": {"linear_r2": r2, "nonlinear_r2": r2, "mcc_pearson": mcc, "mcc_spearman": mcc},
            "per_latent": per, "seeds": {}, "n_fit": 50, "n_score": 50, "versions": {},
            "device": "cpu", "wall_time_s": 1.0}


@pytest.mark.parametrize("change, field", [
    (lambda e: e.pop("status"), "status"),
    (lambda e: e["metrics"].__setitem__("linear_r2", 1.2), "metrics/linear_r2"),
    (lambda e: e["metrics"].__setitem__("mcc_pearson", "98.31"), "metrics/mcc_pearson"),
    (lambda e: e.__setitem__("id", "normal box"), "id"),
    (lambda e: e.__setitem__("status", "trust-me"), "status"),
    (lambda e: e.__setitem__("paper", "arxiv.org/abs/1"), "paper"),
])
def test_malformed_entries_are_rejected_with_the_field_named(change, field):
    entry = paper_entry()
    change(entry)
    with pytest.raises(ResultError) as error:
        validate_entry(entry, "x.json")
    message = str(error.value)
    assert message.startswith("x.json") and (f"field {field}" in message or f"'{field}'" in message), message


def test_verified_needs_a_checkpoint_hash_a_result_and_an_unseen_fresh_draw():
    entry = paper_entry()
    entry["status"] = "verified"
    with pytest.raises(ResultError, match="field (checkpoint_sha256|result)"):
        validate_entry(entry, "x.json")
    with pytest.raises(ResultError, match="field result.*fresh"):
        entry_from_result(result_of(), "Doe2026Contrastive", status="verified")
    public = entry_from_result(result_of(), "Doe2026Contrastive", status="public-split").document
    assert public["checkpoint_sha256"] == "ab" * 32
    public["checkpoint_sha256"] = "ef" * 32
    with pytest.raises(ResultError, match="field checkpoint_sha256: .* the scored model"):
        validate_entry(public, "v.json")
    drawn = fake_result()
    drawn["fresh"] = {"seed": 7, "seed_source": "given", "n": 100, "track": "3dident-published@1",
                      "render_settings": {}, "metrics": drawn["metrics"], "per_latent": drawn["per_latent"],
                      "gap": {"linear_r2": {"public": 0.8, "fresh": 0.8, "fresh_ci95": [0.7, 0.9], "gap": 0.0,
                                            "ci95": [-0.1, 0.1], "above_chance": False}},
                      "memorised": False}
    with pytest.raises(ResultError, match="rendered from a given seed"):  # a revealed draw is not unseen
        entry_from_result(Result.parse(drawn), "Doe2026Contrastive", status="verified")
    drawn["fresh"]["seed_source"] = "entropy"
    verified = entry_from_result(Result.parse(drawn), "Doe2026Contrastive", status="verified")
    assert verified["status"] == "verified"


def test_every_committed_verified_entry_is_signed_by_a_keyring_key(committed_entries):
    """A committed verified row carries a record that a key of leaderboard/verifiers signed over the
    result it shows; every re-scored entry names the model file it was scored from."""
    from ident3d.leaderboard.ranking import claim_problem, signer

    rescored = [e for e in committed_entries if e["status"] in ("verified", "public-split")]
    assert rescored and all(e["checkpoint_sha256"] == e["result"]["model"]["sha256"] for e in rescored)
    verified = [e for e in committed_entries if e["status"] == "verified"]
    assert verified and all(signer(e) for e in verified), [claim_problem(e) for e in verified]


def test_entries_from_results_are_validated_and_duplicates_refused(tmp_path):
    entry = entry_from_result(result_of(), "Doe2026Contrastive_box", authors=["J. Doe"])
    assert entry["dataset"] == "3dident-published@1" and entry["checkpoint_sha256"] is None
    path = write_entry(entry, tmp_path)
    with pytest.raises(ResultError, match="field id: 'Doe2026Contrastive_box' already exists"):
        write_entry(entry, tmp_path)
    assert json.loads(path.read_text()) == entry.document
    tampered = copy.deepcopy(entry.document)
    tampered["metrics"]["linear_r2"] = 0.99
    with pytest.raises(ResultError, match="metrics/linear_r2: 0.99 differs from the result's 0.8"):
        validate_entry(tampered, "t.json")
    bad = fake_result()
    bad["per_latent"][3]["mcc_pearson"] = -0.5
    with pytest.raises(ResultError, match="per_latent/3/mcc_pearson"):
        entry_from_result(Result.parse(bad), "Doe2026Contrastive_bad")
    folder = tmp_path / entry["protocol"]
    folder.mkdir(exist_ok=True)
    (folder / "Other2026Name.json").write_text(json.dumps(entry.document))
    with pytest.raises(ResultError, match="must equal the file name"):
        load_entries(tmp_path)
    (folder / "Other2026Name.json").rename(tmp_path / "Other2026Name.json")  # no protocol folder
    with pytest.raises(ResultError, match="one folder per scoring protocol"):
        load_entries(tmp_path)
    other = tmp_path / "cl-ica-2021"
    other.mkdir()
    (tmp_path / "Other2026Name.json").rename(other / f"{entry['id']}.json")  # another protocol's folder
    with pytest.raises(ResultError, match="field protocol: 'ident3d-eval-v1' must equal the folder name"):
        load_entries(tmp_path)


@pytest.mark.slow
def test_tables_rank_by_mcc_then_r2_then_id_and_never_mix_protocols(tmp_path):
    shutil.copytree(ENTRIES_DIR, tmp_path, dirs_exist_ok=True)
    for entry_id, r2, mcc in (("Zed2026Tie", 0.5, 0.9), ("Abe2026Tie", 0.5, 0.9), ("Top2026Best", 0.1, 0.95)):
        write_entry(entry_from_result(result_of(r2, mcc), entry_id), tmp_path)
    entries = load_entries(tmp_path)
    text = render_markdown(entries)
    sections = text.split("\n## ")[1:]
    (track, protocol), _ = first_table(entries)
    # the most populated track comes first, under the package's default protocol, not the fuller
    # cl-ica-2021 table beside it
    assert f"(`{track}`) · {protocol}" in sections[0].splitlines()[0]
    assert protocol == "ident3d-eval-v1" and f"(`{track}`) · cl-ica-2021" in sections[1].splitlines()[0]
    [published] = [s for s in sections if s.startswith("3DIdent (published) (`3dident-published@1`) · cl")]
    [ours] = [section for section in sections if "Abe2026Tie" in section]
    assert "Abe2026Tie" not in published and "Zimmermann" not in ours
    ids = [line.split("`")[1] for line in ours.splitlines() if line.startswith("| ") and "`" in line]
    assert ids == ["Top2026Best", "Abe2026Tie", "Zed2026Tie"]
    rows = [line for line in published.splitlines() if "`Zimmermann" in line]
    assert "supervised" in rows[0] and "identity" in rows[-1]  # missing MCC ranks last
    assert "| 96.73 ± 0.10 | 98.31 ± 0.04 |" in published


def test_the_topline_and_the_floor_are_marked_beside_their_names(tmp_path):
    for entry_id, fields in (("Top2026Supervised", {"positives": SUPERVISED_POSITIVES}),
                             ("Low2026Pixels", {"positives": "none", "loss": PIXELS_LOSS}),
                             ("Doe2026Contrastive", {"loss": "trained on the latents, supervised"})):
        write_entry(entry_from_result(result_of(0.8, 0.7), entry_id, **fields), tmp_path)
    text = render_markdown(load_entries(tmp_path))
    rows = {line.split("`")[1]: line for line in text.splitlines() if line.startswith("| ") and "`" in line}
    assert "**topline**" in rows["Top2026Supervised"] and "**floor**" in rows["Low2026Pixels"]
    assert "**topline**" not in rows["Doe2026Contrastive"] and "**floor**" not in rows["Doe2026Contrastive"]
    assert "**topline** = trained on the latents" in text  # the mark's legend


def test_seed_groups_rank_as_one_row_with_mean_and_sample_sd(tmp_path):
    import statistics

    from ident3d.leaderboard.compare import report

    for entry_id, r2, mcc in (("Doe2026Seeds_s0", 0.5, 0.60), ("Doe2026Seeds_s1", 0.7, 0.80),
                              ("Doe2026Seeds_s2", 0.6, 0.70), ("Roe2026Single", 0.9, 0.65)):
        write_entry(entry_from_result(result_of(r2, mcc), entry_id, seed_group="doe-seeds"
                                      if "Seeds" in entry_id else None), tmp_path)
    entries = load_entries(tmp_path)
    [table] = ranked_tables(entries).values()
    assert [row["id"] for row in table] == ["group:doe-seeds", "Roe2026Single"]  # 0.70 mean MCC > 0.65
    group = table[0]
    assert group["metrics"]["mcc_pearson"] == pytest.approx(0.7)
    assert group["metrics_std"]["linear_r2"] == pytest.approx(statistics.stdev([0.5, 0.7, 0.6]))
    assert [run["id"] for run in group["runs"]] == ["Doe2026Seeds_s1", "Doe2026Seeds_s2", "Doe2026Seeds_s0"]
    lines = [line for line in render_markdown(entries).splitlines() if "Doe2026Seeds" in line]
    assert lines[0].startswith("| (1) | `Doe2026Seeds_s1`, `Doe2026Seeds_s2`, `Doe2026Seeds_s0` |")
    assert "| 60.00 ± 10.00 | 70.00 ± 10.00 |" in lines[0]
    assert [line.split(" |")[0] for line in lines[1:]] == ["| ↳"] * 3  # the runs, unranked
    newcomer = entry_from_result(result_of(0.9, 0.66), "New2026One")
    assert "would rank (2) of 3" in report(entries, newcomer, "r")

    # a group must be one method
    odd = json.loads((tmp_path / "ident3d-eval-v1" / "Roe2026Single.json").read_text())
    odd.update(id="Roe2026Single_s1", seed_group="doe-seeds", loss="MSE")
    write_entry(Entry.parse(odd, "odd"), tmp_path)
    with pytest.raises(ResultError, match="seed_group 'doe-seeds' joins entries that differ in loss"):
        ranked_tables(load_entries(tmp_path))


@pytest.mark.slow
def test_build_is_deterministic_and_stale_outputs_are_detected(tmp_path):
    entries = tmp_path / "entries"
    shutil.copytree(ENTRIES_DIR, entries)
    md, site = tmp_path / "LEADERBOARD.md", tmp_path / "site/index.html"
    build(entries, md, site)
    first = md.read_bytes(), site.read_bytes()
    build(entries, md, site)
    assert (md.read_bytes(), site.read_bytes()) == first
    assert stale(entries, md, site) == []
    write_entry(entry_from_result(result_of(), "Doe2026Contrastive"), entries)
    assert stale(entries, md, site) == [md, site]
    check = subprocess.run([sys.executable, "-m", "ident3d.cli", "leaderboard", "build", "--check",
                            "--entries", str(entries), "--markdown", str(md), "--site", str(site)],
                           capture_output=True, text=True)
    assert check.returncode == 1 and "stale" in check.stdout


@pytest.mark.slow
def test_add_with_a_checkpoint_rescores_it_and_refuses_numbers_it_cannot_reproduce(tmp_path):
    """`add --checkpoint` and `rescore` run the same check: every number shown, and the file's sha256."""
    import torch
    from conftest import write_fake_split

    from ident3d.evaluation import evaluate

    class Rows(torch.nn.Module):  # 48 features: few enough for the DCI fit to converge at once
        def forward(self, x):
            return x.mean(2).flatten(1)

    write_fake_split(tmp_path, "test", n=40, size=16)
    program = torch.export.export(Rows().eval(), (torch.rand(2, 3, 16, 16),),
                                  dynamic_shapes=({0: torch.export.Dim("batch")},))
    torch.export.save(program, str(tmp_path / "flat.pt2"))
    result = evaluate(tmp_path / "flat.pt2", tmp_path, progress=False).document
    (tmp_path / "good.json").write_text(json.dumps(result))
    result["per_latent"][3]["mcc_pearson"] = min(1.0, result["per_latent"][3]["mcc_pearson"] + 0.01)
    (tmp_path / "one-latent.json").write_text(json.dumps(result))
    result["metrics"]["linear_r2"] = min(1.0, result["metrics"]["linear_r2"] + 0.1)
    (tmp_path / "inflated.json").write_text(json.dumps(result))
    entries = tmp_path / "entries"
    entries.mkdir()

    def add(name, entry_id, *flags):
        return subprocess.run([sys.executable, "-m", "ident3d.cli", "-q", "leaderboard", "add",
                               str(tmp_path / name), "--id", entry_id, "--checkpoint",
                               str(tmp_path / "flat.pt2"), "--data", str(tmp_path),
                               "--entries", str(entries), *flags],
                              capture_output=True, text=True)

    added = add("good.json", "Doe2026Flat")
    assert added.returncode == 0 and "no fresh draw" in added.stdout, added.stderr  # custom data
    flat = entries / result["protocol"] / "Doe2026Flat.json"
    entry = json.loads(flat.read_text())
    assert entry["status"] == "public-split" and entry["checkpoint_sha256"] == result["model"]["sha256"]
    again = add("good.json", "Doe2026FlatAgain")  # one model file, one entry per table
    assert again.returncode == 1 and "already entry Doe2026Flat" in again.stderr
    assert "--replace" in again.stderr
    assert sorted(p.name for p in flat.parent.iterdir()) == ["Doe2026Flat.json"]
    refused = add("inflated.json", "Doe2026Inflated", "--replace", "Doe2026Flat")
    assert refused.returncode == 1 and "metrics/linear_r2" in refused.stderr
    assert sorted(p.name for p in flat.parent.iterdir()) == ["Doe2026Flat.json"]  # the old entry stays
    factor = result["per_latent"][3]["factor"]
    refused = add("one-latent.json", "Doe2026OneLatent", "--replace", "Doe2026Flat")
    assert refused.returncode == 1 and f"per_latent/{factor}/mcc_pearson" in refused.stderr

    class Halve(torch.nn.Module):
        def forward(self, x):
            return 0.5 * x.mean(2).flatten(1)

    class Square(torch.nn.Module):
        def forward(self, x):
            return (x * x).mean(2).flatten(1)

    def rescore(model, *flags):
        return subprocess.run([sys.executable, "-m", "ident3d.cli", "-q", "leaderboard", "rescore",
                               "Doe2026Flat", "--checkpoint", str(tmp_path / model), "--data", str(tmp_path),
                               "--entries", str(entries), *flags], capture_output=True, text=True)

    elsewhere = tmp_path.with_name(tmp_path.name + "-out")  # not inside the data root (tmp_path)
    elsewhere.mkdir()
    updated = elsewhere / "updated.json"
    again = rescore("flat.pt2", "--out", str(updated))  # the entry's own file: every number and sha256 match
    assert again.returncode == 0 and "same sha256" in again.stdout, again.stderr
    fresh = json.loads(updated.read_text())  # the entry around the fresh result: companions included
    assert fresh["metrics"] == entry["metrics"] and fresh["result"]["dci"]["protocol"] == "ident3d-dci"
    before = updated.read_bytes()
    refused = rescore("flat.pt2", "--out", str(updated))
    assert refused.returncode == 1 and "never overwrites" in refused.stderr and updated.read_bytes() == before
    halved = torch.export.export(Halve().eval(), (torch.rand(2, 3, 16, 16),),
                                 dynamic_shapes=({0: torch.export.Dim("batch")},))
    torch.export.save(halved, str(tmp_path / "halved.pt2"))  # other bytes, same features up to scale
    assert "different sha256" in rescore("halved.pt2").stdout
    squared = torch.export.export(Square().eval(), (torch.rand(2, 3, 16, 16),),
                                  dynamic_shapes=({0: torch.export.Dim("batch")},))
    torch.export.save(squared, str(tmp_path / "squared.pt2"))
    refused = rescore("squared.pt2")
    lines = refused.stderr.strip().splitlines()
    assert refused.returncode == 1 and len(lines) == 1, refused.stderr
    assert lines[0].startswith("error: field ") and "entry Doe2026Flat says" in lines[0]


@pytest.mark.slow
def test_compare_prints_the_rank_without_writing(tmp_path):
    result = tmp_path / "result.json"
    result.write_text(json.dumps(fake_result(0.9, 0.99, protocol="cl-ica-2021")))
    before = sorted(p.name for p in ENTRIES_DIR.rglob("*"))
    out = subprocess.run([sys.executable, "-m", "ident3d.cli", "leaderboard", "compare", str(result),
                          "--track", "3dident-published"], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert ("would rank (2) of 8 in 3dident-published@1 · cl-ica-2021 (ranked by MCC, then linear R²;"
            in " ".join(out.stdout.split()))
    assert sorted(p.name for p in ENTRIES_DIR.rglob("*")) == before


@pytest.mark.slow
def test_add_and_build_write_only_into_the_clone_they_run_in(tmp_path):
    result = tmp_path / "result.json"
    result.write_text(json.dumps(fake_result(0.9, 0.9)))
    before = sorted(p.name for p in ENTRIES_DIR.rglob("*"))
    for argv in (["add", str(result), "--id", "Doe2026Elsewhere"], ["build"]):
        out = subprocess.run([sys.executable, "-m", "ident3d.cli", "leaderboard", *argv], cwd=tmp_path,
                             capture_output=True, text=True)
        assert out.returncode == 1 and "no leaderboard here" in out.stderr, out.stderr
    assert sorted(p.name for p in ENTRIES_DIR.rglob("*")) == before
    (tmp_path / "leaderboard/entries").mkdir(parents=True)  # a clone: writes land in it
    for argv in (["add", str(result), "--id", "Doe2026Elsewhere"], ["build"]):
        out = subprocess.run([sys.executable, "-m", "ident3d.cli", "leaderboard", *argv], cwd=tmp_path,
                             capture_output=True, text=True)
        assert out.returncode == 0, out.stderr
    assert (tmp_path / "leaderboard/entries/ident3d-eval-v1/Doe2026Elsewhere.json").exists()
    assert (tmp_path / "LEADERBOARD.md").exists() and (tmp_path / "leaderboard/site/index.html").exists()


@pytest.fixture
def served_site(tmp_path):
    """The built page of the committed entries plus one of another protocol, on 127.0.0.1."""
    entries = tmp_path / "entries"
    shutil.copytree(ENTRIES_DIR, entries)
    shutil.copytree(ENTRIES_DIR.parent / "verifiers", tmp_path / "verifiers")  # the verified rows' keys
    for entry_id, protocol in (("Doe2026Contrastive", "cl-ica-2021"),
                               ("Roe2026Contrastive", "ident3d-eval-v1")):
        write_entry(entry_from_result(result_of(0.8, 0.7, protocol=protocol), entry_id), entries)
    site = tmp_path / "site"
    build(entries, tmp_path / "LEADERBOARD.md", site / "index.html")
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(site))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/index.html", load_entries(entries)
    server.shutdown()


def _browser(playwright):
    chromium = shutil.which("chromium")
    if chromium is None:
        pytest.skip("needs the Debian package chromium (.ci/run installs it)")
    return playwright.chromium.launch(executable_path=chromium, headless=True, args=[
        "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
        "--disable-component-update", "--disable-sync"])


ARTIFACTS = Path(__file__).resolve().parent.parent / "build" / "test-artifacts"


@pytest.mark.browser
def test_the_page_in_a_real_browser(served_site, tmp_path):
    from playwright.sync_api import sync_playwright

    url, entries = served_site
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as p:
        browser = _browser(p)
        page = browser.new_page(viewport={"width": 1280, "height": 1000}, accept_downloads=True)
        requests = []
        page.on("request", lambda r: requests.append(r.url))
        page.goto(url)
        rows = page.locator("#board tbody tr")
        largest, _ = first_table(entries)  # the most populated track, the default protocol
        assert (page.input_value("#dataset"), page.input_value("#protocol")) == largest  # shown first
        table_rows = ranked_tables(entries)[largest]
        assert rows.count() == len(table_rows) < sum(1 for e in entries if table_of(e) == largest)
        group = page.locator("#board tbody tr[data-id='group:v2-normal-box']")  # 3 seeds, 1 row: mean ± sd
        assert re.search(r"\d\.\d\d\s+± \d\.\d\d", group.locator("td").nth(5).inner_text())  # sd beneath
        ranks = rows.evaluate_all("rows => rows.map(r => r.children[0].textContent)")
        assert ranks == rank_labels(table_rows)  # verified 1, 2, ...; the rest (1), (2), ... after them
        badges = page.locator("#board tbody tr .status.inline")  # every row's status at a glance, in view
        assert badges.count() == len(table_rows)
        for k in range(badges.count()):
            box = badges.nth(k).bounding_box()
            assert badges.nth(k).is_visible() and box["x"] + box["width"] <= 1280, k
        marks = page.locator("#board tbody tr .reference")  # the topline and the floor say what they are
        marked = {m: [row["id"] for row in table_rows if reference(row) == m] for m in ("topline", "floor")}
        assert marked["topline"] or marked["floor"]  # format-1 rows carry no mark: it is not signed
        assert sorted(marks.all_inner_texts()) == sorted(m for m, ids in marked.items() for _ in ids)
        for mark, ids in marked.items():
            for row_id in ids:
                assert page.locator(f"#board tbody tr[data-id='{row_id}'] .reference").inner_text() == mark
        assert "trained on the latents" in page.inner_text("#legend")
        roe = next(e for e in entries if e["id"] == "Roe2026Contrastive")  # a self-reported row stands out
        page.select_option("#dataset", roe["dataset"])
        page.select_option("#protocol", roe["protocol"])
        tint = "el => getComputedStyle(el.querySelector('td')).backgroundColor"
        mine = page.locator("#board tbody tr[data-id='Roe2026Contrastive']")
        assert mine.get_attribute("data-status") == "self-reported"
        others = page.locator("#board tbody tr:not([data-status='self-reported'])")
        assert others.count() == 0 or mine.evaluate(tint) != others.first.evaluate(tint)
        assert mine.evaluate(tint) not in ("rgba(0, 0, 0, 0)", "rgb(255, 255, 255)")
        page.select_option("#dataset", largest[0])
        page.select_option("#protocol", largest[1])
        group.locator("button.runs").click()  # the runs open beneath it, unranked
        runs = page.locator("#board tbody tr.run")
        [group_row] = [row for row in table_rows if row["id"] == "group:v2-normal-box"]
        assert runs.evaluate_all("rs => rs.map(r => r.dataset.id)") == [r["id"] for r in group_row["runs"]]
        assert runs.evaluate_all("rs => rs.map(r => r.children[0].textContent)") == ["", "", ""]
        assert rows.count() == len(table_rows) + 3
        group.locator("button.runs").click()
        assert rows.count() == len(table_rows)
        page.select_option("#dataset", "3dident-published@1")
        page.select_option("#protocol", "cl-ica-2021")
        paper_table = ("3dident-published@1", "cl-ica-2021")
        paper = [e for e in entries if (e["dataset"], e["protocol"]) == paper_table]
        assert rows.count() == len(paper) == 8
        ids = rows.evaluate_all("rows => rows.map(r => r.dataset.id)")
        assert ids[0] == "Zimmermann2021Contrastive_supervised"
        assert "Zenodo record 4502485" in page.inner_text("#track-about")
        assert "re-scored from the model file" in page.inner_text("#legend")
        assert "Table 4, mean" in rows.first.inner_text()  # caveats inline, not only on hover

        page.click("#board th[data-key=linear_r2]", position={"x": 2, "y": 2})  # the cell, not its text
        assert rows.first.get_attribute("data-id") == "Zimmermann2021Contrastive_supervised"  # best first
        assert page.get_attribute("#board th[data-key=linear_r2]", "aria-sort") == "descending"
        page.click("#board th[data-key=linear_r2] button")  # again: ascending R^2
        r2 = [float(t.split(" ")[0]) for t in rows.evaluate_all(
            "rows => rows.map(r => r.children[5].firstChild.textContent)")]
        assert r2 == sorted(r2) and r2[0] == 5.25
        assert page.locator("#scatter circle.point").count() == 7  # identity has no MCC
        assert page.locator("#scatter text.label").count() == 7
        page.select_option("#dataset", largest[0])  # the most crowded table: no two labels overlap
        page.select_option("#protocol", largest[1])
        boxes = page.eval_on_selector_all("#scatter text.label", """ls => ls.map(l => {
            const b = l.getBBox(); return [b.x, b.y, b.width, b.height]; })""")
        assert len(boxes) >= 10
        for i, (x, y, w, h) in enumerate(boxes):
            for (u, v, p, q) in boxes[:i]:
                assert not (x < u + p and u < x + w and y < v + q and v < y + h), (i, boxes)
        page.select_option("#dataset", "3dident-published@1")
        page.select_option("#protocol", "cl-ica-2021")
        assert page.evaluate("document.documentElement.scrollWidth") <= 1280
        page.screenshot(path=str(ARTIFACTS / "leaderboard-1280.png"), full_page=True)

        with page.expect_download() as download:
            page.click("#csv")
        lines = Path(download.value.path()).read_text().strip().splitlines()
        assert lines[0].startswith('"rank","id","name","seed_group","track"') and len(lines) == 1 + 8
        assert '"linear_r2:object_x"' in lines[0] and '"mcc_pearson:spotlight_hue"' in lines[0]
        crafted = page.evaluate("""() => csv([{id: "x", rank: 1, rank_label: "1", name: "=HYPERLINK(1)",
            dataset: "+t", protocol: "-p", status: "@s", positives: "\\tq", loss: "\\rl", model_space: "box",
            metrics: {linear_r2: -0.5}, paper: "", footnote: "=1+1"}])""").split("\r\n")[1]
        assert crafted.startswith('"1","x","\'=HYPERLINK(1)","","\'+t","\'-p","\'@s","","\'\tq","\'\rl",'
                                  '"box","-0.5"')
        assert crafted.endswith('"\'=1+1"')  # text is defused, a negative number stays a number

        page.select_option("#dataset", largest[0])  # a table with per-latent scores and a seed group
        page.select_option("#protocol", largest[1])
        with page.expect_download() as download:
            page.click("#csv")
        grouped = [line.split(",")[:4] for line in Path(download.value.path()).read_text().splitlines()
                   if '"v2-normal-box"' in line]
        assert [cells[0] != '""' for cells in grouped] == [True, False, False, False]  # mean, then runs
        assert grouped[0][1] == '"group:v2-normal-box"' and '"linear_r2_sd"' in lines[0]
        heat = page.locator("#heat-r2 table")  # its columns are the latents the table's results name
        assert heat.locator("th.sortable").all_text_contents() == list(get_variant("v2").names)
        values = heat.evaluate("""t => [...t.rows].slice(1).map(r => [...r.cells].slice(1).map(
            c => ({text: c.textContent, best: c.classList.contains('best')})))""")
        for j in range(len(values[0])):  # the best value of every latent is marked, and only it
            numbers = [int(row[j]["text"]) for row in values if row[j]["text"] != "–"]
            marked = [int(row[j]["text"]) for row in values if row[j]["best"]]
            assert marked and set(marked) == {max(numbers)}, j
        heat.locator("th.sortable").nth(3).click()  # sort the heatmap by the 4th latent, best first
        column = heat.evaluate("t => [...t.rows].slice(1).map(r => r.cells[4].textContent)")
        numeric = [int(v) for v in column if v != "–"]
        assert numeric == sorted(numeric, reverse=True)

        page.select_option("#dataset", "3dident-published@1")  # filters hide rows, ranks stay the table's
        page.select_option("#protocol", "cl-ica-2021")
        page.fill("#search", "SUPERVISED")
        kept = rows.evaluate_all("rows => rows.map(r => [r.dataset.id, r.children[0].textContent])")
        assert kept == [["Zimmermann2021Contrastive_supervised", "(1)"]]  # no row of this table is verified
        page.fill("#search", "")
        page.select_option("#status", "public-split")
        assert rows.count() == sum(1 for e in paper if e["status"] == "public-split")
        page.select_option("#status", "reported-in-paper")
        page.click("#board th[data-key=mcc_pearson]")
        view = page.url
        assert "status=reported-in-paper" in view and "sort=mcc_pearson" in view and "desc=1" in view
        again = browser.new_page(viewport={"width": 1280, "height": 1000})
        again.goto(view)  # the address alone restores the view
        assert again.input_value("#status") == "reported-in-paper"
        assert again.input_value("#protocol") == "cl-ica-2021"
        assert again.locator("#board tbody tr").evaluate_all("rows => rows.map(r => r.dataset.id)") == \
            rows.evaluate_all("rows => rows.map(r => r.dataset.id)")
        again.close()
        page.select_option("#status", "")

        combinations = []  # every selectable track and protocol shows rows
        for track in page.eval_on_selector_all("#dataset option", "os => os.map(o => o.value)"):
            page.select_option("#dataset", track)
            for protocol in page.eval_on_selector_all("#protocol option", "os => os.map(o => o.value)"):
                page.select_option("#protocol", protocol)
                assert rows.count() >= 1, (track, protocol)
                combinations.append((track, protocol))
        expected = {(e["dataset"], e["protocol"]) for e in entries}
        assert set(combinations) == expected and len(combinations) == len(expected)
        page.select_option("#dataset", "3dident-published@1")
        page.select_option("#protocol", "ident3d-eval-v1")
        assert rows.evaluate_all("rows => rows.map(r => r.dataset.id)") == ["Roe2026Contrastive"]
        assert "1 of 1 rows of this table shown" in page.inner_text("#count")  # this table's, not all
        option = page.eval_on_selector("#dataset", "s => s.options[s.selectedIndex].textContent")
        assert option.endswith(f"· {sum(1 for e in entries if e['dataset'] == '3dident-published@1')} rows")

        for table in (largest, ("3dident-v2-64@1", "ident3d-eval-v1")):  # the CPU track's, DCI columns too
            page.select_option("#dataset", table[0])  # fits 1,280 px with the status column in view
            page.select_option("#protocol", table[1])
            status = page.locator('#board th[data-key="status"]').bounding_box()
            assert status["x"] + status["width"] <= 1280, table
            titles = page.eval_on_selector_all("#board th",
                                               "ths => ths.map(th => [th.dataset.key, th.title])")
            assert all(title for _, title in titles), titles  # every column explains itself on hover ...
        legend = page.inner_text("#columns-legend")  # ... and in the legend above the table
        assert "MCC" in legend and "DCI disentanglement" in legend and "extrapolation R²" in legend
        archived = [e["id"] for e in entries if e.get("archived")]
        listed = page.eval_on_selector_all("#archived tbody tr", "rs => rs.map(r => r.dataset.id)")
        assert archived and sorted(listed) == sorted(archived)  # listed once, under Archived ...
        ranked = page.evaluate("DATA.entries.flatMap(e => [e.id, ...(e.runs || []).map(r => r.id)])")
        assert not set(archived) & set(ranked)  # ... and ranked in no table

        narrow = browser.new_page(viewport={"width": 420, "height": 900})
        narrow.goto(url)
        assert narrow.evaluate("document.documentElement.scrollWidth") <= 420  # no sideways scrolling
        assert narrow.locator("#board tbody tr").first.locator(".status.inline").is_visible()
        assert narrow.locator(".scroll-cue").is_visible()
        heat = narrow.locator("#heat-r2")
        label_before = heat.locator("th.rowhead").nth(1).bounding_box()["x"]
        heat.evaluate("h => { h.scrollLeft = 200; }")
        assert heat.evaluate("h => h.scrollLeft") > 0  # it does scroll at 420 px ...
        assert heat.locator("th.rowhead").nth(1).bounding_box()["x"] == pytest.approx(label_before, abs=1)
        assert heat.locator("th.rowhead").nth(1).is_visible()  # ... and the names stay in view
        narrow.screenshot(path=str(ARTIFACTS / "leaderboard-420.png"), full_page=True)
        browser.close()
    assert all(u.startswith(("http://127.0.0.1", "blob:")) for u in requests), "the page used the network"
    for width in (1280, 420):
        png = (ARTIFACTS / f"leaderboard-{width}.png").read_bytes()
        assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 10_000

HOSTILE = ["</script><script>alert(1)</script>", "<!-- <script>", "<img src=x onerror=alert(2)>",
           "line\u2028sep\u2029para", "a | b\n| --- |", "*bold* _it_ [x](javascript:alert(3)) `code`",
           "&amp; &lt;b&gt; ${1+1} \\ ~~gone~~", "=HYPERLINK(\"http://x\",\"y\") ``a|b`` [l](http://e)"]


def hostile_entries(folder: Path) -> list[str]:
    """Entries whose every free-text field holds hostile text; returns the names used."""
    names = []
    for i, text in enumerate(HOSTILE):
        name = f"{text} #{i}"
        entry = entry_from_result(
            result_of(0.5 + i / 100, 0.4 + i / 100), f"Evil2026Entry_n{i}", name=name,
            authors=[text, "B"], paper="https://example.org/p?q=\"><script>alert(4)</script>",
            code="https://example.org/c)](javascript:alert(5))", training_data=text, positives=text,
            loss=text, model_space=text, footnote=text)
        write_entry(entry, folder)
        names.append(name)
        paper = {**paper_entry(), "id": f"Evil2026Paper_n{i}", "name": name, "dataset": text}
        write_entry(Entry.parse(paper, "paper"), folder)  # hostile text as the track: a section title
        names.append(name)
        archived = {**paper, "id": f"Evil2026Archived_n{i}", "archived": text}  # the archived table
        write_entry(Entry.parse(archived, "archived"), folder)
    return names


def test_hostile_text_cannot_change_the_markdown_table(tmp_path):
    names = hostile_entries(tmp_path / "entries")
    build(tmp_path / "entries", tmp_path / "LB.md", tmp_path / "site.html")
    markdown = (tmp_path / "LB.md").read_text()
    table = [line for line in markdown.splitlines() if line.startswith("| ") and "Evil2026" in line
             and "Evil2026Archived" not in line]
    assert len(table) == len(names)
    for line in table:  # ten cells: unescaped pipes would add more
        cells = re.split(r"(?<!\\)\|", line.strip())[1:-1]
        assert len(cells) == 10, line
    assert "<script" not in markdown and "<img" not in markdown and "<!--" not in markdown
    assert "javascript:alert(5))" not in markdown
    archived = [line for line in markdown.splitlines() if line.startswith("| `Evil2026Archived")]
    assert len(archived) == len(HOSTILE)
    for line in archived:  # six cells; no code span, link or tag opened by the text
        cells = re.split(r"(?<!\\)\|", line.strip())[1:-1]
        assert len(cells) == 6, line
        assert re.search(r"(?<!\\)[<\[]", "".join(cells[2:])) is None, line
        assert cells[0].count("`") == 2 and "`" not in re.sub(r"\\`", "", "".join(cells[1:])), line
    for entry in load_entries(tmp_path / "entries"):  # the Hub's YAML holds each text verbatim
        if entry["result"] is None:
            continue
        index = yaml.safe_load(export(entry, "model-index"))
        assert index["model-index"][0]["name"] == entry["name"]  # verbatim, one YAML string
        results = yaml.safe_load(export(entry, "eval-results", "org/3dident"))
        assert results and all(isinstance(r["value"], float) and entry["id"] in r["notes"] for r in results)
    titles = [line for line in markdown.splitlines() if line.startswith("#")]
    # the page title, the results' table, one per hostile track, the archived table
    assert len(titles) == 3 + len(HOSTILE)
    for title in titles[1:]:  # one line each, nothing that opens a tag, link, code span or cell
        assert re.search(r"(?<!\\)[<`|\[]", title.replace("(`3dident-published@1`)", "")) is None, title


@pytest.mark.browser
def test_hostile_text_cannot_change_the_page_in_a_real_browser(tmp_path):
    from playwright.sync_api import sync_playwright

    names = hostile_entries(tmp_path / "entries")
    build(tmp_path / "entries", tmp_path / "LB.md", tmp_path / "site" / "index.html")
    with sync_playwright() as p:
        browser = _browser(p)
        page = browser.new_page()
        dialogs, errors = [], []
        page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto((tmp_path / "site" / "index.html").as_uri())
        page.select_option("#protocol", "ident3d-eval-v1")
        rows = page.locator("#board tbody tr")
        results = names[::2]  # every other name is a paper entry on a hostile "track"
        assert rows.count() == len(results)
        shown = rows.evaluate_all("rows => rows.map(r => r.querySelector('.name').textContent)")
        assert sorted(shown) == sorted(results)  # verbatim, including the line separators
        tracks_offered = page.eval_on_selector_all("#dataset option", "os => os.map(o => o.value)")
        assert set(HOSTILE) <= set(tracks_offered)  # hostile track names are options, as text
        assert page.locator("#board script, #board img").count() == 0
        assert page.locator("script").count() == 2  # the data element and the page's own code
        page.wait_for_timeout(300)
        browser.close()
    assert dialogs == [] and errors == []


@pytest.mark.slow
def test_compare_shows_the_top_the_rows_around_and_per_latent_differences(tmp_path):
    entries = tmp_path / "entries"
    entries.mkdir()
    values = (0.99, 0.97, 0.95, 0.9, 0.8, 0.7, 0.6, 0.5, 0.4)
    for i, value in enumerate(values):
        write_entry(entry_from_result(result_of(value, value, sha=f"{i:02d}" * 32), f"Doe2026Model_n{i}",
                                      status="public-split"), entries)
    result = tmp_path / "result.json"
    result.write_text(json.dumps(fake_result(0.55, 0.55)))
    out = subprocess.run([sys.executable, "-m", "ident3d.cli", "leaderboard", "compare", str(result),
                          "--entries", str(entries)], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert "would rank (8) of 10 in 3dident-published@1 · ident3d-eval-v1" in out.stdout
    assert max(map(len, out.stdout.splitlines())) <= 100  # a terminal's width, status included
    rows = [line for line in out.stdout.splitlines() if line[2:6].strip().strip("()").isdigit()]
    # the top three, a gap, then two above and two below; none verified, so every rank is in brackets
    assert [r[2:6].strip() for r in rows] == ["(1)", "(2)", "(3)", "(6)", "(7)", "(8)", "(9)", "(10)"]
    assert any(line.strip() == "…" for line in out.stdout.splitlines())
    assert [r[0] for r in rows] == [" "] * 5 + [">", " ", " "] and rows[5].endswith("self-reported")
    assert out.stdout.startswith("m would rank") and "Candidate0000Result" not in out.stdout  # its model
    wide = subprocess.run([sys.executable, "-m", "ident3d.cli", "leaderboard", "compare", str(result),
                           "--entries", str(entries), "--wide"], capture_output=True, text=True)
    rows = [line for line in wide.stdout.splitlines() if line.startswith("| ") and "`" in line]
    assert [r.split("|")[1].strip() for r in rows] == ["(6)", "(7)", "(8)", "(9)", "(10)"]
    words = " ".join(out.stdout.split())  # the prose lines wrap at 100 columns
    assert "rank 1 (Doe2026Model_n0)" in words and "next above (Doe2026Model_n6)" in words
    object_x = next(line for line in out.stdout.splitlines() if line.startswith("object_x"))
    assert object_x.split()[1:] == ["55.00", "55.00", "-44.00", "-44.00", "-5.00", "-5.00"]
    refused = subprocess.run([sys.executable, "-m", "ident3d.cli", "leaderboard", "compare", str(result),
                              "--entries", str(entries), "--track", "3dident-v2-64"],
                             capture_output=True, text=True)
    assert refused.returncode == 1 and "cannot enter the table of 3dident-v2-64@1" in refused.stderr


def test_compare_differences_are_to_rank_1_and_the_row_above_even_a_seed_group(tmp_path):
    from ident3d.leaderboard.compare import report

    for i, value in enumerate((0.9, 0.8)):  # one method, two seeds: one row, its runs' mean per latent
        write_entry(entry_from_result(result_of(value, value, sha=f"{i:02d}" * 32), f"Doe2026Group_s{i}",
                                      status="public-split", seed_group="group"), tmp_path)
    write_entry(entry_from_result(result_of(0.3, 0.3, sha="09" * 32), "Doe2026Low", status="public-split"),
                tmp_path)
    text = report(load_entries(tmp_path), entry_from_result(result_of(0.5, 0.5), "Candidate0000Result"), "m")
    assert "would rank (2) of 3" in text and "rank 1 (group:group)" in " ".join(text.split())
    assert "Doe2026Low" not in text.split("per-latent")[1]  # never a row ranked below it
    object_x = next(line for line in text.splitlines() if line.startswith("object_x"))
    assert object_x.split()[1:] == ["50.00", "50.00", "-35.00", "-35.00"]  # 0.5 against the mean 0.85


@pytest.mark.slow
def test_the_page_gets_its_ranks_from_the_python_rule():
    from ident3d.leaderboard.ranking import ranked_tables
    from ident3d.leaderboard.site import page_data

    entries = load_entries(ENTRIES_DIR)
    rows = page_data(entries)["entries"]
    shown = {(row["dataset"], row["protocol"], row["id"]): row["rank"] for row in rows}
    for (track, protocol), table in ranked_tables(entries).items():
        assert [shown[(track, protocol, row["id"])] for row in table] == list(range(1, len(table) + 1))
    assert "rankKey" not in (Path(__file__).resolve().parents[1] / "leaderboard/page.html").read_text()


@pytest.mark.browser
def test_the_page_shows_the_companion_columns_only_where_a_row_has_them(tmp_path):
    from playwright.sync_api import sync_playwright

    from ident3d.leaderboard.build import build

    entries = tmp_path / "entries"
    entries.mkdir()
    for entry_id, with_dci in (("Doe2026Plain", False), ("Roe2026Dci", True)):
        result = fake_result(0.8, 0.7)
        if with_dci:
            result["dci"] = {"protocol": "ident3d-dci", "version": "1.0", "disentanglement": 0.25,
                             "completeness": 0.5, "informativeness": 0.9}
            result["extrapolation"] = {"protocol": "ident3d-extrapolation", "version": "1.0",
                                       "linear_r2": 0.6, "kernel_r2": 0.1, "per_latent": []}
        write_entry(entry_from_result(Result.parse(result), entry_id), entries)
    build(entries, tmp_path / "LEADERBOARD.md", tmp_path / "index.html")
    with sync_playwright() as p:
        browser = _browser(p)
        page = browser.new_page()
        page.goto((tmp_path / "index.html").as_uri())
        headers = page.locator("#board th").all_inner_texts()
        companions = ["D", "C", "I", "extrapolation R²"]
        assert [h for h in headers if h in companions] == companions
        row = page.locator('#board tr[data-id="Roe2026Dci"] td.companion').all_inner_texts()
        assert row == ["25.00", "50.00", "90.00", "60.00"]
        assert page.locator('#board tr[data-id="Doe2026Plain"] td.companion').all_inner_texts() == ["–"] * 4
        page.locator('#board th[data-key="dci_disentanglement"]').click()  # best first
        assert page.locator("#board tbody tr").first.get_attribute("data-id") == "Roe2026Dci"
        browser.close()


@pytest.mark.browser
def test_the_page_sorts_style_r2_lowest_first_and_content_r2_highest_first(tmp_path):
    """The content/style baselines' block columns: a content encoder should read the content block and
    not the style block, so a first click on a style column shows the lowest style R² first."""
    from playwright.sync_api import sync_playwright

    from ident3d.leaderboard.build import build

    entries = tmp_path / "entries"
    (entries / "ident3d-eval-v1").mkdir(parents=True)
    committed = [e for e in load_entries(ENTRIES_DIR)
                 if e["dataset"] == "3dident-v2-64-cs@1" and e["protocol"] == "ident3d-eval-v1"
                 and not e.get("archived")]  # the two baselines, verified: their keyring comes along
    assert len(committed) == 2
    for entry in committed:
        shutil.copy(ENTRIES_DIR / f"{entry.key}.json", entries / "ident3d-eval-v1")
    shutil.copytree(ENTRIES_DIR.parent / "verifiers", tmp_path / "verifiers")
    by_style = sorted(committed, key=lambda e: e["result"]["fresh"]["blocks"]["style_linear_r2"])
    by_content = sorted(committed, key=lambda e: -e["result"]["fresh"]["blocks"]["content_kernel_r2"])
    build(entries, tmp_path / "LEADERBOARD.md", tmp_path / "index.html")
    with sync_playwright() as p:
        browser = _browser(p)
        page = browser.new_page()
        page.goto((tmp_path / "index.html").as_uri())
        assert page.locator("#dataset").input_value() == "3dident-v2-64-cs@1"  # the only track here
        headers = page.locator("#board th.companion").all_inner_texts()
        assert headers[-4:] == ["content R² (linear)", "content R² (kernel)", "style R² (linear)",
                                "style R² (kernel)"]
        page.locator('#board th[data-key="style_linear_r2"]').click()
        assert page.locator("#board tbody tr").first.get_attribute("data-id") == by_style[0]["id"]
        page.locator('#board th[data-key="content_kernel_r2"]').click()
        assert page.locator("#board tbody tr").first.get_attribute("data-id") == by_content[0]["id"]
        browser.close()


def test_leaderboard_add_validates_the_submitted_result_once(tmp_path, monkeypatch):
    """The result is parsed into a Result at the boundary; the entry built around it and the writer
    trust that type instead of checking the same document again."""
    import ident3d.leaderboard.entries as entries_module
    import ident3d.results as results_module
    from ident3d.cli import main as cli

    calls = []
    original = results_module.validate_result

    def counting(document):
        calls.append(document["model"]["name"])
        return original(document)

    monkeypatch.setattr(results_module, "validate_result", counting)
    monkeypatch.setattr(entries_module, "validate_result", counting)
    (tmp_path / "result.json").write_text(json.dumps(fake_result()))
    (tmp_path / "entries").mkdir()
    assert cli(["leaderboard", "add", str(tmp_path / "result.json"), "--id", "Doe2026Once",
                "--entries", str(tmp_path / "entries")]) == 0
    assert len(calls) == 1
    assert load_entries(tmp_path / "entries")[0]["id"] == "Doe2026Once"


def test_block_identifiability_table_shows_the_content_style_entries():
    from ident3d.baselines.blocks_report import section
    from ident3d.leaderboard.entries import entry_from_result

    result = fake_result(track="custom:0123456789ab")
    result["blocks"] = {"style_factors": ["object_hue", "spotlight_angle"], "content_linear_r2": 0.9,
                        "content_kernel_r2": 0.95, "style_linear_r2": 0.1, "style_kernel_r2": None}
    entry = entry_from_result(Result.parse(result), "Doe2026Blocks", name="cs", track="custom:0123456789ab")
    archived = {**entry_from_result(Result.parse(result), "Old2025Blocks", name="old",
                                    track="custom:0123456789ab"), "archived": "superseded"}
    table = section([entry, entry_from_result(result_of(), "Doe2026Plain", name="plain"), archived])
    assert "| cs (`Doe2026Blocks`) | `custom:0123456789ab` | object_hue, spotlight_angle | 90.0 / 95.0 | " \
           "10.0 / – |" in table and "Doe2026Plain" not in table and "Old2025Blocks" not in table


def test_an_archived_entry_is_listed_with_its_reason_and_ranked_nowhere(tmp_path):
    from ident3d.leaderboard.companions import columns, metric_columns
    from ident3d.leaderboard.compare import report
    from ident3d.leaderboard.legend import meanings

    for entry_id, value in (("Doe2026Kept", 0.6), ("Old2025Superseded", 0.9)):
        write_entry(entry_from_result(result_of(value, value), entry_id), tmp_path)
    old_path = tmp_path / "ident3d-eval-v1" / "Old2025Superseded.json"
    old = json.loads(old_path.read_text())
    old["archived"] = "superseded by Doe2026Kept; no model file"
    old_path.write_text(json.dumps(old))
    entries = load_entries(tmp_path)
    [table] = ranked_tables(entries).values()
    assert [row["id"] for row in table] == ["Doe2026Kept"]  # the better score does not rank
    newcomer = entry_from_result(result_of(0.7, 0.7), "New2026One")
    assert "would rank (1) of 2" in report(entries, newcomer, "r")
    markdown = render_markdown(entries)
    archived = markdown[markdown.index("## Archived (not ranked)"):]
    assert "`Old2025Superseded`" in archived and "superseded by Doe2026Kept; no model file" in archived
    assert markdown.count("Old2025Superseded") == 1
    assert "Columns: linear R²: the share" in markdown  # the legend of the table's columns
    old["archived"] = ""  # a reason is required
    with pytest.raises(ResultError):
        validate_entry(old, "Old2025Superseded.json")
    # every column the tables and the page can show has a meaning in the legend
    shown = {m.name for m in (*metric_columns(), *columns())} | {"rank", "name", "positives", "status"}
    assert shown <= set(meanings())


def test_compare_names_the_floor_and_the_topline_it_stands_between():
    from ident3d.leaderboard.compare import against_references

    table = ranked_tables(load_entries())[("3dident-v2-64-ood@1", "ident3d-eval-v1")]
    floor = next(row for row in table if reference(row) == "floor")
    topline = next(row for row in table if reference(row) == "topline")
    between = {**floor, "id": "Doe2026Between", "positives": "latent", "loss": "InfoNCE",
               "metrics": {k: (floor["metrics"][k] + topline["metrics"][k]) / 2
                           for k in ("linear_r2", "mcc_pearson")}}
    text = against_references(table, between)
    assert f"above the floor {floor['id']}" in text and f"below the topline {topline['id']}" in text
    below = {**between, "metrics": {"linear_r2": 0.01, "mcc_pearson": 0.01}}
    assert f"below the floor {floor['id']}" in against_references(table, below)
    assert "marks no floor" in against_references([topline], between)
