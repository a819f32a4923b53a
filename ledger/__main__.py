"""`python -m ledger`: the `hazard` command, for when .venv/bin is not on PATH."""

from ledger.cli import main

if __name__ == "__main__":
    main(prog_name="python -m ledger")
