"""The Python examples of docs/API.md as one program (they run in order, as the page says)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "API.md"
EXAMPLES = ROOT / "examples"
_BLOCK = re.compile(r"^```python\n(.*?)^```", re.DOTALL | re.MULTILINE)


def blocks(text: str | None = None) -> list[str]:
    """The page's ``python`` code blocks, in order."""
    return _BLOCK.findall(PAGE.read_text("utf-8") if text is None else text)


def program() -> str:
    """Every block, each under a comment naming its place, as one script."""
    return "\n".join(f"# --- docs/API.md block {i}\n{code}" for i, code in enumerate(blocks()))
