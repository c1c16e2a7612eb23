"""provledger ledger core."""
