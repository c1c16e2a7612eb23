"""Schemas: the kind registry and JSON Schema validation of stored documents."""
