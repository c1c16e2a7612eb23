"""``python -m ledger`` runs the CLI."""

from ledger.cli import main

main()
