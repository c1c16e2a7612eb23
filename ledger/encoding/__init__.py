"""Encoding: strict JSON reading, RFC 8785 canonical bytes and digests.

``canonical`` is the public entry point (``encode``, ``canonicalize``, ``parse_strict``,
``require_canonical``); ``strict`` is the reference it is proven equal to; ``_fast`` is
private; ``digest`` names bytes (``sha256:<hex>``, upstream legacy digests).
"""
