"""The schema of a PostgreSQL ledger: tables, the append-only guards, their triggers, roles.

One definition, used by ``create_store`` to make a ledger and by ``postgres_audit`` to
check one. The tables mean what SQLite's mean: ``objects.data`` holds the canonical
bytes (``bytea``), ``entries.seq`` is the Merkle leaf index, ``tree_nodes`` holds every
complete subtree hash, ``checkpoints`` the signed notes. Text columns use the byte
collation "C", as SQLite's BINARY compares.
"""

from __future__ import annotations

from ledger.store.base import LEDGER_META_KEYS, LEDGER_TABLES

SCHEMA_VERSION = "1"
FORMAT = f"provledger-postgres/{SCHEMA_VERSION}"

# The one table that is updated: per-kind totals (entries, objects, bytes) the append
# path adds to in each batch's transaction, read by ``stats``. Its triggers refuse a
# delete or truncate and any update that renames a kind or lowers a total.
TOTALS_TABLE = "kind_totals"
ALL_TABLES = (*LEDGER_TABLES, TOTALS_TABLE)

# Meta keys of a PostgreSQL ledger: every ledger's, and the two roles init made or named.
META_KEYS: tuple[str, ...] = (*LEDGER_META_KEYS, "pg_writer_role", "pg_auditor_role")

SCHEMA_DDL = """
CREATE TABLE meta (
  key TEXT COLLATE "C" PRIMARY KEY,
  value TEXT COLLATE "C" NOT NULL
);
CREATE TABLE entries (
  seq BIGINT PRIMARY KEY CHECK (seq >= 0),
  digest TEXT COLLATE "C" NOT NULL,
  kind TEXT COLLATE "C" NOT NULL,
  appended_at TEXT COLLATE "C" NOT NULL
);
CREATE TABLE objects (
  digest TEXT COLLATE "C" PRIMARY KEY,
  seq BIGINT NOT NULL UNIQUE,
  kind TEXT COLLATE "C" NOT NULL,
  schema_version TEXT COLLATE "C",
  object_id TEXT COLLATE "C",
  object_version BIGINT,
  legacy_digest TEXT COLLATE "C",
  legacy_hints TEXT COLLATE "C",
  data BYTEA NOT NULL
);
CREATE INDEX objects_by_id ON objects(object_id, object_version) WHERE object_id IS NOT NULL;
CREATE INDEX objects_by_legacy ON objects(legacy_digest) WHERE legacy_digest IS NOT NULL;
CREATE INDEX objects_by_kind ON objects(kind, seq);
CREATE TABLE refs (
  pos BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  from_digest TEXT COLLATE "C" NOT NULL,
  rel TEXT COLLATE "C" NOT NULL,
  to_digest TEXT COLLATE "C" NOT NULL
);
CREATE INDEX refs_to ON refs(to_digest, rel);
CREATE TABLE tree_nodes (
  level INTEGER NOT NULL,
  idx BIGINT NOT NULL,
  hash BYTEA NOT NULL,
  PRIMARY KEY (level, idx)
);
CREATE TABLE checkpoints (
  size BIGINT PRIMARY KEY,
  root BYTEA NOT NULL,
  note BYTEA NOT NULL,
  created_at TEXT COLLATE "C" NOT NULL
);
CREATE TABLE kind_totals (
  kind TEXT COLLATE "C" PRIMARY KEY,
  entries BIGINT NOT NULL,
  objects BIGINT NOT NULL,
  bytes BIGINT NOT NULL
);
CREATE TABLE cosignatures (
  pos BIGINT GENERATED ALWAYS AS IDENTITY UNIQUE,
  size BIGINT NOT NULL,
  line TEXT COLLATE "C" NOT NULL,
  added_at TEXT COLLATE "C" NOT NULL,
  PRIMARY KEY (size, line)
);
"""

GUARD_FUNCTION = "provledger_append_only"
GUARD_BODY = (
    "BEGIN RAISE EXCEPTION 'provledger: the ledger is append-only, % on % refused',"
    " TG_OP, TG_TABLE_NAME; END"
)
GUARD_DDL = (
    f"CREATE FUNCTION {GUARD_FUNCTION}() RETURNS trigger LANGUAGE plpgsql AS"
    f" $guard${GUARD_BODY}$guard$"
)


GROWTH_FUNCTION = "provledger_totals_only_grow"
GROWTH_BODY = (
    "BEGIN IF NEW.kind IS DISTINCT FROM OLD.kind OR NEW.entries < OLD.entries"
    " OR NEW.objects < OLD.objects OR NEW.bytes < OLD.bytes THEN"
    " RAISE EXCEPTION 'provledger: the ledger is append-only, UPDATE lowering % refused',"
    " TG_TABLE_NAME; END IF; RETURN NEW; END"
)
GROWTH_DDL = (
    f"CREATE FUNCTION {GROWTH_FUNCTION}() RETURNS trigger LANGUAGE plpgsql AS"
    f" $grow${GROWTH_BODY}$grow$"
)
# Each guard function with its exact body (``verify`` compares them).
FUNCTIONS = {GUARD_FUNCTION: GUARD_BODY, GROWTH_FUNCTION: GROWTH_BODY}


def trigger_names() -> list[tuple[str, str, str]]:
    """(table, trigger name, operation) of every guard trigger a ledger must have."""
    return [(t, n, op) for t, n, op, _f in triggers()]


def triggers() -> list[tuple[str, str, str, str]]:
    """(table, trigger name, operation, function) of every guard trigger: the ledger
    tables refuse UPDATE, DELETE and TRUNCATE; ``kind_totals`` only grows."""
    out = [
        (t, f"{t}_no_{op.lower()}", op, GUARD_FUNCTION)
        for t in LEDGER_TABLES
        for op in ("UPDATE", "DELETE", "TRUNCATE")
    ]
    out += [
        (TOTALS_TABLE, f"{TOTALS_TABLE}_no_shrink", "UPDATE", GROWTH_FUNCTION),
        (TOTALS_TABLE, f"{TOTALS_TABLE}_no_delete", "DELETE", GUARD_FUNCTION),
        (TOTALS_TABLE, f"{TOTALS_TABLE}_no_truncate", "TRUNCATE", GUARD_FUNCTION),
    ]
    return out


def trigger_ddl() -> list[str]:
    out = []
    for table, name, op, function in triggers():
        each = "STATEMENT" if op == "TRUNCATE" else "ROW"
        out.append(
            f"CREATE TRIGGER {name} BEFORE {op} ON {table}"
            f" FOR EACH {each} EXECUTE FUNCTION {function}()"
        )
    return out


def default_roles(dbname: str) -> tuple[str, str]:
    """Names of the writer and auditor roles ``init`` creates for database ``dbname``."""
    return f"{dbname}_writer", f"{dbname}_auditor"


def grant_statements(writer: str, auditor: str) -> list[str]:
    """The SQL that gives the two roles exactly their rights (documented for DBAs)."""
    tables = ", ".join(LEDGER_TABLES)
    w, a = ident(writer), ident(auditor)
    return [
        f"CREATE ROLE {w} NOLOGIN",
        f"CREATE ROLE {a} NOLOGIN",
        f"REVOKE ALL ON {', '.join(ALL_TABLES)} FROM PUBLIC",
        f"GRANT SELECT, INSERT ON {tables} TO {w}",
        f"GRANT SELECT ON {tables} TO {a}",
        # The writer adds to the totals in place (their triggers keep them growing).
        f"GRANT SELECT, INSERT, UPDATE ON {TOTALS_TABLE} TO {w}",
        f"GRANT SELECT ON {TOTALS_TABLE} TO {a}",
    ]


def privileges(table: str, label: str) -> frozenset[str]:
    """The rights the ``writer`` or ``auditor`` role has on ``table``, exactly."""
    if label == "auditor":
        return frozenset({"SELECT"})
    if table == TOTALS_TABLE:
        return frozenset({"SELECT", "INSERT", "UPDATE"})
    return frozenset({"INSERT", "SELECT"})


def ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'
