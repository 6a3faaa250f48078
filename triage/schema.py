"""Tables the triage stage writes (migrations 200-299).

``triage_queries`` holds one row per distinct normalized query and ``triage_clusters`` one row per
cluster; the gold set's starter picks from them, and ``triage show`` ranks them.
"""

from goldmine.store import Migration

MIGRATIONS = [
    Migration(
        200,
        "triage_core",
        """
        CREATE TABLE triage_queries (
            norm_query VARCHAR NOT NULL,      -- goldmine.text.normalize_query of the text
            query VARCHAR NOT NULL,           -- the most frequent original spelling
            canonical_query VARCHAR,          -- norm_query of the fuzzy-dedupe canonical variant
            cluster_id BIGINT,
            n_events BIGINT NOT NULL,         -- volume over every source
            n_sessions BIGINT,
            sources VARCHAR[],                -- searchlog, ubi, tickets, chat, manual, ...
            first_seen TIMESTAMP,
            last_seen TIMESTAMP,
            n_zero_results BIGINT NOT NULL DEFAULT 0,
            n_no_click BIGINT NOT NULL DEFAULT 0,
            n_reformulated BIGINT NOT NULL DEFAULT 0,
            n_negative_feedback BIGINT NOT NULL DEFAULT 0,
            n_tickets BIGINT NOT NULL DEFAULT 0,
            n_chat_fail BIGINT NOT NULL DEFAULT 0,
            n_failed BIGINT NOT NULL DEFAULT 0,   -- events with at least one failure signal
            failure_rate DOUBLE NOT NULL DEFAULT 0,
            tags VARCHAR[],                   -- acronym, typo, follow-up, no-answer-likely, question|keyword
            text_hash VARCHAR                 -- sha256 of query, for the embedding cache
        );
        CREATE TABLE triage_clusters (
            cluster_id BIGINT NOT NULL,
            label VARCHAR NOT NULL,           -- a readable representative query
            volume BIGINT NOT NULL,
            n_variants INTEGER NOT NULL,
            n_failed BIGINT NOT NULL DEFAULT 0,
            failure_rate DOUBLE NOT NULL DEFAULT 0,
            priority DOUBLE NOT NULL DEFAULT 0,
            tags VARCHAR[],
            sources VARCHAR[],
            first_seen TIMESTAMP,
            last_seen TIMESTAMP,
            is_new BOOLEAN NOT NULL DEFAULT false,
            centroid FLOAT[]
        );
        CREATE TABLE triage_runs (
            run_id BIGINT NOT NULL,
            started_at TIMESTAMP NOT NULL,
            finished_at TIMESTAMP,
            model VARCHAR,
            n_queries BIGINT,
            n_embedded BIGINT,
            n_clusters BIGINT,
            params JSON
        );
        """,
    ),
]
