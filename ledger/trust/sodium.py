"""Ed25519 acceptance through libsodium (PyNaCl): a fast path of ``keys.verify``.

libsodium's ``crypto_sign_open`` verifies an Ed25519 signature in about half the time
of the reference, OpenSSL through ``cryptography`` (~60 against ~118 us on the project's
machine). Its rules are the reference's and then some: both check the cofactorless
equation on the given encodings of R and A and require a canonical S (below the group
order); libsodium also refuses small-order keys and R and non-canonical encodings,
which OpenSSL accepts. So what libsodium accepts the reference accepts, and
``accepts`` is used only to say yes: any other answer (refused, malformed, PyNaCl not
installed) leaves the verdict to the reference. ``tests/test_sodium_differential.py``
holds the two to that on Wycheproof's and RFC 8032's vectors, on the benchmark corpus's
signatures and on generated keys, messages and signatures (mutated, small-order
encodings, S beyond the group order).

PyNaCl is imported only after ``FAST_AFTER`` signatures in a process (importing it
costs ~6 ms): commands that check one checkpoint or a few attestations start as before.
"""

from __future__ import annotations

from collections.abc import Callable

FAST_AFTER = 16  # reference verifications in a process before libsodium is loaded

_state: dict[str, int] = {"seen": 0}
_open: list[Callable[[bytes, bytes], bytes]] = []  # crypto_sign_open, once loaded
_refused: list[type[Exception]] = []  # the errors that mean "not accepted"


def accepts(raw_key: bytes, message: bytes, signature: bytes) -> bool:
    """True only if libsodium accepts ``signature`` (64 bytes) over ``message`` under the
    32-byte ``raw_key``; False means "ask the reference", never "invalid"."""
    if not _open:
        _state["seen"] += 1
        if _state["seen"] <= FAST_AFTER or not _load():
            return False
    try:
        _open[0](signature + message, raw_key)
    except tuple(_refused):
        return False
    return True


def _load() -> bool:
    """Load PyNaCl's binding once; False (and never again tried) when absent."""
    if _state.get("absent"):
        return False
    try:
        from nacl.bindings import crypto_sign_open
        from nacl.exceptions import CryptoError
    except ImportError:
        _state["absent"] = 1
        return False
    _refused.extend((CryptoError, ValueError, TypeError))
    _open.append(crypto_sign_open)
    return True
