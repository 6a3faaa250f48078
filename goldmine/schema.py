"""Core tables shared by every stage (migrations 1-99)."""

from goldmine.store import Migration

MIGRATIONS = [
    Migration(
        1,
        "settings",
        """
        CREATE TABLE settings (
            key VARCHAR NOT NULL,
            value VARCHAR,
            updated_at TIMESTAMP NOT NULL DEFAULT current_timestamp
        );
        """,
    ),
]
