"""Tables the eval stage writes (migrations 400-499): each run, and its per-query scores.

Per-query scores are kept so that ``compare`` and the history can pair runs query by query long
after the run files are gone.
"""

from goldmine.store import Migration

MIGRATIONS = [
    Migration(
        400,
        "eval_runs",
        """
        CREATE SEQUENCE eval_run_id_seq START 1;
        CREATE TABLE eval_runs (
            run_id BIGINT NOT NULL,
            created_at TIMESTAMP NOT NULL,
            label VARCHAR,
            gold_source VARCHAR NOT NULL,     -- file path or 'v3'
            gold_hash VARCHAR NOT NULL,
            gold_version INTEGER,
            run_source VARCHAR NOT NULL,      -- file path, 'module:function', URL, 'baseline:bm25'
            run_hash VARCHAR,
            git_commit VARCHAR,
            rel_level INTEGER NOT NULL,
            n_queries INTEGER NOT NULL,       -- answerable gold queries averaged over
            n_missing INTEGER NOT NULL,       -- gold queries absent from the run (scored 0)
            n_ignored INTEGER NOT NULL,       -- run queries with no gold
            n_no_answer INTEGER NOT NULL,     -- gold queries with an empty relevant set
            metrics JSON NOT NULL,            -- name -> mean
            config JSON
        );
        CREATE TABLE eval_scores (
            run_id BIGINT NOT NULL,
            query_id VARCHAR NOT NULL,
            metric VARCHAR NOT NULL,
            value DOUBLE NOT NULL
        );
        CREATE TABLE eval_queries (
            run_id BIGINT NOT NULL,
            query_id VARCHAR NOT NULL,
            query VARCHAR,
            answerable BOOLEAN NOT NULL,
            n_returned INTEGER NOT NULL,      -- ids the run returned for it (0 = abstained)
            in_run BOOLEAN NOT NULL
        );
        """,
    ),
]
