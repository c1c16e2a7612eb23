"""Storage: the Store protocol, prepared records and the SQLite backend."""
