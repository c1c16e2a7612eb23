"""Trust: Ed25519 keys, DSSE envelopes, in-toto statements, identities and attestation judgement."""
