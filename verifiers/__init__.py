"""Deterministic IDKMesh verifiers."""
