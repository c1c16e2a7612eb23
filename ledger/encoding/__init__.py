"""Encoding: strict JSON reading, RFC 8785 canonical bytes and digests."""
