"""The auditor's browse database: a flat, human-shaped projection of a ledger.

``provledger index`` builds it with sqlite-utils (``build``), ``provledger verify
--browse`` re-derives it and compares (``check``), ``provledger serve`` runs Datasette
on it read-only (``web``). The ledger file is only ever opened read-only.
"""
