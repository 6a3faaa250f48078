"""Tables the ingest stage writes (migrations 100-199).

Every stored row carries the ``batch_id`` of the import that brought it; ``import_batches`` knows
the file, its hash, the counts and the watermark. Tables have no PRIMARY KEY on purpose: dedupe is
an anti-join on the natural key (``event_id``, ``ticket_id``, …), which DuckDB does 3x faster.
"""

from goldmine.store import Migration

MIGRATIONS = [
    Migration(
        100,
        "ingest_core",
        """
        CREATE SEQUENCE batch_id_seq START 1;
        CREATE TABLE import_batches (
            batch_id BIGINT NOT NULL,
            source VARCHAR NOT NULL,          -- searchlog | ubi | tickets | chat | corpus | manual
            path VARCHAR,
            size_bytes BIGINT,
            file_hash VARCHAR,
            format VARCHAR,
            started_at TIMESTAMP NOT NULL,
            finished_at TIMESTAMP,
            rows_in BIGINT NOT NULL DEFAULT 0,
            stored BIGINT NOT NULL DEFAULT 0,
            rejected BIGINT NOT NULL DEFAULT 0,
            already_present BIGINT NOT NULL DEFAULT 0,
            watermark TIMESTAMP,              -- max ts of the batch's rows
            options JSON
        );
        CREATE TABLE rejects (
            batch_id BIGINT NOT NULL,
            path VARCHAR,
            line BIGINT,                      -- line, row number or Parquet row group
            reason VARCHAR NOT NULL,
            raw VARCHAR
        );
        CREATE TABLE search_events (
            event_id VARCHAR NOT NULL,
            batch_id BIGINT NOT NULL,
            source VARCHAR NOT NULL DEFAULT 'searchlog',   -- searchlog | ubi | manual
            ts TIMESTAMP,
            session_id VARCHAR,
            user_id VARCHAR,
            query VARCHAR NOT NULL,
            result_ids VARCHAR[],             -- ranked, as shown
            num_results INTEGER,
            clicked_ids VARCHAR[],
            feedback VARCHAR,                 -- e.g. 'negative', 'positive', a rating
            extra JSON
        );
        CREATE TABLE tickets (
            ticket_id VARCHAR NOT NULL,
            batch_id BIGINT NOT NULL,
            ts TIMESTAMP,
            user_id VARCHAR,
            subject VARCHAR,
            body VARCHAR,                     -- full text, redacted, kept for reading
            question VARCHAR NOT NULL,        -- subject + first question of the body
            status VARCHAR,
            extra JSON
        );
        CREATE TABLE chat_turns (
            conversation_id VARCHAR NOT NULL,
            turn INTEGER NOT NULL,            -- order within the conversation, from 0
            batch_id BIGINT NOT NULL,
            turn_id VARCHAR,
            ts TIMESTAMP,
            user_id VARCHAR,
            role VARCHAR NOT NULL,            -- user | assistant
            text VARCHAR NOT NULL,
            feedback VARCHAR,                 -- 'down' / 'up' / free text
            dont_know BOOLEAN NOT NULL DEFAULT false,  -- an assistant answer that does not know
            extra JSON
        );
        CREATE TABLE manual_queries (
            query_id VARCHAR NOT NULL,
            batch_id BIGINT NOT NULL,
            ts TIMESTAMP NOT NULL,
            query VARCHAR NOT NULL,
            source VARCHAR NOT NULL DEFAULT 'manual',   -- e.g. 'colleague'
            note VARCHAR
        );
        CREATE SEQUENCE snapshot_id_seq START 1;
        CREATE TABLE corpus_snapshots (
            snapshot_id BIGINT NOT NULL,
            batch_id BIGINT NOT NULL,
            created_at TIMESTAMP NOT NULL,
            content_hash VARCHAR NOT NULL,    -- over sorted (chunk_id, text_hash)
            n_chunks BIGINT NOT NULL,
            label VARCHAR
        );
        CREATE TABLE chunks (
            snapshot_id BIGINT NOT NULL,
            chunk_id VARCHAR NOT NULL,
            doc_id VARCHAR,
            title VARCHAR,
            url VARCHAR,
            text VARCHAR NOT NULL,
            text_hash VARCHAR NOT NULL,       -- sha256 of text, hex
            metadata JSON
        );
        """,
    ),
    # The hash of the JSONL line a search event was read from, under the way it was read
    # (batch.line_key): an overlapping file's lines already stored are known without parsing.
    Migration(101, "search_event_lines", "ALTER TABLE search_events ADD COLUMN line_hash UBIGINT"),
    # 128 bits (md5) in place of DuckDB's 64-bit hash, under which two lines can be made to
    # collide. The 64-bit values can match no line now: they are dropped with the column.
    Migration(
        102,
        "search_event_lines_md5",
        """
        ALTER TABLE search_events DROP COLUMN line_hash;
        ALTER TABLE search_events ADD COLUMN line_hash UHUGEINT;
        """,
    ),
    # What a RAG trace adds to the search event a retrieval became (ingest traces): where it
    # came from, the LLM's answer and whether it does not know, each shown document's score
    # and content hash (sha256 of the text, as chunks.text_hash), and how many ids stood in
    # for documents that had none.
    Migration(
        103,
        "trace_retrievals",
        """
        CREATE TABLE trace_retrievals (
            event_id VARCHAR NOT NULL,        -- search_events.event_id (source 'traces')
            batch_id BIGINT NOT NULL,
            format VARCHAR NOT NULL,  -- openinference | otel | langfuse | langsmith | openai
            trace_id VARCHAR,
            span_id VARCHAR,
            parent_id VARCHAR,
            answer VARCHAR,                   -- the LLM's answer after the retrieval, redacted
            dont_know BOOLEAN NOT NULL DEFAULT false,
            scores DOUBLE[],                  -- per shown document, in rank order
            content_hashes VARCHAR[],         -- per shown document; NULL without content
            ids_from_content INTEGER NOT NULL DEFAULT 0
        );
        """,
    ),
    # Search logs summarized where they live (ingest searchlog|ubi --engine spark): one row per
    # source, day and normalized query with its signal counts (goldmine.signals), not the
    # events. Triage reads these beside the events it rolls up itself (triage_query_days).
    Migration(
        104,
        "search_summaries",
        """
        CREATE TABLE search_summaries (
            batch_id BIGINT NOT NULL,
            source VARCHAR NOT NULL,          -- searchlog, ubi, … (tickets, chat: triage only)
            day DATE,                         -- UTC; NULL for events without a time
            norm_query VARCHAR NOT NULL,
            spellings STRUCT(query VARCHAR, n BIGINT)[],  -- each original text, how often
            first_seen TIMESTAMP,
            last_seen TIMESTAMP,
            n_events BIGINT NOT NULL,
            n_sessions BIGINT NOT NULL,       -- distinct sessions that day
            n_zero_results BIGINT NOT NULL,
            n_no_click BIGINT NOT NULL,
            n_reformulated BIGINT NOT NULL,
            n_negative_feedback BIGINT NOT NULL,
            n_tickets BIGINT NOT NULL,
            n_chat_fail BIGINT NOT NULL,
            n_failed BIGINT NOT NULL,
            n_follow_up BIGINT NOT NULL
        );
        """,
    ),
    # A ticket that asks no question and states no problem (thanks, a follow-up, a complaint
    # with nothing to search for) is kept but tagged: triage and the starter leave it out.
    Migration(
        105,
        "ticket_no_question",
        "ALTER TABLE tickets ADD COLUMN no_question BOOLEAN DEFAULT false",
    ),
]
