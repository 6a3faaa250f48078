"""Tables the goldset stage writes (migrations 300-399).

The working set (``gold_items`` and ``gold_labels``) changes as people review; every change is also
appended to ``gold_history``, which is never updated. ``publish`` freezes the verified items into
``gold_versions`` + ``gold_version_items``: each frozen item is kept as the exact JSON line that
export writes, so a version's content hash can be recomputed at any time (``gold verify``) and an
export is byte-for-byte what was published. The triage stage reads ``gold_items`` (norm_query,
cluster_id, status) and ``gold_version_items`` for its coverage: a cluster is covered by a verified
or published item, not by candidates (goldmine.gold.coverage_cte).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from goldmine.store import Migration

if TYPE_CHECKING:
    import duckdb

MIGRATIONS = [
    Migration(
        300,
        "goldset_core",
        """
        CREATE SEQUENCE gold_position_seq START 1;
        CREATE SEQUENCE gold_history_seq START 1;
        CREATE TABLE gold_items (
            query_id VARCHAR NOT NULL,        -- stable: q_ + sha256(norm_query)[:12], or imported
            position BIGINT NOT NULL,         -- review order
            query VARCHAR NOT NULL,           -- original text
            norm_query VARCHAR NOT NULL,      -- goldmine.text.normalize_query(query)
            context VARCHAR,                  -- previous turns, for a follow-up
            cluster_id BIGINT,
            status VARCHAR NOT NULL,          -- candidate | drafted | verified | rejected
            no_answer BOOLEAN NOT NULL DEFAULT false,  -- verified: the corpus does not answer it
            tags VARCHAR[],
            origin VARCHAR NOT NULL,          -- starter | add-query | cluster | import:<file>
            reason VARCHAR,                   -- why it was picked
            sources VARCHAR[],
            source_ids VARCHAR[],
            frequency BIGINT,
            first_seen TIMESTAMP,
            last_seen TIMESTAMP,
            notes VARCHAR[],
            drafted_by VARCHAR,               -- retriever that drafted it, e.g. 'retriever:bm25'
            verified_by VARCHAR,
            verified_at TIMESTAMP,
            created_at TIMESTAMP NOT NULL,
            updated_at TIMESTAMP NOT NULL
        );
        CREATE TABLE gold_labels (
            query_id VARCHAR NOT NULL,
            chunk_id VARCHAR NOT NULL,
            kind VARCHAR NOT NULL,            -- draft (never gold) | label (graded by a person)
            grade INTEGER,                    -- label: 2 answers, 1 useful context, 0 not relevant
            suggested_grade INTEGER,          -- draft from remap/stale: the grade it had before
            rank INTEGER,                     -- draft: the retriever's rank
            score DOUBLE,                     -- draft: the retriever's score
            source VARCHAR NOT NULL,          -- bm25 | dense | hybrid | search | remap | stale
            text_hash VARCHAR,                -- the chunk's text hash when drafted/labelled
            snapshot_id BIGINT,               -- the corpus snapshot it was made on
            who VARCHAR,
            ts TIMESTAMP NOT NULL
        );
        CREATE TABLE gold_texts (
            text_hash VARCHAR NOT NULL,       -- labelled passages, for remap after re-chunking
            text VARCHAR NOT NULL
        );
        CREATE TABLE gold_history (
            seq BIGINT NOT NULL,
            query_id VARCHAR NOT NULL,
            ts TIMESTAMP NOT NULL,
            who VARCHAR,
            action VARCHAR NOT NULL,          -- add | draft | grade | no-answer | verify | ...
            detail VARCHAR                    -- JSON
        );
        CREATE TABLE gold_versions (
            version INTEGER NOT NULL,
            message VARCHAR NOT NULL,
            content_hash VARCHAR NOT NULL,    -- sha256 over the frozen item lines
            published_at TIMESTAMP NOT NULL,
            published_by VARCHAR,
            format_version INTEGER NOT NULL,
            n_items INTEGER NOT NULL,
            n_answerable INTEGER NOT NULL,
            n_no_answer INTEGER NOT NULL,
            n_labels INTEGER NOT NULL,
            snapshot_id BIGINT,
            snapshot_hash VARCHAR
        );
        CREATE TABLE gold_version_items (
            version INTEGER NOT NULL,
            query_id VARCHAR NOT NULL,
            item VARCHAR NOT NULL             -- the exact exported JSON line, never rewritten
        );
        """,
    ),
    Migration(
        301,
        "goldset_review_skips",
        """
        -- A reviewer's "skip for now" or "can't tell", kept across sessions so the item comes
        -- back after the others. Not item history: it changes nothing about the item, so it
        -- bumps no version and never reaches a published line.
        CREATE TABLE gold_skips (
            query_id VARCHAR NOT NULL,
            who VARCHAR NOT NULL,
            ts TIMESTAMP NOT NULL,
            why VARCHAR NOT NULL DEFAULT 'skip'   -- skip | unsure (can't tell)
        );
        """,
    ),
    Migration(
        302,
        "goldset_raters",
        """
        -- Who labels which item (gold assign). An item with two raters is labelled blind: each
        -- rater's judgement goes to gold_ratings, apart, and only an agreement (or an
        -- adjudicator's grades) becomes gold_labels.
        CREATE TABLE gold_assignments (
            query_id VARCHAR NOT NULL,
            rater VARCHAR NOT NULL,
            ts TIMESTAMP NOT NULL,
            assigned_by VARCHAR
        );
        CREATE TABLE gold_ratings (
            query_id VARCHAR NOT NULL,
            chunk_id VARCHAR,                 -- NULL with no_answer: "the corpus does not answer"
            rater VARCHAR NOT NULL,
            grade INTEGER,
            no_answer BOOLEAN NOT NULL DEFAULT false,
            ts TIMESTAMP NOT NULL
        );
        -- Double-labelled items whose raters disagreed: adjudication decides them.
        CREATE TABLE gold_disagreements (
            query_id VARCHAR NOT NULL,
            ts TIMESTAMP NOT NULL,
            detail VARCHAR                    -- JSON: each rater's grades
        );
        """,
    ),
    # Review reads a few chunks by id on every step (the page: every request); without an index
    # each read scans the whole corpus (15 ms at 100k chunks, 2 ms with it). A plain index, not a
    # key: a corpus import still dedupes by anti-join.
    Migration(303, "goldset_chunk_lookup", "CREATE INDEX gold_chunk_lookup ON chunks (chunk_id)"),
    Migration(
        304,
        "goldset_model_drafts",
        """
        -- Every request goldmine made to a model, answered or failed, with what it said: the
        -- cache (an answered key is not asked again) and the record of failed drafts.
        CREATE SEQUENCE gold_llm_call_seq START 1;
        CREATE TABLE gold_llm_calls (
            call_id BIGINT NOT NULL,
            kind VARCHAR NOT NULL,            -- synth | judge
            cache_key VARCHAR NOT NULL,       -- sha256 over (kind, model, prompt version, inputs)
            endpoint VARCHAR NOT NULL,
            model VARCHAR NOT NULL,
            prompt_version VARCHAR NOT NULL,  -- <name>.v<N>-<hash of the prompt file>
            ok BOOLEAN NOT NULL,
            error VARCHAR,                    -- why a failed answer failed
            content VARCHAR,                  -- the answer's text as received
            data VARCHAR,                     -- the parsed answer (JSON), when ok
            prompt_tokens INTEGER,
            completion_tokens INTEGER,
            attempts INTEGER,
            seconds DOUBLE,
            ts TIMESTAMP NOT NULL
        );
        -- Questions a model drafted from a chunk (gold synth): where each came from, and the
        -- real query that covers it, if one does.
        CREATE TABLE gold_model_items (
            query_id VARCHAR NOT NULL,
            chunk_id VARCHAR NOT NULL,
            text_hash VARCHAR NOT NULL,       -- the chunk's text hash when drafted
            snapshot_id BIGINT,
            endpoint VARCHAR NOT NULL,
            model VARCHAR NOT NULL,
            prompt_version VARCHAR NOT NULL,
            style VARCHAR NOT NULL,           -- user | question
            call_id BIGINT,
            covered_query VARCHAR,            -- the real query that covers it (as typed)
            covered_norm VARCHAR,
            covered_query_id VARCHAR,         -- that query's gold item, if it has one
            fuzzy_score DOUBLE,               -- rapidfuzz token_sort_ratio to the best real query
            cosine DOUBLE,                    -- embedding similarity to the best real query
            ts TIMESTAMP NOT NULL
        );
        -- A model's grade for a candidate (gold draft --judge llm): beside people's labels in
        -- gold_labels, never over them, never gold.
        CREATE TABLE gold_model_labels (
            query_id VARCHAR NOT NULL,
            chunk_id VARCHAR NOT NULL,
            grade INTEGER NOT NULL,
            reason VARCHAR,
            endpoint VARCHAR NOT NULL,
            model VARCHAR NOT NULL,
            prompt_version VARCHAR NOT NULL,
            query_hash VARCHAR NOT NULL,      -- sha256 of the query text judged
            text_hash VARCHAR NOT NULL,       -- the chunk's text hash judged
            call_id BIGINT,
            ts TIMESTAMP NOT NULL
        );
        """,
    ),
    Migration(
        305,
        "goldset_model_calls_cut",
        """
        -- An answer's text is kept up to goldmine.llm.KEEP_CHARS characters: an endpoint that
        -- answered 20 MB had it stored whole, once per call. The row says it was cut.
        ALTER TABLE gold_llm_calls ADD COLUMN content_chars BIGINT;  -- the whole answer's length
        ALTER TABLE gold_llm_calls ADD COLUMN truncated BOOLEAN DEFAULT false;
        """,
    ),
    Migration(
        306,
        "goldset_source_grades",
        """
        -- Judgments from a source other than this store's people and model judge (gold import
        -- --as-source NAME: another team's labels, TREC/BEIR qrels, an LLM judge run elsewhere).
        -- Kept beside the gold set, never gold without a person; gold agreement --between
        -- compares any two sources over the units both graded.
        CREATE TABLE gold_source_grades (
            source VARCHAR NOT NULL,          -- import:NAME
            query_id VARCHAR NOT NULL,        -- the gold item the judgment was matched to
            chunk_id VARCHAR,                 -- NULL: the source said the query has no answer
            grade INTEGER,                    -- on goldmine's 0-2 scale, after --grade-map
            raw_grade VARCHAR,                -- the grade as the file wrote it
            in_corpus BOOLEAN NOT NULL,       -- the chunk id is in the corpus at import time
            file VARCHAR,                     -- the file it came from, and its line
            line BIGINT,
            ts TIMESTAMP NOT NULL
        );
        """,
    ),
    # normalize_query kept combining marks in their word from this step on (Hindi, Thai,
    # Hebrew; Arabic's optional vowel marks dropped, İ as i): an item's stored normalized text
    # written before is written again, else its query imported again would be a second item.
    Migration(307, "goldset_norm_marks", lambda con: _renormalize_items(con)),
]


def _renormalize_items(con: duckdb.DuckDBPyConnection) -> None:
    texts = [
        r[0]
        for r in con.execute(
            "SELECT DISTINCT query FROM gold_items WHERE query IS NOT NULL "
            "AND NOT regexp_matches(query, '^[\\x00-\\x7F]*$')"
        ).fetchall()
    ]
    if not texts:  # a new store, or items in ASCII alone: no polars for a light command
        return
    import polars as pl

    from goldmine.store import registered
    from goldmine.text import normalize_query

    frame = pl.DataFrame({"raw": texts, "norm": [normalize_query(t) for t in texts]})
    with registered(con, _gm_norm=frame):
        con.execute(
            "UPDATE gold_items SET norm_query = n.norm FROM _gm_norm n "
            "WHERE gold_items.query = n.raw AND gold_items.norm_query <> n.norm"
        )
