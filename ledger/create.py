"""Creating a ledger: database, log key (signs checkpoints), authority key (attests).

Two keys, on purpose: the log key signs tree heads and nothing else, the authority key
signs governance objects (identities, revocations, burn notices). A leaked log key lets
someone sign a forged tree head, which auditors catch with consistency proofs; it does
not let them register verifiers. Neither private key ever enters the database; the
database records both public keys in ``meta``.
"""

from __future__ import annotations

import base64
import os
import secrets
from pathlib import Path

from ledger.errors import KeyFileError, RuleViolation
from ledger.files import require_regular, shown
from ledger.log.note import verifier_key
from ledger.store.base import Store
from ledger.store.location import DbLocation, PostgresURL, SQLitePath, parse_location
from ledger.store.sqlite import create_store
from ledger.trust.keys import generate_key_file, key_id, public_key_path, public_key_raw


def default_origin() -> str:
    """A unique log origin (C2SP: schema-less, URL-like)."""
    return f"provledger.local/log/{secrets.token_hex(8)}"


def initialise(
    db: DbLocation | Path, origin: str | None, log_key: Path, authority_key: Path
) -> dict[str, object]:
    """Create the ledger and both key pairs; refuse to touch an existing ledger (a
    ``Path`` is an SQLite file)."""
    location = parse_location(db)
    if isinstance(location, SQLitePath):
        file = location.path
        # Before anything is written: a FIFO, device or directory is no place for a ledger.
        require_regular(file, "ledger")
        if file.exists() and file.stat().st_size > 0:
            raise RuleViolation(f"ledger already exists, got {file}, expected a new path")
    origin = origin or default_origin()
    if not origin or any(c.isspace() for c in origin) or "+" in origin:
        raise RuleViolation(
            f"log origin, got {origin!r}, expected a non-empty name without spaces or '+'"
        )
    # Every path is checked before anything is written: a refused init leaves nothing.
    targets = [log_key, public_key_path(log_key), authority_key, public_key_path(authority_key)]
    if len({os.path.abspath(t) for t in targets}) != len(targets):
        raise KeyFileError(
            f"key files, got {shown(log_key)} and {shown(authority_key)},"
            " expected two different paths"
        )
    for target in targets:
        if os.path.lexists(target):
            raise KeyFileError(
                f"key file {shown(target)} already exists, got an existing file,"
                " expected a new path"
            )
    extra: dict[str, object] = {}
    store: Store | None = None
    if isinstance(location, PostgresURL):
        from ledger.store import postgres

        # Tables first: a database that already holds a ledger is refused before any
        # key file is written.
        store, pending = postgres.create_store(location)
        extra = {
            "pg_writer_role": store.get_meta("pg_writer_role"),
            "pg_auditor_role": store.get_meta("pg_auditor_role"),
            "pg_grants": pending,
        }
    log_private, log_id = generate_key_file(log_key)
    auth_private, auth_id = generate_key_file(authority_key)
    vkey = verifier_key(origin, log_private.public_key())
    if isinstance(location, SQLitePath):
        store = create_store(location.path)
    assert store is not None  # a location is a file or a database
    try:
        store.set_meta("origin", origin)
        store.set_meta("log_verifier_key", vkey)
        store.set_meta("log_key_id", log_id)
        store.set_meta(
            "authority_public_key",
            base64.b64encode(public_key_raw(auth_private.public_key())).decode("ascii"),
        )
        store.set_meta("authority_key_id", key_id(auth_private.public_key()))
    finally:
        store.close()
    return {
        "db": location.shown,
        "origin": origin,
        "log_key_file": shown(log_key),
        "log_key_id": log_id,
        "log_verifier_key": vkey,
        "authority_key_file": shown(authority_key),
        "authority_key_id": auth_id,
        **extra,
    }
