#!/usr/bin/env python3
"""Coverage-guided fuzzing of the strict JSON reader and the canonicalizer.

    pip install atheris                # optional; not a project dependency
    .venv/bin/python scripts/fuzz_json.py -atheris_runs=1000000 [CORPUS_DIR]

Without atheris the script runs a seeded mutation loop instead (stdlib only):

    .venv/bin/python scripts/fuzz_json.py --plain [ITERATIONS] [SEED]

The property checked on every input: ``parse_strict`` returns a value or raises a
``ParseError``; an accepted value canonicalizes, its canonical bytes parse back to an equal
value, canonicalization is idempotent, and ``prepare_json`` raises only ``LedgerError``.
Any other exception is a finding (atheris saves the input; the plain loop prints it).
"""

from __future__ import annotations

import contextlib
import importlib
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ledger.encoding.canonical import canonicalize, parse_strict, require_canonical
from ledger.errors import LedgerError, ParseError
from ledger.store.prepared import prepare_json

SEEDS = [
    b'{"schema_version":"0.2","id":"a/b","version":1,"objective":"x","validators":[]}',
    b'{"a":[1,2.5,-0.0,1e21,"\\u00e9\\ud83d\\ude00",true,null],"b":{"c":{}}}',
    b'{"provledger_kind":"attestation","schema_version":"0.1"}',
    b"[9007199254740991,-9007199254740991,1e-7,123456789012345680000]",
]
TOKENS = [
    b"{",
    b"}",
    b"[",
    b"]",
    b'"',
    b",",
    b":",
    b"\\u",
    b"\\ud800",
    b"1e999",
    b"NaN",
    b"9007199254740993",
    b"\xef\xbb\xbf",
    b"\xff",
    b"\x00",
    b" ",
    b"-0",
    b".5",
    b"true",
]


def check(data: bytes) -> None:
    """The property; raises on a finding."""
    try:
        value = parse_strict(data)
    except ParseError:
        value = None
    else:
        canonical = canonicalize(value)
        back = parse_strict(canonical)
        if back != value or canonicalize(back) != canonical:
            raise AssertionError(f"round trip changed the value for {data[:80]!r}")
        require_canonical(canonical)
    with contextlib.suppress(LedgerError):
        prepare_json(data)


def mutate(rng: random.Random, data: bytes) -> bytes:
    out = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        at = rng.randint(0, len(out))
        op = rng.random()
        if op < 0.4:
            out[at:at] = rng.choice(TOKENS)
        elif op < 0.7 and out:
            del out[at : at + rng.randint(1, 3)]
        elif out:
            out[min(at, len(out) - 1)] = rng.randrange(256)
    return bytes(out)


def plain(iterations: int, seed: int) -> int:
    rng = random.Random(seed)
    for i in range(iterations):
        data = mutate(rng, rng.choice(SEEDS))
        try:
            check(data)
        except Exception as exc:  # a finding: report and stop
            print(f"finding after {i} inputs: {type(exc).__name__}: {exc}\ninput: {data!r}")
            return 1
    print(f"{iterations} inputs, seed {seed}: no findings")
    return 0


def main() -> int:
    if sys.argv[1:2] == ["--plain"]:
        iterations = int(sys.argv[2]) if len(sys.argv) > 2 else 100_000
        seed = int(sys.argv[3]) if len(sys.argv) > 3 else 1
        return plain(iterations, seed)
    try:
        atheris = importlib.import_module("atheris")
    except ImportError:
        print("atheris not installed; running the plain loop (see --plain)", file=sys.stderr)
        return plain(100_000, 1)
    atheris.Setup(sys.argv, check)
    atheris.Fuzz()
    return 0


if __name__ == "__main__":
    sys.exit(main())
