"""Audit: the full check of a ledger (``provledger verify``) and its per-object checks."""
