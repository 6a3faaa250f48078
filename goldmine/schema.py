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
    # The embedding cache (goldmine.embed): one vector per (model, sha256 of the text). Triage,
    # drafting and the dense baseline share it, so a text is encoded once per model. No PRIMARY
    # KEY: new vectors are added with an anti-join, which loads faster (FACTS.md).
    Migration(
        10,
        "embeddings",
        """
        CREATE TABLE embeddings (
            model VARCHAR NOT NULL,           -- goldmine.embed's model key, e.g. all-MiniLM-L6-v2
            text_hash VARCHAR NOT NULL,       -- goldmine.text.sha256_text of the embedded text
            dim INTEGER NOT NULL,
            vector FLOAT[] NOT NULL,          -- L2-normalized
            created_at TIMESTAMP NOT NULL DEFAULT current_timestamp
        );
        """,
    ),
]
