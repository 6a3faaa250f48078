"""A ``triage run`` killed with SIGKILL: readers see the last finished run's results whole, never a
mix, and the next command that looks marks the run ``interrupted`` and says so; a run whose
process still runs is left alone (its pid and start time are in its row, so a reused pid is not
taken for it).

The killed runs are real ``goldmine triage run`` processes on the test queries, killed when their
stderr names a step (the real bundled model embeds: slow).
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from goldmine.store import open_store, process_start

from helpers import TRIAGE_QUERIES, load_queries

TEXTS = [q for qs in TRIAGE_QUERIES.values() for q in qs]
MORE = ["lost my card abroad", "block my stolen card", "card stolen what to do", "freeze card"]


def _did_not_finish(run_id: int) -> str:
    return f"the last triage run ({run_id}) did not finish: run `goldmine triage run`"


def _state(db: Path) -> dict:
    """What readers read: the per-query rows and the clusters."""
    with open_store(db) as con:
        queries = con.execute(
            "SELECT norm_query, cluster_id, canonical_query, tags FROM triage_queries ORDER BY 1"
        ).fetchall()
        clusters = con.execute(
            "SELECT cluster_id, label, volume FROM triage_clusters ORDER BY 1"
        ).fetchall()
    return {"queries": queries, "clusters": clusters}


def _runs(db: Path) -> list[tuple]:
    with open_store(db) as con:
        return con.execute("SELECT run_id, status FROM triage_runs ORDER BY run_id").fetchall()


def _triage_run(db: Path) -> subprocess.Popen:
    """``goldmine triage run`` in a real process, its stderr read as it goes."""
    run = subprocess.Popen(
        [sys.executable, "-m", "goldmine", "triage", "run", "--db", str(db)],
        stderr=subprocess.PIPE,
        text=True,
    )
    assert run.stderr is not None
    return run


def _kill_at(db: Path, step: str) -> None:
    """``goldmine triage run`` killed with SIGKILL as soon as it names ``step`` on stderr."""
    run = _triage_run(db)
    seen = []
    for line in run.stderr:
        seen.append(line)
        if line.startswith(f"triage: {step}"):
            run.send_signal(signal.SIGKILL)
            break
    assert run.wait() == -signal.SIGKILL, "".join(seen)


@pytest.mark.slow
@pytest.mark.parametrize("step", ["dedupe", "embed", "cluster"])
def test_a_killed_run_leaves_the_last_results_whole_and_is_flagged(
    cli, db_path: Path, step: str
) -> None:
    with open_store(db_path) as con:
        load_queries(con, TEXTS)
    first = cli("triage", "run", "--db", str(db_path))
    assert first.returncode == 0, first.stderr
    before = _state(db_path)
    shown = json.loads(cli("triage", "show", "--json", "--db", str(db_path)).stdout)
    with open_store(db_path) as con:
        load_queries(con, MORE, start=len(TEXTS))

    _kill_at(db_path, step)

    assert _state(db_path) == before  # the killed run's rows are nowhere a reader looks
    out = cli("triage", "show", "--json", "--db", str(db_path))
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == shown
    assert _did_not_finish(2) in out.stderr
    assert _runs(db_path) == [(1, "done"), (2, "interrupted")]
    status = cli("status", "--db", str(db_path))
    assert status.returncode == 0 and _did_not_finish(2) in status.stderr

    again = cli("triage", "run", "--db", str(db_path), "--json")
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["resumed_runs"] == [2]
    after = cli("triage", "show", "--db", str(db_path))
    assert "did not finish" not in after.stderr
    with open_store(db_path) as con:
        unclustered = con.execute(
            "SELECT count(*) FROM triage_queries WHERE cluster_id IS NULL"
        ).fetchall()[0][0]
        n = con.execute("SELECT count(*) FROM triage_queries").fetchall()[0][0]
    assert unclustered == 0 and n == len(before["queries"]) + len(MORE)


@pytest.mark.slow
def test_a_live_run_is_not_marked_interrupted(cli, db_path: Path) -> None:
    """Another terminal's run, with the store closed while it embeds: `triage show` says it is
    running and leaves it so; it then finishes."""
    with open_store(db_path) as con:
        load_queries(con, TEXTS)
    run = _triage_run(db_path)
    for line in run.stderr:
        if line.startswith("triage: embed"):
            break
    out = cli("triage", "show", "--db", str(db_path), subprocess=True)  # beside the live run
    status = cli("status", "--db", str(db_path), subprocess=True)
    rest = run.stderr.read()
    assert run.wait() == 0, rest
    assert "triage run 1 is still running" in out.stderr + status.stderr
    assert _runs(db_path) == [(1, "done")]


def _sleeper() -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])


@pytest.mark.parametrize(("same_start", "expected"), [(True, "running"), (False, "interrupted")])
def test_a_run_row_names_its_process_by_pid_and_start_time(
    cli, db_path: Path, same_start: bool, expected: str
) -> None:
    """A 'running' row naming a live process is left alone; the same pid with another start time
    is a reused pid: that run's process is gone."""
    live = _sleeper()
    try:
        start = process_start(live.pid)
        assert start is not None
        with open_store(db_path) as con:
            load_queries(con, TEXTS)
            con.execute(
                "INSERT INTO triage_runs (run_id, started_at, status, pid, process_start) "
                "VALUES (1, now()::TIMESTAMP, 'running', ?, ?)",
                [live.pid, start if same_start else str(int(start) + 1)],
            )
        out = cli("triage", "show", "--db", str(db_path))
        assert _runs(db_path) == [(1, expected)]
        if expected == "interrupted":
            assert _did_not_finish(1) in out.stderr
        else:
            assert "triage run 1 is still running" in out.stderr
    finally:
        live.kill()
        live.wait()


def test_a_run_of_a_dead_process_from_an_older_goldmine_is_marked(cli, db_path: Path) -> None:
    """A row written before the start time was recorded (its pid in params) is judged by pid."""
    dead = _sleeper()
    dead.kill()
    dead.wait()
    with open_store(db_path) as con:
        load_queries(con, TEXTS)
        con.execute(
            "INSERT INTO triage_runs (run_id, started_at, status, params) "
            "VALUES (1, now()::TIMESTAMP, 'running', ?)",
            [json.dumps({"pid": dead.pid})],
        )
    out = cli("status", "--db", str(db_path), "--json")
    assert out.returncode == 0, out.stderr
    assert _runs(db_path) == [(1, "interrupted")]
    assert _did_not_finish(1) in out.stderr
    # the first look after the kill says so too: it said 'running' for the dead process
    assert json.loads(out.stdout)["triage"]["status"] == "interrupted", out.stdout
