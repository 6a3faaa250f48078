"""A triage run's life: where its results are built, how they replace the last run's, and what
a reader is told about a run that has not finished.

A run takes minutes and closes the store between its steps, so what it writes must not be what
readers read: it builds the tables readers see (``RESULTS``) in a schema of their own
(``triage_next``), found first by the run's connections through DuckDB's ``search_path``, and
:func:`publish` copies them over the last run's in the transaction that marks the run done.
``triage show``, the gold set and the rest see the last finished run whole, or the new one.
What a run keeps from run to run (``triage_assignments``, ``triage_cluster_ids``, the embedding
cache) stays in ``main`` and is written step by step, so a killed run's work is picked up.

A run's row names its process (pid and start time): a command that looks at the runs marks one
``interrupted`` when that process is gone (SIGKILL leaves no chance to say so), and leaves a live
one (another terminal's) running.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from goldmine.output import warn
from goldmine.store import is_read_only, process_start, same_process

if TYPE_CHECKING:
    import duckdb

STAGE = "triage_next"
# The tables every run rebuilds from the ingest tables, and readers read.
RESULTS = (
    "triage_events",
    "triage_query_days",
    "triage_queries",
    "triage_clusters",
    "triage_cluster_labels",
)


def this_process() -> tuple[int, str | None]:
    """(pid, start time): what a run row records of the process running it."""
    return os.getpid(), process_start(os.getpid())


def _gone(pid: int | None, start: str | None, starting: bool) -> bool:
    """Whether the process a run row names no longer runs (a row without a pid: unknown, gone).
    ``starting``: this process is starting a run, so a run of its own is over."""
    if pid is None:
        return True
    if pid == os.getpid():
        return starting
    return not same_process(pid, start)


def running(con: duckdb.DuckDBPyConnection) -> list[tuple[int, int | None, str | None, object]]:
    """The runs marked running: (run_id, pid, process start, started_at). Rows from before the
    pid had its column carry it in params, without a start time."""
    return con.execute(
        """SELECT run_id, coalesce(pid, (params->>'pid')::BIGINT), process_start, started_at
           FROM triage_runs WHERE status = 'running' ORDER BY run_id"""
    ).fetchall()


def settle(con: duckdb.DuckDBPyConnection, starting: bool = False) -> list[int]:
    """Mark ``interrupted`` the running runs whose process is gone; returns the live ones' ids.
    ``starting``: called by a new run, for which this process's own earlier run is over."""
    live, gone = [], []
    for run_id, pid, start, _ in running(con):
        (gone if _gone(pid, start, starting) else live).append(run_id)
    if gone and not is_read_only(con):
        con.execute(
            "UPDATE triage_runs SET status = 'interrupted' WHERE list_contains(?, run_id)",
            [gone],
        )
    return live


def unfinished_note(con: duckdb.DuckDBPyConnection) -> str | None:
    """What a reader of triage's results must be told about the latest run, if anything: it is
    still running (its results are not shown yet), or it did not finish. Settles first."""
    live = settle(con)
    if live:
        run_id = live[-1]
        pid = next(r[1] for r in running(con) if r[0] == run_id)
        return (
            f"triage run {run_id} is still running (PID {pid}): what is shown is the last "
            "finished run's"
        )
    last = con.execute(
        "SELECT run_id, status FROM triage_runs ORDER BY run_id DESC LIMIT 1"
    ).fetchall()
    if last and last[0][1] == "interrupted":
        return f"the last triage run ({last[0][0]}) did not finish: run `goldmine triage run`"
    return None


def warn_unfinished(con: duckdb.DuckDBPyConnection) -> None:
    """:func:`unfinished_note` as a warning on stderr, for the commands that read the results."""
    note = unfinished_note(con)
    if note:
        warn(note)


def stage(con: duckdb.DuckDBPyConnection) -> None:
    """Empty copies of the result tables (same columns, defaults and constraints) in STAGE,
    replacing any a killed run left."""
    con.execute(f"CREATE SCHEMA IF NOT EXISTS {STAGE}")
    for table in RESULTS:
        ddl = con.execute(
            "SELECT sql FROM duckdb_tables() WHERE database_name = current_database() "
            "AND schema_name = 'main' AND table_name = ?",
            [table],
        ).fetchall()[0][0]
        head = f"CREATE TABLE {table}("
        if not ddl.startswith(head):
            raise RuntimeError(f"unexpected definition of {table}: {ddl[:80]}")
        con.execute(f"DROP TABLE IF EXISTS {STAGE}.{table}")
        con.execute(f"CREATE TABLE {STAGE}.{table}(" + ddl[len(head) :])


@contextmanager
def staged(con: duckdb.DuckDBPyConnection) -> Iterator[duckdb.DuckDBPyConnection]:
    """The run's view of the store: its own result tables first, everything else from main."""
    con.execute(f"SET search_path = '{STAGE},main'")
    try:
        yield con
    finally:
        con.execute("RESET search_path")


def publish(con: duckdb.DuckDBPyConnection) -> None:
    """The run's results over the last run's; the caller's transaction makes it one step."""
    for table in RESULTS:
        con.execute(f"DELETE FROM main.{table}")
        con.execute(f"INSERT INTO main.{table} SELECT * FROM {STAGE}.{table}")
    drop_stage(con)


def drop_stage(con: duckdb.DuckDBPyConnection) -> None:
    for table in RESULTS:
        con.execute(f"DROP TABLE IF EXISTS {STAGE}.{table}")
