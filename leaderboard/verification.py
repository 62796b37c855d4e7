"""Signed verification records: "verified" is something only a keyring key can say.

When ``ident3d leaderboard add --checkpoint`` scores a model file on the public split and on a fresh
draw it rendered from an entropy seed, it writes a record of what it measured and signs it with
Ed25519 (RFC 8032, through the ``cryptography`` package). The private key lives in the signer's own
configuration folder (``$XDG_CONFIG_HOME/ident3d/verifiers/NAME.key``, made on first use, mode 0600,
never printed); ``leaderboard add`` never touches the committed keyring (``leaderboard.keyring``):
a row signed by your own key is verified on your copy only once you add your key to your copy's
keyring, and on the public board a maintainer re-verifies it with a key of that keyring.

Record formats:

- ``ident3d-verification/2`` (written now): the entry's id, the checkpoint's and the result's sha256,
  the sha256 of the whole entry but its signature (so every field a row shows is signed: name,
  authors, loss, positives, seed group, footnote...), the signing key's fingerprint, the draw's seed
  and size, track, protocol, library versions and date.
- ``ident3d-verification/1`` (the rows of 2026-12-01 to 12-07): the same without the entry's sha256
  and the fingerprint. It signs the id, the model file and the result (every number, and the model's
  name the result carries), not the entry's description; a board shows of such a row only what the
  record signs (``SIGNED_BY_V1``).

``leaderboard build`` shows a row as verified only when its record's signature checks against a key
of the keyring that was valid on the record's date and the record matches the entry; any other row
that says "verified" is an unverified claim, shown with its reason, and ``build --check`` fails on it.
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

from ident3d.errors import ResultError
from ident3d.leaderboard.keyring import Key, Keyring, check_key_name, fingerprint, read_keyring

RECORD_SCHEMA = "ident3d-verification/2"
RECORD_SCHEMAS = ("ident3d-verification/1", RECORD_SCHEMA)
# What a format-1 record signs of an entry (besides the result, which carries the model's name): the rest
# of such an entry (name, authors, paper, code, training data, positives, loss, space, footnote, seed
# group, archived, metrics_std) was never signed and is not shown for it.
SIGNED_BY_V1 = ("schema", "id", "dataset", "protocol", "status", "metrics", "checkpoint_sha256", "result",
                "verification")
RECORDED_VERSIONS = ("ident3d", "torch", "numpy", "scipy")


def canonical(document: Any) -> bytes:
    """The bytes a record is signed over and a result is hashed over: sorted keys, no spaces, ASCII."""
    return json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=True,
                      allow_nan=False).encode()


def result_sha256(result: Mapping[str, Any]) -> str:
    return hashlib.sha256(canonical(result)).hexdigest()


def entry_sha256(entry: Mapping[str, Any]) -> str:
    """The sha256 of an entry document without its signature: what a format-2 record signs."""
    return hashlib.sha256(canonical({k: v for k, v in entry.items() if k != "verification"})).hexdigest()


def record_for(entry: Mapping[str, Any], key_sha256: str, when: datetime | None = None) -> dict[str, Any]:
    """What a verifier measured for ``entry`` (not yet signed): the result it computed (its sha256 pins
    every number), the whole entry (its sha256 pins every field a row shows), the model file, the fresh
    draw (seed revealed after scoring, so anyone can re-render it), the key and when."""
    result = entry["result"]
    fresh = result["fresh"]
    versions = result.get("versions") or {}
    return {"schema": RECORD_SCHEMA, "entry_id": entry["id"], "checkpoint_sha256": result["model"]["sha256"],
            "result_sha256": result_sha256(result), "entry_sha256": entry_sha256(entry),
            "key_sha256": key_sha256, "fresh_seed": fresh["seed"], "fresh_n": fresh["n"],
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
                                  "verification makes a new key (which a maintainer must add to a keyring).")
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

    @property
    def fingerprint(self) -> str:
        return fingerprint(self.public_key())

    def sign_entry(self, entry: Mapping[str, Any], when: datetime | None = None) -> dict[str, Any]:
        """``entry`` (a verified entry's document) with its ``verification`` field: the record of what
        was measured, the key's name and the signature over the record."""
        unsigned = {k: v for k, v in entry.items() if k != "verification"}
        record = record_for(unsigned, self.fingerprint, when)
        signature = base64.b64encode(self.private.sign(canonical(record))).decode()
        return {**unsigned, "verification": {"record": record, "key": self.name, "signature": signature}}


def _signature_checks(key: Key, proof: Mapping[str, Any]) -> bool:
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    try:
        public = Ed25519PublicKey.from_public_bytes(base64.b64decode(key.ed25519, validate=True))
        public.verify(base64.b64decode(proof["signature"], validate=True), canonical(proof["record"]))
    except (InvalidSignature, ValueError):
        return False
    return True


def verification_problem(entry: Mapping[str, Any], keyring: Keyring) -> tuple[Key | None, str | None]:
    """(the key that signed ``entry``'s record, None) when the record is signed by a keyring key valid
    on its date and matches the entry: its id, model file, the very result it shows, its fresh draw
    and (format 2) every other field; else (None, why not). The key is the one whose public key checks
    the signature (format 2: the fingerprint the record names), never the name written beside it."""
    proof = entry.get("verification")
    if not isinstance(proof, Mapping):
        return None, "no signed verification record (a verified row is one a keyring key signed)"
    record = proof["record"]
    if record.get("schema") not in RECORD_SCHEMAS:
        return None, f"its record's format {record.get('schema')!r} is not one this package reads"
    if record["schema"] == RECORD_SCHEMA:
        named = keyring.by_fingerprint(record["key_sha256"])
        if named is None:
            return None, (f"signed by a key that is not in the keyring (fingerprint "
                          f"{record['key_sha256'][:16]}…, named {proof['key']!r} beside it; only a "
                          "maintainer adds keys to leaderboard/verifiers)")
        candidates = [named]
    else:
        candidates = list(keyring.keys)
    key = next((k for k in candidates if _signature_checks(k, proof)), None)
    if key is None:
        return None, ("the signature does not check against keyring key " + repr(candidates[0].name)
                      if len(candidates) == 1 else "its signature checks against no key of the keyring "
                      f"(leaderboard/verifiers; it names {proof['key']!r})")
    invalid = key.problem_on(record["date"][:10])
    if invalid:
        return None, invalid
    result = entry["result"]
    expected = {"entry_id": entry["id"], "checkpoint_sha256": entry["checkpoint_sha256"],
                "result_sha256": result_sha256(result), "fresh_seed": result["fresh"]["seed"],
                "fresh_n": result["fresh"]["n"], "track": entry["dataset"], "protocol": entry["protocol"]}
    if record["schema"] == RECORD_SCHEMA:
        expected["entry_sha256"] = entry_sha256(entry)
    differing = next((field for field, value in expected.items() if record.get(field) != value), None)
    if differing:
        return None, (f"the signed record's {differing} is not the entry's (the entry was changed after "
                      "signing)")
    return key, None


@dataclass(frozen=True)
class Proof:
    """What ``leaderboard build`` found for a row: the keyring key that signed it (its name, holder
    and fingerprint), whether its record signs every field (format 2) or the scores only, or why its
    claim fails."""

    signer: str | None = None
    problem: str | None = None
    holder: str | None = None
    fingerprint: str | None = None
    signs_every_field: bool = False


def proof_of(entry: Mapping[str, Any], keyring: Keyring) -> Proof:
    key, problem = verification_problem(entry, keyring)
    if key is None:
        return Proof(problem=problem)
    return Proof(key.name, None, key.who, key.fingerprint,
                 entry["verification"]["record"]["schema"] == RECORD_SCHEMA)


def prove(entries: list[Mapping[str, Any]], keyring: Path | Keyring) -> list[Proof | None]:
    """For each entry, in order: who signed it, or why its "verified" is an unverified claim; None for
    an entry that does not say verified."""
    keys = keyring if isinstance(keyring, Keyring) else read_keyring(keyring)
    return [proof_of(entry, keys) if entry["status"] == "verified" else None for entry in entries]
