"""Defensive access to members of protocol objects that may not be schema-valid.

The verifiers never assume a caller's schema validator is strict: every member they
rely on is read through these helpers, which return None (or raise the given
``SovereigntyError`` code) instead of ``KeyError``/``TypeError``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from verifiers.errors import SovereigntyError


def get(obj: Any, *path: str) -> Any:
    """The member at ``path`` or None when any step is missing or not an object."""
    cur = obj
    for part in path:
        if not isinstance(cur, Mapping) or part not in cur:
            return None
        cur = cur[part]
    return cur


def str_list(value: Any) -> list[str] | None:
    """``value`` when it is a list of strings, else None."""
    if isinstance(value, list) and all(isinstance(item, str) for item in value):
        return list(value)
    return None


def is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def require_str(obj: Any, code: str, *path: str) -> str:
    value = get(obj, *path)
    if not isinstance(value, str):
        raise SovereigntyError(code, f"missing string at $.{'.'.join(path)}", value, "a string")
    return value


def require_int(obj: Any, code: str, *path: str, minimum: int = 0) -> int:
    value = get(obj, *path)
    if not is_int(value) or value < minimum:
        raise SovereigntyError(
            code, f"bad integer at $.{'.'.join(path)}", value, f"an integer >= {minimum}"
        )
    return int(value)


def require_str_list(obj: Any, code: str, *path: str, non_empty: bool = False) -> list[str]:
    value = str_list(get(obj, *path))
    if value is None or (non_empty and not value):
        raise SovereigntyError(
            code,
            f"bad list at $.{'.'.join(path)}",
            get(obj, *path),
            "a non-empty list of strings" if non_empty else "a list of strings",
        )
    return value


def path_label(*path: str) -> str:
    return "$." + ".".join(path)
