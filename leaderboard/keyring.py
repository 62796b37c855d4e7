"""The keyring: the public keys whose signatures make a row verified, each with its holder.

One JSON file a key in ``leaderboard/verifiers/NAME.json``::

    {"schema": "ident3d-keyring-key/1", "name": "ident3d-team-2026-12-02",
     "ed25519": "<base64 public key>",
     "holder": {"who": "ident3d maintainers", "role": "machine",
                "private_key": "where the private half is kept"},
     "added": "2026-12-02", "expires": "2026-12-03",
     "revoked": null}

- A record signed outside its key's validity is an unverified claim: dated before ``added`` or after
  ``expires`` (both days included).
- ``revoked`` (``{"date", "reason"}``) is for a private key that may be in other hands: whoever holds
  it can write any date, so every record it ever signed becomes an unverified claim, whatever its
  date, until a maintainer re-verifies the model with another key. A key that is merely retired
  (its machine is gone, its holder left) gets an ``expires`` date instead: what it signed stands.
- The signer a row shows is the keyring's name for the public key that checks, found by the key's
  fingerprint (sha256 of its 32 bytes), never by a file name: two files holding one key are refused.

Only a maintainer changes the keyring, with ``ident3d leaderboard keyring add`` and ``revoke``
(never ``leaderboard add``), and ``leaderboard build --check --base REF`` judges a change against the
keyring of the branch it goes into (``leaderboard.base_check``), so no change can verify itself.
"""

from __future__ import annotations

import base64
import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any

from ident3d import atomic
from ident3d.errors import ResultError
from ident3d.readers import read_json

KEY_SCHEMA = "ident3d-keyring-key/1"
KEY_NAME = re.compile(r"[a-z0-9][a-z0-9-]{0,39}")
ROLES = ("person", "machine")
DAY = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")


def fingerprint(public_key: str) -> str:
    """The sha256 (hex) of a base64 Ed25519 public key's 32 bytes: what binds a record to its key."""
    return hashlib.sha256(base64.b64decode(public_key, validate=True)).hexdigest()


@dataclass(frozen=True)
class Key:
    """One keyring key: its name, public key, holder and validity."""

    name: str
    ed25519: str
    who: str
    role: str
    private_key: str
    added: str
    expires: str | None = None
    revoked: Mapping[str, str] | None = None

    @property
    def fingerprint(self) -> str:
        return fingerprint(self.ed25519)

    def problem_on(self, day: str) -> str | None:
        """Why a record dated ``day`` (YYYY-MM-DD) is outside this key's validity, or None."""
        if self.revoked:
            return (f"key {self.name!r} was revoked on {self.revoked['date']} ({self.revoked['reason']}); "
                    "every record it signed is a claim until re-verified with another key")
        if day < self.added:
            return f"the record is dated {day}, before key {self.name!r} was added ({self.added})"
        if self.expires is not None and day > self.expires:
            return f"the record is dated {day}, after key {self.name!r} expired ({self.expires})"
        return None

    def document(self) -> dict[str, Any]:
        return {"schema": KEY_SCHEMA, "name": self.name, "ed25519": self.ed25519,
                "holder": {"who": self.who, "role": self.role, "private_key": self.private_key},
                "added": self.added, "expires": self.expires,
                "revoked": dict(self.revoked) if self.revoked else None}


@dataclass(frozen=True)
class Keyring:
    """The keys of one keyring folder, by name and by fingerprint."""

    keys: tuple[Key, ...] = ()

    def by_fingerprint(self, print_: str) -> Key | None:
        return next((k for k in self.keys if k.fingerprint == print_), None)

    def by_name(self, name: str) -> Key | None:
        return next((k for k in self.keys if k.name == name), None)


def check_key_name(name: str, flag: str = "--verifier") -> str:
    if not KEY_NAME.fullmatch(name):
        raise ResultError(f"{flag} {name!r}: a key name is 1-40 lower-case letters, digits and hyphens "
                          "(starting with a letter or digit). Fix: pass such a name.")
    return name


def _day(value: Any, where: str, field: str, optional: bool = False) -> str | None:
    if value is None and optional:
        return None
    if not isinstance(value, str) or not DAY.fullmatch(value):
        raise ResultError(f"{where}: field {field}: {value!r} is not a date YYYY-MM-DD. Fix: correct it.")
    try:
        date.fromisoformat(value)
    except ValueError:
        raise ResultError(f"{where}: field {field}: {value!r} is not a calendar date. Fix: correct it."
                          ) from None
    return value


def parse_key(document: Any, where: str, stem: str, legacy: bool = False) -> Key:
    """A keyring file's key; every field checked, the holder required. With ``legacy`` (a base
    branch's keyring, judged by ``base_check``) a file of the first format (name, who, added,
    ed25519; no validity) is read too: it trusted its key from ``added`` on."""
    if legacy and isinstance(document, dict) and "schema" not in document:
        document = {"schema": KEY_SCHEMA, "name": document.get("name"), "ed25519": document.get("ed25519"),
                    "holder": {"who": str(document.get("who") or stem), "role": "machine",
                               "private_key": "not stated (keyring format of before 2026-12-08)"},
                    "added": document.get("added"), "expires": None, "revoked": None}
    if not isinstance(document, dict) or document.get("schema") != KEY_SCHEMA:
        raise ResultError(f"{where}: not a keyring key (schema {KEY_SCHEMA!r}: name, ed25519, holder, added, "
                          "expires, revoked). Fix: write it with `ident3d leaderboard keyring add`.")
    extra = sorted(set(document) - {"schema", "name", "ed25519", "holder", "added", "expires", "revoked"})
    if extra:
        raise ResultError(f"{where}: field {extra[0]}: not a keyring field. Fix: remove it.")
    name, public = document.get("name"), document.get("ed25519")
    if name != stem or not isinstance(name, str) or not KEY_NAME.fullmatch(name):
        raise ResultError(f"{where}: field name: {name!r} must be the file's name {stem!r} (lower-case "
                          "letters, digits, hyphens). Fix: rename the file or correct the field.")
    try:
        if not isinstance(public, str) or len(base64.b64decode(public, validate=True)) != 32:
            raise ValueError
    except ValueError:
        raise ResultError(f"{where}: field ed25519: not a base64 Ed25519 public key (32 bytes). Fix: copy "
                          "the key `ident3d leaderboard keyring add` printed.") from None
    holder = document.get("holder")
    if not isinstance(holder, dict) or set(holder) != {"who", "role", "private_key"} or not all(
            isinstance(v, str) and v.strip() for v in holder.values()) or holder["role"] not in ROLES:
        raise ResultError(f"{where}: field holder: every key names its holder: who (a person or team), role "
                          f"({' or '.join(ROLES)}) and private_key (where its private half is kept). Fix: "
                          "fill in all three.")
    revoked = document.get("revoked")
    if revoked is not None:
        if not isinstance(revoked, dict) or set(revoked) != {"date", "reason"} or not isinstance(
                revoked["reason"], str) or not revoked["reason"].strip():
            raise ResultError(f"{where}: field revoked: null, or {{\"date\": YYYY-MM-DD, \"reason\": ...}}. "
                              "Fix: correct it (`ident3d leaderboard keyring revoke` writes it).")
        _day(revoked["date"], where, "revoked/date")
    added = _day(document.get("added"), where, "added")
    expires = _day(document.get("expires"), where, "expires", optional=True)
    assert added is not None
    return Key(name, public, holder["who"], holder["role"], holder["private_key"], added, expires, revoked)


def read_keyring(folder: Path) -> Keyring:
    """Every key of a keyring folder (none when there is no folder); one key, one file."""
    keys = []
    for path in sorted(Path(folder).glob("*.json")) if Path(folder).is_dir() else []:
        keys.append(parse_key(read_json(path, ResultError, "fix or remove this keyring file"), str(path),
                              path.stem))
    return keyring_of(keys, str(folder))


def keyring_of(keys: list[Key], where: str) -> Keyring:
    _refuse_shared_keys(keys, where)
    return Keyring(tuple(keys))


def _refuse_shared_keys(keys: list[Key], where: str) -> None:
    seen: dict[str, str] = {}
    for key in keys:
        other = seen.setdefault(key.fingerprint, key.name)
        if other != key.name:
            raise ResultError(f"{where}: keys {other!r} and {key.name!r} hold one public key; a key has one "
                              "name, the one its rows show. Fix: remove one of the two files.")


def keyring_folder(entries: Path) -> Path:
    """The committed keyring beside an entries folder: ``leaderboard/verifiers``."""
    return Path(entries).parent / "verifiers"


def add_key(folder: Path, key: Key) -> Path:
    """Write a new key file (the maintainer's command); a name or a public key already there is refused."""
    check_key_name(key.name, "--name")
    keyring = read_keyring(folder)
    path = Path(folder) / f"{key.name}.json"
    if keyring.by_name(key.name) or path.exists():
        raise ResultError(f"{path}: the keyring already has a key named {key.name!r}. Fix: choose another "
                          "--name (a key is never replaced: revoke the old one and add a new one).")
    twin = keyring.by_fingerprint(key.fingerprint)
    if twin:
        raise ResultError(f"--public-key: the keyring already holds this key as {twin.name!r}. Fix: use that "
                          "key; a key has one name.")
    parse_key(key.document(), str(path), key.name)  # the holder and dates as the reader wants them
    Path(folder).mkdir(parents=True, exist_ok=True)
    atomic.write_json(path, key.document())
    return path


def revoke_key(folder: Path, name: str, reason: str, day: str) -> Path:
    """Mark a key revoked (kept in the keyring, so its records are shown as claims with the reason)."""
    key = read_keyring(folder).by_name(name)
    path = Path(folder) / f"{name}.json"
    if key is None:
        raise ResultError(f"{path}: no key {name!r} in the keyring. Fix: `ident3d leaderboard keyring list` "
                          "names them.")
    if key.revoked:
        raise ResultError(f"{path}: key {name!r} was already revoked on {key.revoked['date']}.")
    if not reason.strip():
        raise ResultError("--reason: say why the key is revoked (it is shown beside every row it signed).")
    _day(day, "--date", "date")
    revoked = Key(**{**key.__dict__, "revoked": {"date": day, "reason": reason.strip()}})
    atomic.write_json(path, revoked.document())
    return path
