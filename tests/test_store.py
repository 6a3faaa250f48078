"""The store: migrations on a blank file, upgrades, newer files refused, one writer at a time."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time
from pathlib import Path

import duckdb
import pytest

from goldmine.config import resolve_db_path
from goldmine.errors import StoreBusyError, StoreError
from goldmine.store import all_migrations, open_store, transaction


def test_blank_file_gets_every_migration(db_path: Path) -> None:
    with open_store(db_path) as con:
        applied = [r[0] for r in con.execute("SELECT name FROM schema_migrations").fetchall()]
        tables = {r[0] for r in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()}
    assert applied == [m.key for m in all_migrations()]
    assert {"import_batches", "rejects", "search_events", "chunks", "eval_runs"} <= tables


def test_reopening_applies_nothing_twice(db_path: Path) -> None:
    with open_store(db_path):
        pass
    with open_store(db_path) as con:
        names = [r[0] for r in con.execute("SELECT name FROM schema_migrations").fetchall()]
    assert len(names) == len(set(names))


def test_older_file_is_upgraded(db_path: Path) -> None:
    first = all_migrations()[0]
    con = duckdb.connect(str(db_path))
    con.execute("CREATE TABLE schema_migrations (name VARCHAR, applied_at TIMESTAMP)")
    first.run(con)
    con.execute("INSERT INTO schema_migrations VALUES (?, now())", [first.key])
    con.close()
    with open_store(db_path) as con:
        names = [r[0] for r in con.execute("SELECT name FROM schema_migrations").fetchall()]
    assert names == [m.key for m in all_migrations()]


def test_newer_file_is_refused(db_path: Path) -> None:
    with open_store(db_path) as con:
        con.execute("INSERT INTO schema_migrations (name) VALUES ('9999_from_the_future')")
    with pytest.raises(StoreError, match="newer goldmine"), open_store(db_path):
        pass


def test_transaction_rolls_back_on_error(db_path: Path) -> None:
    with open_store(db_path) as con:
        with pytest.raises(RuntimeError), transaction(con):
            con.execute("INSERT INTO settings (key, value) VALUES ('a', 'b')")
            raise RuntimeError("boom")
        assert con.execute("SELECT count(*) FROM settings").fetchall() == [(0,)]


def test_second_process_gets_a_clear_busy_error(db_path: Path, cli) -> None:
    with open_store(db_path):
        pass
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            textwrap.dedent(
                f"""
                import time, duckdb
                con = duckdb.connect({str(db_path)!r})
                print("ready", flush=True)
                time.sleep(30)
                """
            ),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "ready"
        with pytest.raises(StoreBusyError, match="in use by another goldmine process"):
            open_store(db_path).__enter__()
        result = cli("eval", "runs", "--db", str(db_path))
        assert result.returncode == 3
        assert "database is in use by another goldmine process" in result.stderr
        assert "Traceback" not in result.stderr
    finally:
        holder.kill()
        holder.wait()
    time.sleep(0.1)


def test_db_resolution_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from goldmine.config import _load

    assert resolve_db_path(None) == Path("goldmine.duckdb")
    (tmp_path / "goldmine.toml").write_text('[store]\ndb = "data/from-toml.duckdb"\n')
    _load.cache_clear()
    assert resolve_db_path(None) == tmp_path / "data/from-toml.duckdb"
    monkeypatch.setenv("GOLDMINE_DB", "from-env.duckdb")
    assert resolve_db_path(None) == Path("from-env.duckdb")
    assert resolve_db_path("flag.duckdb") == Path("flag.duckdb")


def test_read_only_open_of_a_migrated_file(db_path: Path) -> None:
    with open_store(db_path) as con:
        con.execute("INSERT INTO settings (key, value) VALUES ('k', 'v')")
    with open_store(db_path, read_only=True) as con:
        assert con.execute("SELECT value FROM settings").fetchall() == [("v",)]


def test_read_only_open_of_a_missing_file_says_so(tmp_path: Path) -> None:
    with (
        pytest.raises(StoreError, match="no goldmine store"),
        open_store(tmp_path / "absent.duckdb", read_only=True),
    ):
        pass


def test_engine_settings_reach_duckdb(
    tmp_path: Path, db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from goldmine.config import _load

    (tmp_path / "goldmine.toml").write_text('[store]\nmemory_limit = "300MB"\nthreads = 1\n')
    _load.cache_clear()
    query = "SELECT current_setting('memory_limit'), current_setting('threads')"
    with open_store(db_path) as con:
        assert con.execute(query).fetchall() == [("286.1 MiB", 1)]
    monkeypatch.setenv("GOLDMINE_THREADS", "2")
    with open_store(db_path) as con:
        assert con.execute(query).fetchall() == [("286.1 MiB", 2)]


def test_a_refused_engine_setting_names_its_source(db_path: Path, cli) -> None:
    result = cli("status", "--db", str(db_path), env={"GOLDMINE_MEMORY_LIMIT": "lots"})
    assert result.returncode == 2
    assert "memory_limit = 'lots' from GOLDMINE_MEMORY_LIMIT" in result.stderr
    assert "Memory must have a number" in result.stderr
