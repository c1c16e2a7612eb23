"""What ``provledger verify`` checks of a PostgreSQL ledger beyond the log itself.

The PostgreSQL half of ``AuditSource.storage_findings``: the database must hold exactly
the schema ``create_store`` made (tables, columns with type, nullability and the byte
collation "C", indexes, no rewrite rules, no row-level policies), the append-only guard
function with its exact body, every trigger enabled, BEFORE its operation and calling
the guard, the server's derivations (tree nodes, totals) with their exact bodies, run
with the owner's rights by statement-level AFTER INSERT triggers on ``entries`` and
``objects`` (no other trigger on a ledger table), and the roles ``init`` recorded with
exactly their rights: the writer INSERT and SELECT (SELECT only on the derived
``tree_nodes`` and ``kind_totals``), the auditor SELECT, PUBLIC nothing, neither role
owning a ledger table (an owner could drop a trigger).

Finding codes match SQLite's where the meaning is the same (``schema-missing``,
``schema-altered``, ``schema-extra``, ``trigger-missing``, ``trigger-altered``,
``trigger-unexpected``); the server adds ``trigger-disabled``, ``grant-missing`` and
``grant-wrong``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from ledger.store.base import SQLValue, StorageFinding
from ledger.store.postgres_schema import (
    ALL_TABLES,
    DEFINER_FUNCTIONS,
    DERIVE_TRIGGERS,
    FUNCTIONS,
    privileges,
    triggers,
)


class Catalog(Protocol):
    def catalog(self, query: str, args: Sequence[SQLValue] = ()) -> list[SQLValue]: ...
    def get_meta(self, key: str) -> str | None: ...


# The exact columns ``_DDL`` creates: (table, column) -> (type, nullable). ``verify``
# reports any difference (an added, dropped or retyped column) as ``schema-altered``.
EXPECTED_COLUMNS: dict[tuple[str, str], tuple[str, bool]] = {
    ("meta", "key"): ("text", False),
    ("meta", "value"): ("text", False),
    ("entries", "seq"): ("bigint", False),
    ("entries", "digest"): ("text", False),
    ("entries", "kind"): ("text", False),
    ("entries", "appended_at"): ("text", False),
    ("objects", "digest"): ("text", False),
    ("objects", "seq"): ("bigint", False),
    ("objects", "kind"): ("text", False),
    ("objects", "schema_version"): ("text", True),
    ("objects", "object_id"): ("text", True),
    ("objects", "object_version"): ("bigint", True),
    ("objects", "legacy_digest"): ("text", True),
    ("objects", "legacy_hints"): ("text", True),
    ("objects", "data"): ("bytea", False),
    ("refs", "pos"): ("bigint", False),
    ("refs", "from_digest"): ("text", False),
    ("refs", "rel"): ("text", False),
    ("refs", "to_digest"): ("text", False),
    ("tree_nodes", "level"): ("integer", False),
    ("tree_nodes", "idx"): ("bigint", False),
    ("tree_nodes", "hash"): ("bytea", False),
    ("checkpoints", "size"): ("bigint", False),
    ("checkpoints", "root"): ("bytea", False),
    ("checkpoints", "note"): ("bytea", False),
    ("checkpoints", "created_at"): ("text", False),
    ("kind_totals", "kind"): ("text", False),
    ("kind_totals", "entries"): ("bigint", False),
    ("kind_totals", "objects"): ("bigint", False),
    ("kind_totals", "bytes"): ("bigint", False),
    ("cosignatures", "pos"): ("bigint", False),
    ("cosignatures", "size"): ("bigint", False),
    ("cosignatures", "line"): ("text", False),
    ("cosignatures", "added_at"): ("text", False),
}
# Every index a ledger has, as ``pg_indexes.indexdef`` shows it (schema prefix removed).
EXPECTED_INDEXES: dict[str, str] = {
    "checkpoints_pkey": ("CREATE UNIQUE INDEX checkpoints_pkey ON checkpoints USING btree (size)"),
    "cosignatures_pkey": (
        "CREATE UNIQUE INDEX cosignatures_pkey ON cosignatures USING btree (size, line)"
    ),
    "cosignatures_pos_key": (
        "CREATE UNIQUE INDEX cosignatures_pos_key ON cosignatures USING btree (pos)"
    ),
    "entries_pkey": ("CREATE UNIQUE INDEX entries_pkey ON entries USING btree (seq)"),
    "kind_totals_pkey": ("CREATE UNIQUE INDEX kind_totals_pkey ON kind_totals USING btree (kind)"),
    "meta_pkey": ("CREATE UNIQUE INDEX meta_pkey ON meta USING btree (key)"),
    "objects_by_id": (
        "CREATE INDEX objects_by_id ON objects USING btree (object_id, object_version)"
        " WHERE (object_id IS NOT NULL)"
    ),
    "objects_by_kind": ("CREATE INDEX objects_by_kind ON objects USING btree (kind, seq)"),
    "objects_by_legacy": (
        "CREATE INDEX objects_by_legacy ON objects USING btree (legacy_digest)"
        " WHERE (legacy_digest IS NOT NULL)"
    ),
    "objects_pkey": ("CREATE UNIQUE INDEX objects_pkey ON objects USING btree (digest)"),
    "objects_seq_key": ("CREATE UNIQUE INDEX objects_seq_key ON objects USING btree (seq)"),
    "refs_pkey": ("CREATE UNIQUE INDEX refs_pkey ON refs USING btree (pos)"),
    "refs_to": ("CREATE INDEX refs_to ON refs USING btree (to_digest, rel)"),
    "tree_nodes_pkey": (
        "CREATE UNIQUE INDEX tree_nodes_pkey ON tree_nodes USING btree (level, idx)"
    ),
}
_ALL_PRIVILEGES = ("SELECT", "INSERT", "UPDATE", "DELETE", "TRUNCATE", "REFERENCES", "TRIGGER")


def findings(store: Catalog) -> list[StorageFinding]:
    """Every way the database differs from a ledger's schema, triggers and grants."""
    return _tables(store) + _indexes(store) + _triggers(store) + _grants(store)


def _tables(store: Catalog) -> list[StorageFinding]:
    found: list[StorageFinding] = []
    present = {
        str(name): str(kind)
        for name, kind in store.catalog(
            "SELECT c.relname, c.relkind FROM pg_class c"
            " WHERE c.relnamespace = current_schema()::regnamespace"
            " AND c.relkind IN ('r', 'p', 'v', 'm', 'f')"
        )
    }
    for table in ALL_TABLES:
        if table not in present:
            found.append(StorageFinding("schema-missing", f"table {table} is missing"))
    for name in sorted(set(present) - set(ALL_TABLES)):
        found.append(
            StorageFinding("schema-extra", f"relation {name} is not part of a ledger's schema")
        )
    # Text columns compare byte-wise (COLLATE "C"), as SQLite's BINARY does: digest
    # prefix lookups and ORDER BY digest rely on it.
    columns = {
        (str(t), str(c)): (str(ty), n == "YES", str(co or ""))
        for t, c, ty, n, co in store.catalog(
            "SELECT table_name, column_name, data_type, is_nullable, collation_name"
            " FROM information_schema.columns WHERE table_schema = current_schema()"
            " AND table_name = ANY(%s)",
            (list(ALL_TABLES),),
        )
    }
    for key in sorted(set(columns) | set(EXPECTED_COLUMNS)):
        column, spec = columns.get(key), EXPECTED_COLUMNS.get(key)
        want = None if spec is None else (*spec, "C" if spec[0] == "text" else "")
        if column != want and key[0] in present:
            found.append(
                StorageFinding(
                    "schema-altered",
                    f"column {key[0]}.{key[1]}, got {column or 'none'},"
                    f" expected {want or 'none'} (type, nullable, collation)",
                )
            )
    # A rewrite rule can turn an INSERT into anything and is not a trigger; a row-level
    # policy can hide rows from the auditor. A ledger has neither.
    for table, rule in store.catalog(
        "SELECT tablename, rulename FROM pg_rules WHERE schemaname = current_schema()"
    ):
        found.append(StorageFinding("schema-extra", f"rule {rule} on {table} is not allowed"))
    for (table,) in store.catalog(
        "SELECT relname FROM pg_class WHERE relnamespace = current_schema()::regnamespace"
        " AND (relrowsecurity OR relforcerowsecurity) AND relname = ANY(%s)",
        (list(ALL_TABLES),),
    ):
        found.append(StorageFinding("schema-altered", f"row-level security is enabled on {table}"))
    return found


def _indexes(store: Catalog) -> list[StorageFinding]:
    found: list[StorageFinding] = []
    schema = str(store.catalog("SELECT current_schema()")[0][0])
    present = {
        str(name): str(definition).replace(f" {schema}.", " ")
        for name, definition in store.catalog(
            "SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = current_schema()"
        )
    }
    for name, want in sorted(EXPECTED_INDEXES.items()):
        got = present.get(name)
        if got is None:
            found.append(StorageFinding("schema-missing", f"index {name} is missing"))
        elif got != want:
            found.append(
                StorageFinding(
                    "schema-altered", f"index {name} differs, got {got!r}, expected {want!r}"
                )
            )
    for name in sorted(set(present) - set(EXPECTED_INDEXES)):
        found.append(
            StorageFinding("schema-extra", f"index {name} is not part of a ledger's schema")
        )
    return found


def _triggers(store: Catalog) -> list[StorageFinding]:
    found: list[StorageFinding] = []
    for function, want in FUNCTIONS.items():
        body = store.catalog(
            "SELECT p.prosrc FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace"
            " WHERE p.proname = %s AND n.nspname = current_schema()",
            (function,),
        )
        if not body:
            found.append(
                StorageFinding("trigger-missing", f"append-only function {function} is missing")
            )
        elif len(body) != 1 or body[0][0] != want:
            found.append(
                StorageFinding(
                    "trigger-altered", f"append-only function {function} has another body"
                )
            )
    for function in DEFINER_FUNCTIONS:
        definer = store.catalog(
            "SELECT p.prosecdef FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace"
            " WHERE p.proname = %s AND n.nspname = current_schema()",
            (function,),
        )
        if definer and not all(row[0] for row in definer):
            found.append(
                StorageFinding(
                    "trigger-altered",
                    f"function {function} does not run with the ledger owner's rights",
                )
            )
    present = {
        (str(table), str(name)): (str(enabled), int(tgtype), str(func))
        for table, name, enabled, tgtype, func in store.catalog(
            "SELECT c.relname, t.tgname, t.tgenabled, t.tgtype, p.proname FROM pg_trigger t"
            " JOIN pg_class c ON c.oid = t.tgrelid JOIN pg_proc p ON p.oid = t.tgfoid"
            " WHERE c.relnamespace = current_schema()::regnamespace AND NOT t.tgisinternal"
        )
    }
    # pg_trigger.tgtype bits: 1 ROW, 2 BEFORE, 8 DELETE, 16 UPDATE, 32 TRUNCATE.
    bits = {"DELETE": 8, "UPDATE": 16, "TRUNCATE": 32}
    expected = set()
    for table, name, op, function in triggers():
        expected.add((table, name))
        got = present.get((table, name))
        if got is None:
            found.append(
                StorageFinding("trigger-missing", f"append-only trigger {name} is missing")
            )
            continue
        enabled, tgtype, func = got
        row_bit = 0 if op == "TRUNCATE" else 1
        if tgtype != (2 | bits[op] | row_bit) or func != function:
            found.append(
                StorageFinding(
                    "trigger-altered",
                    f"append-only trigger {name} is not an unconditional refusal of {op}"
                    f" on {table}",
                )
            )
        elif enabled not in ("O", "A"):
            found.append(
                StorageFinding("trigger-disabled", f"append-only trigger {name} is disabled")
            )
    for table, name, _new, function in DERIVE_TRIGGERS:
        expected.add((table, name))
        got = present.get((table, name))
        if got is None:
            found.append(StorageFinding("trigger-missing", f"derivation trigger {name} is missing"))
            continue
        enabled, tgtype, func = got
        # AFTER (no BEFORE bit), INSERT (4), FOR EACH STATEMENT (no ROW bit).
        if tgtype != 4 or func != function:
            found.append(
                StorageFinding(
                    "trigger-altered",
                    f"derivation trigger {name} is not {function} after each insert on {table}",
                )
            )
        elif enabled not in ("O", "A"):
            found.append(
                StorageFinding("trigger-disabled", f"derivation trigger {name} is disabled")
            )
    for table, name in sorted(set(present) - expected):
        found.append(
            StorageFinding("trigger-unexpected", f"trigger {name} on table {table} is unknown")
        )
    return found


def _grants(store: Catalog) -> list[StorageFinding]:
    found: list[StorageFinding] = []
    roles = [
        (store.get_meta("pg_writer_role"), "writer"),
        (store.get_meta("pg_auditor_role"), "auditor"),
    ]
    for role, label in roles:
        if role is None:
            found.append(StorageFinding("grant-missing", f"no {label} role recorded in meta"))
            continue
        if not store.catalog("SELECT 1 FROM pg_roles WHERE rolname = %s", (role,)):
            found.append(
                StorageFinding(
                    "grant-missing",
                    f"{label} role {role} does not exist (docs/POSTGRES.md: roles and grants)",
                )
            )
            continue
        for table in ALL_TABLES:
            have = _privileges(store, role, table)
            allowed = privileges(table, label)
            if have != allowed:
                found.append(
                    StorageFinding(
                        "grant-wrong",
                        f"{label} role {role} on {table}, got {sorted(have)},"
                        f" expected {sorted(allowed)}",
                    )
                )
        owned = store.catalog(
            "SELECT c.relname FROM pg_class c JOIN pg_roles r ON r.oid = c.relowner"
            " WHERE r.rolname = %s AND c.relname = ANY(%s)"
            " AND c.relnamespace = current_schema()::regnamespace",
            (role, list(ALL_TABLES)),
        )
        if owned:
            found.append(StorageFinding("grant-wrong", f"{label} role {role} owns ledger tables"))
    for table in ALL_TABLES:
        public = _privileges(store, "public", table)
        if public:
            found.append(
                StorageFinding(
                    "grant-wrong", f"PUBLIC on {table}, got {sorted(public)}, expected none"
                )
            )
    return found


def _privileges(store: Catalog, role: str, table: str) -> frozenset[str]:
    if not store.catalog("SELECT to_regclass(%s) IS NOT NULL", (table,))[0][0]:
        return frozenset()
    cols = ", ".join(f"has_table_privilege(%s, %s, '{p}')" for p in _ALL_PRIVILEGES)
    args: list[SQLValue] = []
    for _ in _ALL_PRIVILEGES:
        args.extend((role, table))
    row = store.catalog(f"SELECT {cols}", args)[0]
    return frozenset(p for p, ok in zip(_ALL_PRIVILEGES, row, strict=True) if ok)
