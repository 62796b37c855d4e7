"""Signed verification records: "verified" is something only a verifier's key can say.

When ``ident3d leaderboard add --checkpoint`` scores a model file on the public split and on a fresh
draw it rendered from an entropy seed, it writes a record of what it measured (the entry's id, the
checkpoint's and the result's sha256, the draw's seed and size, track, protocol, library versions,
date) and signs it with Ed25519 (RFC 8032, through the ``cryptography`` package). The private key
lives in the verifier's own configuration folder (``$XDG_CONFIG_HOME/ident3d/verifiers/NAME.key``,
made on first use, mode 0600, never printed); its public key is a file of the committed keyring
(``leaderboard/verifiers/NAME.json``: name, who, when, key), so adding a verifier is a visible
change in review.

``leaderboard build`` shows a row as verified only when its record's signature checks against a
keyring key and the record matches the entry (the result's sha256 covers every number the row
shows); any other row that says "verified" is an unverified claim, shown with its reason, and
``build --check`` fails on it.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ident3d import atomic
from ident3d.errors import ResultError
from ident3d.readers import read_json

RECORD_SCHEMA = "ident3d-verification/1"
KEY_NAME = re.compile(r"[a-z0-9][a-z0-9-]{0,39}")
RECORDED_VERSIONS = ("ident3d", "torch", "numpy", "scipy")


def canonical(document: Any) -> bytes:
    """The bytes a record is signed over and a result is hashed over: sorted keys, no spaces, ASCII."""
    return json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=True,
                      allow_nan=False).encode()


def result_sha256(result: Mapping[str, Any]) -> str:
    return hashlib.sha256(canonical(result)).hexdigest()


def record_for(entry_id: str, result: Mapping[str, Any], when: datetime | None = None) -> dict[str, Any]:
    """What a verifier measured for entry ``entry_id``: the result it computed (its sha256 pins every
    number), the model file, the fresh draw (seed revealed after scoring, so anyone can re-render it),
    and when."""
    fresh = result["fresh"]
    versions = result.get("versions") or {}
    return {"schema": RECORD_SCHEMA, "entry_id": entry_id, "checkpoint_sha256": result["model"]["sha256"],
            "result_sha256": result_sha256(result), "fresh_seed": fresh["seed"], "fresh_n": fresh["n"],
            "track": fresh["track"], "protocol": result["protocol"],
            "versions": {name: versions.get(name) for name in RECORDED_VERSIONS},
            "date": (when or datetime.now(UTC)).strftime("%Y-%m-%dT%H:%M:%SZ")}


def config_folder() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config"
    return Path(base) / "ident3d" / "verifiers"


def default_key_name() -> str:
    """The verifier's key name: ``IDENT3D_VERIFIER``, else the login name in the keyring's alphabet."""
    name = os.environ.get("IDENT3D_VERIFIER") or os.environ.get("USER") or "verifier"
    return re.sub(r"[^a-z0-9-]+", "-", name.lower()).strip("-")[:40] or "verifier"


def check_key_name(name: str) -> str:
    if not KEY_NAME.fullmatch(name):
        raise ResultError(f"--verifier {name!r}: a key name is 1-40 lower-case letters, digits and hyphens "
                          "(starting with a letter or digit). Fix: pass such a name.")
    return name


@dataclass(frozen=True)
class Signer:
    """A verifier's private key, loaded from (or made in) its configuration folder."""

    name: str
    private: Any  # cryptography's Ed25519PrivateKey

    @classmethod
    def load_or_create(cls, name: str, folder: Path | None = None) -> Signer:
        from cryptography.hazmat.primitives import serialization
        from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

        path = (folder or config_folder()) / f"{check_key_name(name)}.key"
        if path.exists():
            if path.stat().st_mode & 0o077:
                raise ResultError(f"{path}: the verifier's private key is readable by others. Fix: "
                                  f"chmod 600 {path}")
            try:
                key = serialization.load_pem_private_key(path.read_bytes(), password=None)
            except ValueError:
                key = None
            if not isinstance(key, Ed25519PrivateKey):
                raise ResultError(f"{path}: not an Ed25519 private key in PEM. Fix: move it away; the next "
                                  "verification makes a new key (and a new keyring file to commit).")
            return cls(name, key)
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        key = Ed25519PrivateKey.generate()
        pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption())
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(descriptor, "wb") as f:
            f.write(pem)
        return cls(name, key)

    def public_key(self) -> str:
        from cryptography.hazmat.primitives import serialization

        raw = self.private.public_key().public_bytes(serialization.Encoding.Raw,
                                                     serialization.PublicFormat.Raw)
        return base64.b64encode(raw).decode()

    def sign(self, record: Mapping[str, Any]) -> dict[str, Any]:
        """The entry's ``verification`` field: the record, the key's name and the signature."""
        signature = base64.b64encode(self.private.sign(canonical(record))).decode()
        return {"record": dict(record), "key": self.name, "signature": signature}


def keyring_folder(entries: Path) -> Path:
    """The committed keyring beside an entries folder: ``leaderboard/verifiers``."""
    return Path(entries).parent / "verifiers"


def publish_key(signer: Signer, keyring: Path, who: str | None = None) -> Path | None:
    """Write the signer's public key into the keyring when it is not there yet; returns the new file
    (to commit), or None when the keyring already holds this key. A keyring file of the same name
    with another key is refused, never replaced."""
    path = Path(keyring) / f"{signer.name}.json"
    if path.exists():
        if read_keyring(keyring).get(signer.name) != signer.public_key():
            raise ResultError(f"{path}: the keyring's key {signer.name!r} is not this machine's key "
                              f"({config_folder() / (signer.name + '.key')}). Fix: pass --verifier with a "
                              "new name, or restore the private key that belongs to it.")
        return None
    keyring.mkdir(parents=True, exist_ok=True)
    atomic.write_json(path, {"name": signer.name, "who": who or signer.name,
                             "added": datetime.now(UTC).strftime("%Y-%m-%d"),
                             "ed25519": signer.public_key()})
    return path


def read_keyring(keyring: Path) -> dict[str, str]:
    """Key name -> base64 public key, for every file of the keyring (none when there is no keyring)."""
    out = {}
    for path in sorted(Path(keyring).glob("*.json")):
        document = read_json(path, ResultError, "fix or remove this keyring file")
        named = document.get("name") if isinstance(document, dict) else None
        key = document.get("ed25519") if isinstance(document, dict) else None
        if named != path.stem or not isinstance(key, str) or not KEY_NAME.fullmatch(path.stem):
            raise ResultError(f"{path}: a keyring file holds name (its file name) and ed25519 (a base64 "
                              "public key). Fix: correct or remove it.")
        out[path.stem] = key
    return out


def verification_problem(entry: Mapping[str, Any], keyring: Mapping[str, str]) -> str | None:
    """Why ``entry``'s verified status is not proven, or None when its record is signed by a keyring
    key and matches the entry: its id, model file, the very result it shows, and its fresh draw."""
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    proof = entry.get("verification")
    if not isinstance(proof, Mapping):
        return "no signed verification record (a verified row is one a verifier signed)"
    public = keyring.get(proof["key"])
    if public is None:
        return f"signed by {proof['key']!r}, which is not in the keyring (leaderboard/verifiers)"
    record = proof["record"]
    try:
        key = Ed25519PublicKey.from_public_bytes(base64.b64decode(public, validate=True))
        key.verify(base64.b64decode(proof["signature"], validate=True), canonical(record))
    except (InvalidSignature, ValueError):
        return f"the signature does not check against key {proof['key']!r}"
    result = entry["result"]
    expected = {"entry_id": entry["id"], "checkpoint_sha256": entry["checkpoint_sha256"],
                "result_sha256": result_sha256(result), "fresh_seed": result["fresh"]["seed"],
                "fresh_n": result["fresh"]["n"], "track": entry["dataset"], "protocol": entry["protocol"]}
    differing = next((field for field, value in expected.items() if record.get(field) != value), None)
    if differing:
        return f"the signed record's {differing} is not the entry's (the entry was changed after signing)"
    return None


@dataclass(frozen=True)
class Proof:
    """What ``leaderboard build`` found for a row: the key that signed it, or why its claim fails."""

    signer: str | None = None
    problem: str | None = None


def prove(entries: list[Mapping[str, Any]], keyring: Path) -> list[Proof | None]:
    """For each entry, in order: who signed it, or why its "verified" is an unverified claim; None for
    an entry that does not say verified."""
    keys = read_keyring(keyring) if Path(keyring).is_dir() else {}
    out: list[Proof | None] = []
    for entry in entries:
        if entry["status"] != "verified":
            out.append(None)
            continue
        problem = verification_problem(entry, keys)
        out.append(Proof(None if problem else entry["verification"]["key"], problem))
    return out
