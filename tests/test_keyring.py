"""The keyring is the root of trust (docs/leaderboard.md, "Who can say verified"): every shown field
of a verified row is signed or not shown, and a change is judged against its base's keyring, so no
change can verify itself: tested on a temporary git repository with real keys."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest
from test_verification import board, drawn_result, signed, trust  # noqa: F401 - board: a fixture

from ident3d.leaderboard.build import build
from ident3d.leaderboard.entries import ENTRIES_DIR, entry_from_result, load_entries, write_entry
from ident3d.leaderboard.keyring import keyring_folder
from ident3d.leaderboard.markdown import render_markdown
from ident3d.leaderboard.ranking import ranked_tables, status
from ident3d.leaderboard.site import render_site
from ident3d.leaderboard.verification import Signer
from ident3d.results import Result

SHOWN = {"name": "Mallory's best", "authors": ["M. Allory"], "paper": "https://example.org/p",
         "code": "https://example.org/c", "training_data": "everything", "positives": "none (supervised)",
         "loss": "none (linear read-out from pixels)", "model_space": "sphere", "footnote": "trust me",
         "seed_group": "mallory", "archived": "hidden", "metrics_std": {"linear_r2": 0.0003}}


@pytest.mark.parametrize("field", sorted(SHOWN))
def test_editing_any_field_of_a_format_2_verified_row_makes_it_a_claim(board, field):  # noqa: F811
    alice_board = board["entries"]
    path = alice_board / "ident3d-eval-v1" / "Alice2026Signed.json"
    document = json.loads(path.read_text())
    document[field] = SHOWN[field]
    path.write_text(json.dumps(document))
    if field == "metrics_std":  # a spread on one run is refused outright
        with pytest.raises(Exception, match="field metrics_std"):
            load_entries(alice_board)
        return
    entry = next(e for e in load_entries(alice_board) if e["id"] == "Alice2026Signed")
    assert status(entry) == "unverified-claim" and "entry_sha256" in entry.proof.problem


@pytest.fixture(scope="module")
def committed_copy(tmp_path_factory):
    folder = tmp_path_factory.mktemp("committed") / "leaderboard"
    shutil.copytree(ENTRIES_DIR, folder / "entries")
    shutil.copytree(keyring_folder(ENTRIES_DIR), folder / "verifiers")
    return folder / "entries"


@pytest.mark.parametrize("field", sorted(set(SHOWN) - {"metrics_std"}))
def test_editing_an_unsigned_field_of_a_format_1_row_changes_nothing_shown(committed_copy, field):
    """A row verified before records signed the whole entry shows only what its record signed."""
    path = committed_copy / "ident3d-eval-v1" / "Ident2026CpuTrack_v2-supervised-verified.json"
    original = path.read_text()
    before = load_entries(committed_copy)
    try:
        path.write_text(json.dumps({**json.loads(original), field: SHOWN[field]}))
        after = load_entries(committed_copy)
        assert render_markdown(after) == render_markdown(before)
        assert render_site(after) == render_site(before)
    finally:
        path.write_text(original)


def test_the_committed_board_keeps_its_verified_rows_and_ranks_them_first(committed_copy):
    entries = load_entries(committed_copy)
    assert sum(status(e) == "verified" for e in entries) >= 30
    invented = Result.parse(drawn_result(0.99, 0.99, sha="0f" * 32))  # written by hand, no model
    write_entry(entry_from_result(invented, "Mallory2026Invented", status="public-split"), committed_copy)
    try:
        for rows in ranked_tables(load_entries(committed_copy)).values():
            tiers = [status(row) != "verified" for row in rows]
            assert tiers == sorted(tiers), "an unverified row above a verified one"
    finally:
        (committed_copy / "ident3d-eval-v1" / "Mallory2026Invented.json").unlink()


def git(repo, *args):
    return subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t", *args],
                          check=True, capture_output=True, text=True).stdout


@pytest.fixture
def repository(tmp_path, monkeypatch):
    """A git repository whose main branch holds a board signed by the maintainers' key."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    repo = tmp_path / "repo"
    entries = repo / "leaderboard" / "entries"
    entries.mkdir(parents=True)
    team = Signer.load_or_create("team")
    trust(team, entries)
    result = Result.parse(drawn_result(0.9, 0.6, sha="11" * 32))
    write_entry(signed(team, entry_from_result(result, "Team2026Base", status="verified")), entries)
    build(entries, repo / "LEADERBOARD.md", repo / "leaderboard" / "site" / "index.html")
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "base")
    return repo


def check(repo):
    return subprocess.run([sys.executable, "-m", "ident3d.cli", "leaderboard", "build", "--check", "--base",
                           "main", "--entries", str(repo / "leaderboard" / "entries")],
                          capture_output=True, text=True, cwd=repo)


def change(repo, *, key: bool, entry: str | None, signer: str = "mallory"):
    entries = repo / "leaderboard" / "entries"
    git(repo, "checkout", "-q", "-b", f"change-{key}-{entry}-{signer}")
    who = Signer.load_or_create(signer)
    if key:
        trust(who, entries)
    if entry:
        result = Result.parse(drawn_result(0.99, 0.99, sha="22" * 32))
        write_entry(signed(who, entry_from_result(result, entry, status="verified")), entries)
    build(entries, repo / "LEADERBOARD.md", repo / "leaderboard" / "site" / "index.html")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "change")


def test_a_change_that_adds_a_key_and_an_entry_it_signs_fails_naming_the_key(repository):
    change(repository, key=True, entry="Mallory2026Forged")
    out = check(repository)
    assert out.returncode == 1
    assert "Mallory2026Forged: verified by key 'mallory' of this change's keyring" in out.stderr
    assert "a change cannot verify itself" in out.stderr
    assert check_without_base(repository).returncode == 0  # its own keyring alone would accept it


def check_without_base(repo):
    return subprocess.run([sys.executable, "-m", "ident3d.cli", "leaderboard", "build", "--check",
                           "--entries", str(repo / "leaderboard" / "entries")],
                          capture_output=True, text=True, cwd=repo)


def test_a_change_that_adds_only_a_key_passes_with_a_notice(repository):
    change(repository, key=True, entry=None)
    out = check(repository)
    assert out.returncode == 0, out.stderr
    assert "notice: key 'mallory' is new in this change" in out.stdout


def test_entries_signed_by_a_key_already_in_the_base_pass(repository):
    change(repository, key=False, entry="Team2026Second", signer="team")
    out = check(repository)
    assert out.returncode == 0, out.stderr
    assert "notice" not in out.stdout


def test_a_renamed_key_fails_and_a_bad_base_is_one_error_line(repository):
    verifiers = repository / "leaderboard" / "verifiers"
    git(repository, "checkout", "-q", "-b", "rename")
    document = json.loads((verifiers / "team.json").read_text())
    (verifiers / "team.json").unlink()
    (verifiers / "independent-lab.json").write_text(json.dumps({**document, "name": "independent-lab"}))
    build(repository / "leaderboard" / "entries", repository / "LEADERBOARD.md",
          repository / "leaderboard" / "site" / "index.html")
    git(repository, "add", "-A")
    git(repository, "commit", "-q", "-m", "rename")
    out = check(repository)
    assert out.returncode == 1 and "its key is 'team' on main and 'independent-lab'" in out.stderr
    wrong = subprocess.run([sys.executable, "-m", "ident3d.cli", "leaderboard", "build", "--base", "nowhere",
                            "--entries", str(repository / "leaderboard" / "entries")],
                           capture_output=True, text=True, cwd=repository)
    assert wrong.returncode == 1 and wrong.stderr.count("\n") == 1 and "--base nowhere" in wrong.stderr
