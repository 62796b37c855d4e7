"""``ident3d leaderboard build --check --base REF``: a change cannot verify itself.

The keyring a change brings is the change's own say-so; the keyring of the branch it goes into
(``REF``, read with git) is what reviewers already accepted. Every row the change's board shows as
verified must also be verified under REF's keyring, by a key of the same name: so a key added or
edited together with entries it signs fails, naming the key, and the key has to land on its own
first (a maintainer's change, reviewed for its holder). A change that only adds a key passes with a
notice; so does a change to a key's holder text or a tighter validity. This is how TUF and sigstore
guard their roots: new trust is signed off by the trust already in place.
"""

from __future__ import annotations

import subprocess
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ident3d.errors import ResultError
from ident3d.leaderboard.keyring import Key, Keyring, keyring_of, parse_key
from ident3d.leaderboard.verification import verification_problem


def _git(repository: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(["git", "-C", str(repository), *args], capture_output=True, check=False)


def keyring_at(ref: str, folder: Path) -> Keyring:
    """The keyring ``folder`` held at git ref ``ref`` (empty when it had none)."""
    import json

    folder = Path(folder).resolve()
    probe = folder if folder.is_dir() else folder.parent
    top = _git(probe, "rev-parse", "--show-toplevel")
    if top.returncode != 0:
        raise ResultError(f"--base {ref}: {folder} is not inside a git repository. Fix: run the check in a "
                          "clone (CI checks out the pull request with its history).")
    root = Path(top.stdout.decode().strip())
    if _git(root, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}").returncode != 0:
        raise ResultError(f"--base {ref}: not a commit of the repository at {root}. Fix: fetch it "
                          f"(git fetch origin main) and pass it, e.g. --base origin/main.")
    relative = folder.relative_to(root).as_posix()
    listed = _git(root, "ls-tree", "-z", "--name-only", ref, "--", f"{relative}/")
    keys = []
    for name in filter(None, listed.stdout.decode().split("\0")):
        if not name.endswith(".json"):
            continue
        shown = _git(root, "show", f"{ref}:{name}")
        where = f"{ref}:{name}"
        try:
            document = json.loads(shown.stdout)
        except ValueError:
            raise ResultError(f"{where}: not JSON. Fix: the base branch's keyring must be readable."
                              ) from None
        keys.append(parse_key(document, where, Path(name).stem, legacy=True))
    return keyring_of(keys, f"{ref}:{relative}")


@dataclass
class Judgement:
    problems: list[str] = field(default_factory=list)  # each fails the check
    notices: list[str] = field(default_factory=list)  # each is printed for the reviewers


def judge(entries: list[Mapping[str, Any]], head: Keyring, base: Keyring, ref: str) -> Judgement:
    """Every verified row under ``head`` must be verified under ``base`` by the same key name; new,
    edited and removed keys are named."""
    out = Judgement()
    for entry in entries:
        proof = getattr(entry, "proof", None)
        if entry["status"] != "verified" or proof is None or proof.signer is None:
            continue
        key, problem = verification_problem(entry, base)
        where = f"{entry['protocol']}/{entry['id']}"
        if key is None:
            out.problems.append(
                f"{where}: verified by key {proof.signer!r} of this change's keyring, but not under {ref}'s "
                f"({problem}); a change cannot verify itself. Fix: land key {proof.signer!r} on its own "
                "first (a maintainer's change, reviewed for its holder), then the entries it signs.")
        elif key.name != proof.signer:
            out.problems.append(f"{where}: its key is {key.name!r} on {ref} and {proof.signer!r} in this "
                                "change; a renamed key changes what every row it signed shows. Fix: keep "
                                f"the name {key.name!r}.")
    for key in head.keys:
        before = base.by_fingerprint(key.fingerprint)
        if before is None:
            out.notices.append(f"key {key.name!r} is new in this change (holder: {key.who}, {key.role}; "
                               f"private key: {key.private_key}): the rows it signs can land once it is on "
                               f"{ref}")
        elif _described(before) != _described(key):
            out.notices.append(f"key {key.name!r} changed its holder or validity: {_described(before)} -> "
                               f"{_described(key)}")
    for key in base.keys:
        if head.by_fingerprint(key.fingerprint) is None:
            out.notices.append(f"key {key.name!r} of {ref} is removed: the rows it signed are unverified "
                               "claims")
    return out


def _described(key: Key) -> str:
    revoked = f", revoked {key.revoked['date']}" if key.revoked else ""
    return f"{key.who} ({key.role}; {key.private_key}), {key.added} to {key.expires or 'no expiry'}{revoked}"
