"""Lifecycle jobs over committed snapshots: expiration, orphan-file removal, rollback and tags."""
