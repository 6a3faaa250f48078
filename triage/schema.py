"""Tables the triage stage writes (migrations 200-299).

``triage_queries`` holds one row per distinct normalized query and ``triage_clusters`` one row per
cluster; the gold set's starter picks from them, and ``triage show`` ranks them. Both are rebuilt by
every ``triage run`` from the events, so they always describe the current window of traffic.

What must survive from run to run lives apart: ``triage_assignments`` remembers, for every
normalized query triage has ever seen, its fuzzy-dedupe canonical and its cluster, so a query keeps
its cluster id across runs (and after dropping out of a ``--since`` window and coming back), and
``triage_cluster_ids`` remembers every cluster id ever given so a new cluster never reuses one.
``triage_events`` is the per-event working table (one row per search, ticket, chat turn or manual
query, with its failure signals) that ``triage cluster`` reads for sessions and raw examples.
"""

from goldmine.store import Migration

MIGRATIONS = [
    Migration(
        200,
        "triage_core",
        """
        CREATE TABLE triage_events (
            source VARCHAR NOT NULL,          -- searchlog, ubi, tickets, chat, manual, ...
            event_key VARCHAR NOT NULL,       -- event_id, ticket_id, conversation:turn, query_id
            ts TIMESTAMP,
            session_id VARCHAR,
            seq BIGINT,                       -- order within the session
            query VARCHAR NOT NULL,           -- the raw text
            norm_query VARCHAR,               -- set for every row once the step has run
            prev_query VARCHAR,               -- the previous query/turn in the session
            is_zero_results BOOLEAN NOT NULL DEFAULT false,
            is_no_click BOOLEAN NOT NULL DEFAULT false,
            is_reformulated BOOLEAN NOT NULL DEFAULT false,
            is_negative_feedback BOOLEAN NOT NULL DEFAULT false,
            is_ticket BOOLEAN NOT NULL DEFAULT false,
            is_chat_fail BOOLEAN NOT NULL DEFAULT false,
            is_follow_up BOOLEAN NOT NULL DEFAULT false,
            is_failed BOOLEAN NOT NULL DEFAULT false
        );
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
            tags VARCHAR[],  -- acronym, typo, follow-up, no-answer-likely, question|keyword
            text_hash VARCHAR,                -- sha256 of norm_query, the embedding cache key
            n_by_source JSON,                 -- {"searchlog": 12, "tickets": 3}
            n_follow_up BIGINT NOT NULL DEFAULT 0,
            fuzzy_score DOUBLE,               -- fuzz.ratio to the canonical (100 for a canonical)
            best_score DOUBLE                 -- best corpus chunk's score (no-answer-likely)
        );
        CREATE TABLE triage_assignments (
            norm_query VARCHAR NOT NULL,
            canonical_query VARCHAR NOT NULL, -- itself, or the more frequent variant it joined
            fuzzy_score DOUBLE,
            cluster_id BIGINT,                -- NULL until the cluster step has run
            how VARCHAR,                      -- clustered | joined | new | variant
            similarity DOUBLE,                -- cosine to the cluster's centroid when it joined
            run_id BIGINT NOT NULL            -- the run that first saw the query
        );
        CREATE TABLE triage_cluster_ids (
            cluster_id BIGINT NOT NULL,
            run_id BIGINT NOT NULL,           -- the run that created the cluster
            centroid FLOAT[],                 -- normalized mean of the members at creation/update
            radius DOUBLE,                    -- cosine a new query needs to join
            n_members BIGINT
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
            centroid FLOAT[],
            signals JSON,                     -- {"zero_results": n, "no_click": n, ...}
            tag_counts JSON,                  -- {"typo": n, ...} over the distinct queries
            shrunk_rate DOUBLE,               -- failure rate pulled toward the global rate
            created_run_id BIGINT
        );
        CREATE TABLE triage_runs (
            run_id BIGINT NOT NULL,
            started_at TIMESTAMP NOT NULL,
            finished_at TIMESTAMP,
            model VARCHAR,
            n_queries BIGINT,
            n_embedded BIGINT,
            n_clusters BIGINT,
            params JSON,
            status VARCHAR,                   -- running | done
            since TIMESTAMP,
            watermark TIMESTAMP,              -- latest event time this run saw
            timings JSON                      -- seconds per step
        );
        """,
    ),
    Migration(
        201,
        "triage_cluster_labels",
        """
        CREATE TABLE triage_cluster_labels (
            cluster_id BIGINT NOT NULL,
            terms VARCHAR[],                  -- top terms by c-TF-IDF against the other clusters
            central VARCHAR[]                 -- the queries nearest the cluster's centroid
        );
        """,
    ),
    # The events rolled up per source, day and normalized query (goldmine.signals), and
    # the Spark summaries beside them: what triage_queries is built from, so both read alike.
    Migration(
        202,
        "triage_query_days",
        """
        -- the columns of ingest's search_summaries (migration 104, applied before), so the two
        -- hold the same rows
        CREATE TABLE triage_query_days AS
        SELECT * EXCLUDE (batch_id) FROM search_summaries LIMIT 0;
        """,
    ),
    # Which process runs a run, so a command can tell a live run from one whose process is gone
    # (killed): the pid alone could be a later process's, so its start time too
    # (goldmine.store.process_start).
    Migration(
        203,
        "triage_run_process",
        """
        ALTER TABLE triage_runs ADD COLUMN pid BIGINT;
        ALTER TABLE triage_runs ADD COLUMN process_start VARCHAR;
        """,
    ),
    # Two levels (issue 30): a cluster is at the grain of an intent and belongs to one topic, a
    # group of neighbouring clusters for the overview (triage/topics.py). A topic is named by
    # the id of its oldest cluster; ``triage show --level topic`` lists topics, clusters beneath.
    Migration(
        204,
        "triage_cluster_topics",
        """
        ALTER TABLE triage_clusters ADD COLUMN topic_id BIGINT;
        """,
    ),
]
