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
from datetime import UTC, datetime

import pytest
from test_leaderboard import fake_result

from ident3d import draw_size
from ident3d.errors import ResultError
from ident3d.leaderboard.build import build
from ident3d.leaderboard.entries import Entry, entry_from_result, load_entries, write_entry
from ident3d.leaderboard.hub_export import export
from ident3d.leaderboard.keyring import Key, add_key, keyring_folder
from ident3d.leaderboard.markdown import render_markdown
from ident3d.leaderboard.ranking import ranked_tables, scores, signer, status
from ident3d.leaderboard.verification import Signer
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


def signed(signer: Signer, entry: Entry, when=None) -> Entry:
    return Entry.parse(signer.sign_entry(entry.document, when), "signed entry")


def trust(signer: Signer, entries, added="2026-01-01", **validity) -> None:
    """The maintainer's step: the signer's public key into the keyring beside ``entries``."""
    add_key(keyring_folder(entries), Key(signer.name, signer.public_key(), signer.name.title(), "person",
                                         "a test's config folder", added, **validity))


@pytest.fixture
def board(tmp_path, monkeypatch):
    """An entries folder beside an empty keyring, a verifier key in a private config folder, and
    a signed entry, an honest public-split row, and a hand-written "verified" claim."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    entries = tmp_path / "leaderboard" / "entries"
    entries.mkdir(parents=True)
    signer = Signer.load_or_create("alice")
    trust(signer, entries)
    alice = Result.parse(drawn_result(0.95, 0.60, sha="01" * 32))
    write_entry(signed(signer, entry_from_result(alice, "Alice2026Signed", status="verified")), entries)
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
    # ranks mean verified: the signed row first, the claim and the public-split row after it
    assert [row["id"] for row in table] == ["Alice2026Signed", "Mallory2026Claim", "Bob2026Public"]
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
    elif tamper == "key-unknown":  # the name beside the record is not what binds it: the fingerprint is
        document["verification"]["record"]["key_sha256"] = "05" * 32
    elif tamper == "signature":
        signature = document["verification"]["signature"]
        document["verification"]["signature"] = ("B" if signature[0] != "B" else "C") + signature[1:]
    else:  # another file's hash, in the record and the entry alike: the signature no longer checks
        document["verification"]["record"]["checkpoint_sha256"] = "04" * 32
    path.write_text(json.dumps(document))
    entry = next(e for e in load_entries(board["entries"]) if e["id"] == document["id"])
    assert status(entry) == "unverified-claim" and entry.proof.problem


def test_the_private_key_is_private_and_the_keyring_holds_one_name_per_key(board, tmp_path):
    key = tmp_path / "config" / "ident3d" / "verifiers" / "alice.key"
    assert stat.S_IMODE(key.stat().st_mode) == 0o600
    assert b"PRIVATE KEY" in key.read_bytes() and board["signer"].public_key() not in key.read_text()
    os.chmod(key, 0o644)
    with pytest.raises(ResultError, match="readable by others"):
        Signer.load_or_create("alice")
    os.chmod(key, 0o600)
    other = Signer.load_or_create("alice", folder=tmp_path / "elsewhere")  # a new key, same name
    with pytest.raises(ResultError, match="already has a key named 'alice'"):
        trust(other, board["entries"])
    with pytest.raises(ResultError, match="already holds this key as 'alice'"):  # one key, one name
        add_key(keyring_folder(board["entries"]), Key("independent-lab", board["signer"].public_key(), "x",
                                                      "person", "x", "2026-01-01"))
    alice = json.loads((keyring_folder(board["entries"]) / "alice.json").read_text())
    (keyring_folder(board["entries"]) / "independent-lab.json").write_text(json.dumps(
        {**alice, "name": "independent-lab"}))
    with pytest.raises(ResultError, match="keys 'alice' and 'independent-lab' hold one public key"):
        load_entries(board["entries"])
    with pytest.raises(ResultError, match="--verifier"):
        Signer.load_or_create("../x")


@pytest.mark.parametrize("holder", [None, {"who": "x", "role": "robot", "private_key": "y"},
                                    {"who": "", "role": "person", "private_key": "y"}])
def test_a_keyring_key_without_its_holder_is_refused(board, holder):
    path = keyring_folder(board["entries"]) / "alice.json"
    document = json.loads(path.read_text())
    document["holder"] = holder
    path.write_text(json.dumps(document))
    with pytest.raises(ResultError, match="every key names its holder"):
        load_entries(board["entries"])


@pytest.mark.parametrize(("validity", "words"), [
    ({"added": "2026-12-31"}, "before key 'carol' was added"),
    ({"expires": "2026-06-30"}, "after key 'carol' expired"),
    ({"revoked": {"date": "2026-07-02", "reason": "the laptop was stolen"}}, "the laptop was stolen")])
def test_a_record_outside_its_keys_validity_is_a_claim(board, validity, words):
    carol = Signer.load_or_create("carol")
    trust(carol, board["entries"], **{"added": "2026-01-01", **validity})
    result = Result.parse(drawn_result(0.9, 0.5, sha="06" * 32))
    entry = signed(carol, entry_from_result(result, "Carol2026Dated", status="verified"),
                   when=datetime(2026, 7, 1, tzinfo=UTC))
    write_entry(entry, board["entries"])
    loaded = next(e for e in load_entries(board["entries"]) if e["id"] == "Carol2026Dated")
    assert status(loaded) == "unverified-claim" and words in loaded.proof.problem


def test_a_revoked_key_turns_every_row_it_signed_into_a_claim(board, tmp_path):
    from ident3d.cli import main

    entries = board["entries"]
    assert main(["-q", "leaderboard", "keyring", "revoke", "alice", "--reason", "key leaked",
                 "--entries", str(entries)]) == 0
    alice = next(e for e in load_entries(entries) if e["id"] == "Alice2026Signed")
    assert status(alice) == "unverified-claim" and "revoked" in alice.proof.problem


def test_a_verified_draw_below_the_tracks_minimum_is_refused(board):
    small = Result.parse(drawn_result(n=4))
    with pytest.raises(ResultError, match="has at least 2,000"):
        entry_from_result(small, "Mallory2026Tiny", status="verified")
    saved = board["tmp"] / "small.json"
    saved.write_text(json.dumps(drawn_result(0.91, n=4)))  # not the scores of a row already there
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
    write_entry(signed(board["signer"], entry_from_result(result, "Alice2026Dci", status="verified")),
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
    (0.01, 0.05, "may have memorised it"), (-0.0272, -0.0043, "not flagged (old test"),
    (-0.01, 0.02, "not flagged (old test")])
def test_a_gap_judged_before_the_test_says_it_is_the_old_rule(low, high, words):
    gap = {"mcc_pearson": {"ci95": [low, high]}, "linear_r2": {"ci95": [min(low, 0.0), max(high, 0.0)]}}
    assert words in gap_verdict({"gap": gap}, gap, "cl-ica-2021")
    assert "old test, before its false-alarm rate was held" in gap_verdict({"gap": gap}, gap, "cl-ica-2021")
    judged = {"linear_r2": {"p_holm": 0.5, "above_chance": False}}
    assert "memorisation test: not flagged" in gap_verdict({"test": {}}, judged, "cl-ica-2021")


def test_a_signed_record_names_what_was_measured(board):
    entry = json.loads((board["entries"] / "ident3d-eval-v1" / "Alice2026Signed.json").read_text())
    record = entry["verification"]["record"]
    assert record["entry_id"] == "Alice2026Signed" and record["checkpoint_sha256"] == "01" * 32
    assert record["schema"] == "ident3d-verification/2"
    assert record["key_sha256"] == board["signer"].fingerprint
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
    result["dci"] = {**result["fresh"]["dci"], "completeness": 0.45}  # the public split's companions too
    result["ood"] = {"splits": [{"split": "test-corner", "linear_r2": 0.25}]}
    compared = _shown_numbers(result)
    assert {"dci/completeness", "ood/splits/test-corner/linear_r2"} <= set(compared)  # any status
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



def test_a_re_export_of_a_model_on_the_board_is_refused_as_the_same_model(board):
    """Renamed parameters, an unused buffer or a scale folded in give a new sha256 and the same scores:
    one model, one row."""
    saved = board["tmp"] / "reexport.json"
    saved.write_text(json.dumps(fake_result(0.7, 0.7, track=TRACK, sha="0e" * 32)))  # Bob's scores
    added = subprocess.run([sys.executable, "-m", "ident3d.cli", "leaderboard", "add", str(saved), "--id",
                            "Bob2026Reexport", "--entries", str(board["entries"])],
                           capture_output=True, text=True)
    assert added.returncode == 1 and "ident3d-eval-v1/Bob2026Public: scores what this result" in added.stderr
    assert not (board["entries"] / "ident3d-eval-v1" / "Bob2026Reexport.json").exists()
    written_by_hand = json.loads((board["entries"] / "ident3d-eval-v1" / "Bob2026Public.json").read_text())
    written_by_hand["id"] = "Bob2026Copy"
    written_by_hand["result"]["model"]["sha256"] = written_by_hand["checkpoint_sha256"] = "0d" * 32
    (board["entries"] / "ident3d-eval-v1" / "Bob2026Copy.json").write_text(json.dumps(written_by_hand))
    root = board["tmp"]
    build(board["entries"], root / "LEADERBOARD.md", root / "leaderboard" / "site" / "index.html")
    check = subprocess.run([sys.executable, "-m", "ident3d.cli", "leaderboard", "build", "--check",
                            "--entries", str(board["entries"])], capture_output=True, text=True, cwd=root)
    assert check.returncode == 1 and "Bob2026Copy and Bob2026Public: equal scores" in check.stderr.replace(
        "ident3d-eval-v1/", "")
