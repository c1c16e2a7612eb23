"""The verifiable log: RFC 9162 Merkle tree, entry records, C2SP checkpoints, proofs, bundles."""
