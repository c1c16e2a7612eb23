"""Members a verifier requires: present and well typed, or a ``SovereigntyError``.

The verifiers never assume a caller's schema validator is strict. Members they may do
without are read through the total readers of ``verifiers.model.json``; members they
cannot judge without are read here, which raise the given ``SovereigntyError`` code
(exit 4) instead of ``KeyError``/``TypeError``.
"""

from __future__ import annotations

from verifiers.errors import SovereigntyError
from verifiers.model.json import at, str_list


def require_str(obj: object, code: str, *path: str) -> str:
    value = at(obj, *path)
    if not isinstance(value, str):
        raise SovereigntyError(code, f"missing string at $.{'.'.join(path)}", value, "a string")
    return value


def require_int(obj: object, code: str, *path: str, minimum: int = 0) -> int:
    value = at(obj, *path)
    if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
        raise SovereigntyError(
            code, f"bad integer at $.{'.'.join(path)}", value, f"an integer >= {minimum}"
        )
    return value


def require_str_list(obj: object, code: str, *path: str, non_empty: bool = False) -> list[str]:
    value = str_list(at(obj, *path))
    if value is None or (non_empty and not value):
        raise SovereigntyError(
            code,
            f"bad list at $.{'.'.join(path)}",
            at(obj, *path),
            "a non-empty list of strings" if non_empty else "a list of strings",
        )
    return value
