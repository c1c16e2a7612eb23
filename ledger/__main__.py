"""``python -m ledger`` runs the CLI."""

from ledger.entry import main

main()
