"""The schema of a PostgreSQL ledger: tables, the append-only guards, their triggers, roles.

One definition, used by ``create_store`` to make a ledger, by ``migrate_statements`` to
bring an earlier one up to date, and by ``postgres_audit`` to check one. The tables mean
what SQLite's mean: ``objects.data`` holds the canonical bytes (``bytea``),
``entries.seq`` is the Merkle leaf index, ``tree_nodes`` holds every complete subtree
hash, ``checkpoints`` the signed notes. Text columns use the byte collation "C", as
SQLite's BINARY compares.

Every writer login holds the writer role's rights, and may use them with its own
client, past provledger's code. So what the store derives is derived by the server:
``tree_nodes`` and ``kind_totals`` are written only by triggers on ``entries`` and
``objects`` (functions running with the ledger owner's rights), which also refuse an
entry that does not extend the log (a gap, a seq already past) and an object row with
no log entry of its seq and digest. The writer role may read those two tables, not
write them. The worst a writer login can do is append entries, which ``verify`` judges
(and flags when admission would have refused them).
"""

from __future__ import annotations

from ledger.store.base import LEDGER_META_KEYS, LEDGER_TABLES

SCHEMA_VERSION = "2"  # 2: tree nodes and totals derived by the server
OLD_FORMATS = ("provledger-postgres/1",)
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
# The server's derivations. Entries: each new one (a statement's transition table, in seq
# order) must extend the log; its leaf hash (RFC 9162: SHA-256 of 0x00 and the entry
# record, ``ledger.log.leaf``: RFC 8785 of appended_at, digest, kind, seq, whose string
# escapes are PostgreSQL's ``to_json``) and every subtree it completes go into
# ``tree_nodes``; the entries are counted per kind. Objects: each new row must be the
# object of a log entry (same seq, digest and kind) and its bytes must hash to its digest;
# objects and bytes are counted per kind.
ENTRIES_FUNCTION = "provledger_entries_added"
ENTRIES_BODY = (
    "DECLARE e record; expected bigint; lvl integer; i bigint; h bytea; sibling bytea;"
    " BEGIN"
    " SELECT coalesce(max(seq), -1) + 1 INTO expected FROM entries"
    " WHERE seq < (SELECT min(seq) FROM new_entries);"
    " FOR e IN SELECT * FROM new_entries ORDER BY seq LOOP"
    " IF e.seq <> expected THEN RAISE EXCEPTION"
    " 'provledger: entry % does not extend the log, expected seq %', e.seq, expected;"
    " END IF;"
    " h := sha256('\\x00'::bytea || convert_to('{\"appended_at\":'"
    " || to_json(e.appended_at)::text || ',\"digest\":' || to_json(e.digest)::text"
    " || ',\"kind\":' || to_json(e.kind)::text || ',\"seq\":' || e.seq::text || '}',"
    " 'UTF8'));"
    " lvl := 0; i := e.seq;"
    " INSERT INTO tree_nodes(level, idx, hash) VALUES (lvl, i, h);"
    " WHILE i % 2 = 1 LOOP"
    " SELECT hash INTO sibling FROM tree_nodes WHERE level = lvl AND idx = i - 1;"
    " h := sha256('\\x01'::bytea || sibling || h); lvl := lvl + 1; i := i / 2;"
    " INSERT INTO tree_nodes(level, idx, hash) VALUES (lvl, i, h);"
    " END LOOP;"
    " expected := expected + 1;"
    " END LOOP;"
    " INSERT INTO kind_totals(kind, entries, objects, bytes)"
    " SELECT kind, count(*), 0, 0 FROM new_entries GROUP BY kind"
    " ON CONFLICT (kind) DO UPDATE SET entries = kind_totals.entries + EXCLUDED.entries;"
    " RETURN NULL; END"
)
OBJECTS_FUNCTION = "provledger_objects_added"
OBJECTS_BODY = (
    "DECLARE bad record; BEGIN"
    " SELECT o.seq, o.digest INTO bad FROM new_objects o WHERE NOT EXISTS (SELECT 1 FROM"
    " entries e WHERE e.seq = o.seq AND e.digest = o.digest AND e.kind = o.kind) LIMIT 1;"
    " IF FOUND THEN RAISE EXCEPTION"
    " 'provledger: object % at seq % has no log entry', bad.digest, bad.seq; END IF;"
    " SELECT o.seq, o.digest INTO bad FROM new_objects o"
    " WHERE o.digest <> 'sha256:' || encode(sha256(o.data), 'hex') LIMIT 1;"
    " IF FOUND THEN RAISE EXCEPTION"
    " 'provledger: object % at seq % is not the digest of its bytes', bad.digest, bad.seq;"
    " END IF;"
    " INSERT INTO kind_totals(kind, entries, objects, bytes)"
    " SELECT kind, 0, count(*), sum(length(data)) FROM new_objects GROUP BY kind"
    " ON CONFLICT (kind) DO UPDATE SET objects = kind_totals.objects + EXCLUDED.objects,"
    " bytes = kind_totals.bytes + EXCLUDED.bytes;"
    " RETURN NULL; END"
)
#: Functions that run with the rights of their owner (the login that made the ledger).
DEFINER_FUNCTIONS = (ENTRIES_FUNCTION, OBJECTS_FUNCTION)


def _definer_ddl(name: str, body: str) -> str:
    return (
        f"CREATE FUNCTION {name}() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER"
        f" SET search_path FROM CURRENT AS $derive${body}$derive$"
    )


DERIVE_DDL = (
    _definer_ddl(ENTRIES_FUNCTION, ENTRIES_BODY),
    _definer_ddl(OBJECTS_FUNCTION, OBJECTS_BODY),
)
#: (table, trigger, transition table, function) of the statement-level AFTER INSERT
#: triggers by which the server derives rows.
DERIVE_TRIGGERS = (
    ("entries", "entries_derive", "new_entries", ENTRIES_FUNCTION),
    ("objects", "objects_derive", "new_objects", OBJECTS_FUNCTION),
)

# Each function with its exact body (``verify`` compares them).
FUNCTIONS = {
    GUARD_FUNCTION: GUARD_BODY,
    GROWTH_FUNCTION: GROWTH_BODY,
    ENTRIES_FUNCTION: ENTRIES_BODY,
    OBJECTS_FUNCTION: OBJECTS_BODY,
}


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
    return out + derive_trigger_ddl()


def derive_trigger_ddl() -> list[str]:
    return [
        f"CREATE TRIGGER {name} AFTER INSERT ON {table} REFERENCING NEW TABLE AS {new}"
        f" FOR EACH STATEMENT EXECUTE FUNCTION {function}()"
        for table, name, new, function in DERIVE_TRIGGERS
    ]


def default_roles(dbname: str) -> tuple[str, str]:
    """Names of the writer and auditor roles ``init`` creates for database ``dbname``."""
    return f"{dbname}_writer", f"{dbname}_auditor"


#: Tables only the server's triggers write; the writer role may read them.
DERIVED_TABLES = ("tree_nodes", TOTALS_TABLE)


def grant_statements(writer: str, auditor: str) -> list[str]:
    """The SQL that gives the two roles exactly their rights (documented for DBAs)."""
    written = ", ".join(t for t in LEDGER_TABLES if t not in DERIVED_TABLES)
    w, a = ident(writer), ident(auditor)
    return [
        f"CREATE ROLE {w} NOLOGIN",
        f"CREATE ROLE {a} NOLOGIN",
        f"REVOKE ALL ON {', '.join(ALL_TABLES)} FROM PUBLIC",
        f"GRANT SELECT, INSERT ON {written} TO {w}",
        f"GRANT SELECT ON {', '.join(ALL_TABLES)} TO {a}",
        # The server derives these (triggers on entries and objects): read only.
        f"GRANT SELECT ON {', '.join(DERIVED_TABLES)} TO {w}",
    ]


def privileges(table: str, label: str) -> frozenset[str]:
    """The rights the ``writer`` or ``auditor`` role has on ``table``, exactly."""
    if label == "auditor" or table in DERIVED_TABLES:
        return frozenset({"SELECT"})
    return frozenset({"INSERT", "SELECT"})


def migrate_statements(writer: str) -> list[str]:
    """What brings a format-1 ledger to this format: the server's derivations, and the
    writer role's rights on the derived tables taken back."""
    return [
        *DERIVE_DDL,
        *derive_trigger_ddl(),
        f"REVOKE ALL ON {', '.join(DERIVED_TABLES)} FROM {ident(writer)}",
        f"GRANT SELECT ON {', '.join(DERIVED_TABLES)} TO {ident(writer)}",
        f"UPDATE meta SET value = '{FORMAT}' WHERE key = 'format'",
    ]


def ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'
