"""Storage: the SQLite file (connections, schema, events), its copies, sealed backups and replication."""
