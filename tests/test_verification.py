"""Verified is proven (docs/leaderboard.md): "verified" is a record signed by a keyring key that
matches the entry's numbers, never a field; drawn large enough; one model file, one entry per table;
the gap says what its interval shows. No Blender: the results are made up, the keys real."""

from __future__ import annotations

import copy
import json
import os
import stat
import subprocess
import sys

import pytest
from test_leaderboard import fake_result

from ident3d import draw_size
from ident3d.errors import ResultError
from ident3d.leaderboard.build import build
from ident3d.leaderboard.entries import entry_from_result, load_entries, write_entry
from ident3d.leaderboard.hub_export import export
from ident3d.leaderboard.markdown import render_markdown
from ident3d.leaderboard.ranking import ranked_tables, scores, signer, status
from ident3d.leaderboard.verification import Signer, keyring_folder, publish_key, record_for
from ident3d.results import Result, gap_verdict
from ident3d.tracks import tracks

TRACK = "3dident-v2-64@1"


def drawn_result(public=0.95, fresh=0.2, n=2000, sha="ab" * 32) -> dict:
    """A result on the CPU track with a fresh draw: the public split high, the draw ``fresh``."""
    result = fake_result(public, public, track=TRACK, sha=sha)
    per = [{**row, "linear_r2": fresh, "mcc_pearson": fresh, "nonlinear_r2": None, "mcc_spearman": None}
           for row in result["per_latent"]]
    gap = {key: {"public": public, "fresh": fresh, "fresh_ci95": [fresh - 0.01, fresh + 0.01],
                 "gap": public - fresh, "ci95": [public - fresh - 0.02, public - fresh + 0.02],
                 "above_chance": True} for key in ("linear_r2", "mcc_pearson")}
    result["fresh"] = {"seed": 123456789, "seed_source": "entropy", "n": n, "track": TRACK,
                       "render_settings": {}, "render_s": 30.0, "score_s": 10.0,
                       "metrics": {"linear_r2": fresh, "nonlinear_r2": None, "mcc_pearson": fresh,
                                   "mcc_spearman": None},
                       "per_latent": per, "gap": gap, "memorised": True}
    return result


@pytest.fixture
def board(tmp_path, monkeypatch):
    """An entries folder beside an empty keyring, a verifier key in a private config folder, and
    a signed entry, an honest public-split row, and a hand-written "verified" claim."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    entries = tmp_path / "leaderboard" / "entries"
    entries.mkdir(parents=True)
    signer = Signer.load_or_create("alice")
    publish_key(signer, keyring_folder(entries))
    signed = Result.parse(drawn_result(0.95, 0.60, sha="01" * 32))
    write_entry(entry_from_result(signed, "Alice2026Signed", status="verified",
                                  verification=signer.sign(record_for("Alice2026Signed", signed.document))),
                entries)
    write_entry(entry_from_result(Result.parse(fake_result(0.7, 0.7, track=TRACK, sha="02" * 32)),
                                  "Bob2026Public", status="public-split"), entries)
    claim = drawn_result(0.99, 0.99, sha="03" * 32)  # the invented fresh section of the issue
    write_entry(entry_from_result(Result.parse(claim), "Mallory2026Claim", status="verified"), entries)
    return {"entries": entries, "signer": signer, "tmp": tmp_path}


def test_a_hand_written_verified_entry_is_an_unverified_claim_and_fails_the_check(board):
    entries = load_entries(board["entries"])
    by_id = {e["id"]: e for e in entries}
    assert signer(by_id["Alice2026Signed"]) == "alice" and status(by_id["Alice2026Signed"]) == "verified"
    claim = by_id["Mallory2026Claim"]
    assert status(claim) == "unverified-claim" and signer(claim) is None
    assert scores(claim) == claim["metrics"]  # ranked by its public numbers, never by its own fresh section
    table = ranked_tables(entries)[(TRACK, "ident3d-eval-v1")]
    assert [row["id"] for row in table] == ["Mallory2026Claim", "Bob2026Public", "Alice2026Signed"]
    line = next(line for line in render_markdown(entries).splitlines() if "`Mallory2026Claim`" in line)
    assert "unverified-claim (says verified, but no signed verification record" in line
    assert "signed by alice" in next(line for line in render_markdown(entries).splitlines()
                                     if "`Alice2026Signed`" in line)
    assert "verified" not in export(claim, "model-index")  # no Hub metric says verified for it
    assert "verified: true" in export(by_id["Alice2026Signed"], "model-index")

    root = board["tmp"]
    build(board["entries"], root / "LEADERBOARD.md", root / "leaderboard" / "site" / "index.html")
    check = subprocess.run([sys.executable, "-m", "ident3d.cli", "leaderboard", "build", "--check",
                            "--entries", str(board["entries"])], capture_output=True, text=True, cwd=root)
    assert check.returncode == 1 and "error: ident3d-eval-v1/Mallory2026Claim: says verified" in check.stderr
    assert "verified: ident3d-eval-v1/Alice2026Signed, signed by key 'alice'" in check.stdout


@pytest.mark.parametrize("tamper", ["fresh-score", "entry-id", "key-unknown", "signature", "checkpoint"])
def test_a_signed_entry_changed_after_signing_is_a_claim(board, tamper):
    path = board["entries"] / "ident3d-eval-v1" / "Alice2026Signed.json"
    document = json.loads(path.read_text())
    if tamper == "fresh-score":
        document["result"]["fresh"]["metrics"]["mcc_pearson"] = 0.99
    elif tamper == "entry-id":  # the record names the id it was signed for
        document["id"] = "Alice2026Other"
        path.unlink()
        path = path.with_name("Alice2026Other.json")
    elif tamper == "key-unknown":
        document["verification"]["key"] = "mallory"
    elif tamper == "signature":
        signature = document["verification"]["signature"]
        document["verification"]["signature"] = ("B" if signature[0] != "B" else "C") + signature[1:]
    else:  # another file's hash, in the record and the entry alike: the signature no longer checks
        document["verification"]["record"]["checkpoint_sha256"] = "04" * 32
    path.write_text(json.dumps(document))
    entry = next(e for e in load_entries(board["entries"]) if e["id"] == document["id"])
    assert status(entry) == "unverified-claim" and entry.proof.problem


def test_the_private_key_is_private_and_the_keyring_refuses_a_second_key_of_one_name(board, tmp_path):
    key = tmp_path / "config" / "ident3d" / "verifiers" / "alice.key"
    assert stat.S_IMODE(key.stat().st_mode) == 0o600
    assert b"PRIVATE KEY" in key.read_bytes() and board["signer"].public_key() not in key.read_text()
    os.chmod(key, 0o644)
    with pytest.raises(ResultError, match="readable by others"):
        Signer.load_or_create("alice")
    os.chmod(key, 0o600)
    other = Signer.load_or_create("alice", folder=tmp_path / "elsewhere")  # a new key, same name
    with pytest.raises(ResultError, match="not this machine's key"):
        publish_key(other, keyring_folder(board["entries"]))
    with pytest.raises(ResultError, match="--verifier"):
        Signer.load_or_create("../x")


def test_a_verified_draw_below_the_tracks_minimum_is_refused(board):
    small = Result.parse(drawn_result(n=4))
    with pytest.raises(ResultError, match="has at least 2,000"):
        entry_from_result(small, "Mallory2026Tiny", status="verified")
    saved = board["tmp"] / "small.json"
    saved.write_text(json.dumps(drawn_result(n=4)))
    model = board["tmp"] / "model.pt2"
    model.write_bytes(b"not read: the size is refused first")
    added = subprocess.run([sys.executable, "-m", "ident3d.cli", "leaderboard", "add", str(saved),
                            "--id", "Mallory2026Tiny", "--checkpoint", str(model), "--data",
                            str(board["tmp"]), "--fresh", "4", "--entries", str(board["entries"])],
                           capture_output=True, text=True)
    assert added.returncode == 1 and added.stderr.startswith("error: --fresh 4: a verified draw of")
    assert "--fresh 2000 or more" in added.stderr and len(added.stderr.strip().splitlines()) == 1


def test_every_rendered_tracks_minimum_is_the_rule_of_the_generated_table():
    chosen = draw_size.minimum_draw(draw_size.table())
    assert chosen == 2000
    assert {t.fresh_min for t in tracks().values() if t.source == "render"} == {chosen}
    rows = {(r.n, r.correlation): r for r in draw_size.table()}
    assert rows[(4, 0.0)].bias > 0.3  # why a 4-image draw ranked a lookup table


def test_one_model_file_has_one_entry_per_table(board):
    saved = board["tmp"] / "again.json"
    saved.write_text(json.dumps(fake_result(0.7, 0.7, track=TRACK, sha="02" * 32)))
    again = subprocess.run([sys.executable, "-m", "ident3d.cli", "leaderboard", "add", str(saved), "--id",
                            "Bob2026Again", "--entries", str(board["entries"])],
                           capture_output=True, text=True)
    assert again.returncode == 1 and "already entry Bob2026Public" in again.stderr
    onto_another = subprocess.run([sys.executable, "-m", "ident3d.cli", "leaderboard", "add", str(saved),
                                   "--id", "Alice2026Signed", "--replace", "Bob2026Public", "--entries",
                                   str(board["entries"])], capture_output=True, text=True)
    assert onto_another.returncode == 1 and "'Alice2026Signed' already exists" in onto_another.stderr
    replaced = subprocess.run([sys.executable, "-m", "ident3d.cli", "leaderboard", "add", str(saved), "--id",
                               "Bob2026Again", "--replace", "Bob2026Public", "--entries",
                               str(board["entries"])], capture_output=True, text=True)
    assert replaced.returncode == 0, replaced.stderr
    names = sorted(p.stem for p in (board["entries"] / "ident3d-eval-v1").iterdir())
    assert names == ["Alice2026Signed", "Bob2026Again", "Mallory2026Claim"]


def test_a_verified_row_shows_only_what_its_fresh_draw_measured(board):
    from ident3d.leaderboard.companions import companion_metrics
    from ident3d.leaderboard.site import page_row

    with_dci = drawn_result(0.95, 0.60, sha="05" * 32)
    with_dci["dci"] = {"disentanglement": 1.0, "completeness": 1.0, "informativeness": 1.0,
                       "protocol": "ident3d-dci", "version": "1.0"}
    result = Result.parse(with_dci)
    proof = board["signer"].sign(record_for("Alice2026Dci", result.document))
    write_entry(entry_from_result(result, "Alice2026Dci", status="verified", verification=proof),
                board["entries"])
    entry = next(e for e in load_entries(board["entries"]) if e["id"] == "Alice2026Dci")
    assert signer(entry) == "alice"
    assert entry["result"]["per_latent"][0]["linear_r2"] == 0.95  # the public split's, on record
    shown = page_row(entry)
    assert {row["linear_r2"] for row in shown["per_latent"]} == {0.60}  # the heatmaps: the fresh draw
    assert shown["metrics"]["nonlinear_r2"] is None  # no kernel read-out was applied to the draw
    assert set(companion_metrics(entry).values()) == {None}  # public companions never on a verified row
    assert companion_metrics({**entry.document, "status": "public-split"})["dci_disentanglement"] == 1.0


@pytest.mark.parametrize(("low", "high", "words"), [
    (0.01, 0.05, "may have memorised it"), (-0.0272, -0.0043, "scores below unseen images beyond chance"),
    (-0.01, 0.02, "not a model that adapts its answers to it")])
def test_the_gap_sentence_follows_its_interval_both_ways(low, high, words):
    gap = {"mcc_pearson": {"ci95": [low, high]}, "linear_r2": {"ci95": [min(low, 0.0), max(high, 0.0)]}}
    assert words in gap_verdict(gap)
    if high < 0:
        assert "agree" not in gap_verdict(gap)


def test_a_signed_record_names_what_was_measured(board):
    entry = json.loads((board["entries"] / "ident3d-eval-v1" / "Alice2026Signed.json").read_text())
    record = entry["verification"]["record"]
    assert record["entry_id"] == "Alice2026Signed" and record["checkpoint_sha256"] == "01" * 32
    assert (record["fresh_seed"], record["fresh_n"], record["track"]) == (123456789, 2000, TRACK)
    assert record["protocol"] == "ident3d-eval-v1" and set(record["versions"]) >= {"ident3d", "torch"}
    moved = copy.deepcopy(entry)
    moved["result"]["fresh"]["seed"] = 1  # the draw the record names, or none
    (board["entries"] / "ident3d-eval-v1" / "Alice2026Signed.json").write_text(json.dumps(moved))
    assert "result_sha256" in next(e for e in load_entries(board["entries"])
                                   if e["id"] == "Alice2026Signed").proof.problem


def test_a_rescore_compares_every_number_a_verified_row_shows():
    """What `rescore` compares after re-rendering a draw: the public means and per-latent values and
    the draw's scores, per-latent values and gaps (a hand-changed one of them is named)."""
    from ident3d.leaderboard.entries import _shown_numbers

    result = drawn_result()
    result["fresh"]["dci"] = {"protocol": "ident3d-dci", "version": "1.0", "disentanglement": 0.5,
                              "completeness": 0.4, "informativeness": 0.3}
    compared = _shown_numbers(result)
    factor = result["fresh"]["per_latent"][2]["factor"]
    assert {"metrics/mcc_pearson", f"per_latent/{factor}/linear_r2", "fresh/metrics/mcc_pearson",
            f"fresh/per_latent/{factor}/mcc_pearson", "fresh/gap/linear_r2/gap",
            "fresh/gap/mcc_pearson/ci95/0", "fresh/dci/completeness"} <= set(compared)
    assert not {"fresh/seed", "fresh/n", "fresh/render_s"} & set(compared)  # not scores
    for path in (("per_latent", 2, "mcc_pearson"), ("dci", "completeness")):
        changed_result = copy.deepcopy(result)
        *parents, last = path
        holder = changed_result["fresh"]
        for step in parents:
            holder = holder[step]
        holder[last] += 0.01
        changed = {k for k, v in _shown_numbers(changed_result).items() if v != compared[k]}
        assert changed == {"fresh/" + "/".join(str(factor) if p == 2 else str(p) for p in path)}

