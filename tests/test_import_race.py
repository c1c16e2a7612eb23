"""``import idkmesh`` cannot be raced into storing a file from outside the folder.

The attack: the folder's owner lets the import list the tree, then swaps a listed file (or a
directory on its path) for a symlink to the ledger's authority private key. A reader that
opens ``FOLDER/path`` follows the link and stores the key as a blob, for ever. The swap is
made deterministic by running it from a hook right after the listing, before any file is
read; the hook itself shows that a plain open of the path now yields the key.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner

import cohorts.importer
from ledger.cli import app
from ledger.confined import TreeListing, list_tree
from ledger.encoding.digest import sha256_digest
from ledger.store.sqlite import open_store


def _tree(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    (root / "examples" / "notes").mkdir(parents=True)
    (root / "examples" / "a.txt").write_bytes(b"first\n")
    (root / "examples" / "notes" / "b.txt").write_bytes(b"second\n")
    return root


def _swap_file(root: Path, secret: Path) -> None:
    target = root / "examples" / "notes" / "b.txt"
    target.unlink()
    target.symlink_to(secret)


def _swap_directory(root: Path, secret: Path) -> None:
    decoy = root.parent / "decoy"
    decoy.mkdir()
    (decoy / "b.txt").symlink_to(secret)  # or a hard link: any path to the key
    os.rename(root / "examples" / "notes", root.parent / "parked")
    (root / "examples" / "notes").symlink_to(decoy, target_is_directory=True)


@pytest.mark.parametrize("swap", [_swap_file, _swap_directory])
def test_a_swap_after_listing_cannot_store_the_authority_key(
    tmp_path: Path,
    ledger_path: Path,
    runner: CliRunner,
    monkeypatch: pytest.MonkeyPatch,
    swap: Callable[[Path, Path], None],
) -> None:
    root = _tree(tmp_path)
    secret = ledger_path.with_name(ledger_path.name + ".authority.key")
    key_bytes = secret.read_bytes()
    real_list_tree = list_tree
    swapped: list[Path] = []

    def list_then_swap(base: Path) -> TreeListing:
        listing = real_list_tree(base)
        if not swapped:
            assert "notes/b.txt" in listing.files  # listed as a regular file
            swap(root, secret)
            swapped.append(base)
            # The race is real: opening the listed path by name now yields the key.
            assert (root / "examples" / "notes" / "b.txt").read_bytes() == key_bytes
        return listing

    monkeypatch.setattr(cohorts.importer, "list_tree", list_then_swap)
    result = runner.invoke(app, ["import", "idkmesh", str(root), "--db", str(ledger_path)])
    assert swapped, "the hook did not run: the race was not staged"
    assert result.exit_code == 3, result.output
    assert result.stderr.count("\n") == 1
    assert result.stderr.startswith("error: import file examples/notes")
    assert "got a symlink" in result.stderr
    with open_store(ledger_path, readonly=True) as store:
        assert store.get(sha256_digest(key_bytes)) is None
        assert store.size() == 0  # nothing was written: every file is read first
