"""The store: migrations on a blank file, upgrades, newer files refused, one writer at a time."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import duckdb
import pytest

from goldmine.config import resolve_db_path
from goldmine.errors import NotFoundError, StoreBusyError, StoreError
from goldmine.store import all_migrations, open_store, transaction

from helpers import run_cli


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
        result = cli("eval", "runs", "--db", str(db_path), subprocess=True)  # two processes
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
        pytest.raises(NotFoundError, match="no goldmine store"),
        open_store(tmp_path / "absent.duckdb", read_only=True),
    ):
        pass


# Every command that only reads, with the arguments it needs to get as far as opening the store.
READ_COMMANDS = [
    ["status"],
    ["rejects"],
    ["gold", "list"],
    ["gold", "show", "q_1"],
    ["gold", "versions"],
    ["gold", "verify"],
    ["gold", "diff", "1", "2"],
    ["gold", "export"],
    ["gold", "drift"],
    ["triage", "show"],
    ["triage", "cluster", "1"],
    ["triage", "export", "queries.csv"],
    ["eval", "runs"],
    ["eval", "compare", "1", "2"],
]


@pytest.mark.parametrize("args", READ_COMMANDS, ids=" ".join)
def test_a_read_command_creates_no_store(cli, tmp_path: Path, args: list[str]) -> None:
    db = tmp_path / "mistyped" / "store.duckdb"
    result = cli(*args, "--db", str(db), cwd=tmp_path)
    assert result.returncode == 2, result.stderr
    assert f"error: no goldmine store at {db} (create one with goldmine ingest" in result.stderr
    assert not db.parent.exists()


def test_eval_run_needs_no_store_with_no_store(cli, tmp_path: Path) -> None:
    gold = tmp_path / "gold.jsonl"
    gold.write_text('{"query_id": "q1", "query": "wing flutter", "relevant": ["d1"]}\n')
    run = tmp_path / "run.trec"
    run.write_text("q1 Q0 d1 1 1.0 x\n")
    db = tmp_path / "absent" / "store.duckdb"
    result = cli("eval", "run", "-g", str(gold), "-r", str(run), "--no-store", "--db", str(db))
    assert result.returncode == 0, result.stderr
    assert not db.parent.exists()
    # a baseline needs the corpus: with no store it says so and creates nothing
    result = cli("eval", "run", "-g", str(gold), "--baseline", "bm25", "--db", str(db))
    assert result.returncode == 2 and "no goldmine store at" in result.stderr, result.stderr
    assert not db.parent.exists()


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
    with open_store(db_path):
        pass
    result = cli("status", "--db", str(db_path), env={"GOLDMINE_MEMORY_LIMIT": "lots"})
    assert result.returncode == 2
    assert "memory_limit = 'lots' from GOLDMINE_MEMORY_LIMIT" in result.stderr
    assert "Memory must have a number" in result.stderr


@pytest.mark.parametrize(
    ("env", "says"),
    [
        ({"GOLDMINE_THREADS": "2.5"}, "GOLDMINE_THREADS must be a whole number of at least 1"),
        ({"GOLDMINE_THREADS": "-1"}, "GOLDMINE_THREADS must be a whole number of at least 1"),
        ({"GOLDMINE_MEMORY_LIMIT": "-1GB"}, "GOLDMINE_MEMORY_LIMIT must be a size"),
    ],
)
def test_an_engine_setting_duckdb_would_bend_is_refused(db_path: Path, cli, env, says) -> None:
    """GOLDMINE_THREADS=2.5 ran 3 threads and GOLDMINE_MEMORY_LIMIT=-1GB no limit at all, both
    without a word."""
    with open_store(db_path):
        pass
    result = cli("status", "--db", str(db_path), env=env)
    assert result.returncode == 2, result.stderr
    assert result.stderr.startswith(f"error: {says}") and "Traceback" not in result.stderr


def _holder(db_path: Path, seconds: float) -> subprocess.Popen:
    """Another process holding the store through open_store for ``seconds``."""
    code = textwrap.dedent(
        f"""
        import sys, time
        sys.argv = ["goldmine", "triage", "run"]
        from goldmine.store import open_store
        with open_store({str(db_path)!r}):
            print("ready", flush=True)
            time.sleep({seconds})
        """
    )
    holder = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline().strip() == "ready"
    return holder


def test_a_refused_reader_names_the_holder_and_its_age(db_path: Path, cli) -> None:
    with open_store(db_path):
        pass
    holder = _holder(db_path, 30)
    try:
        side = db_path.with_name(db_path.name + ".writer")
        assert json.loads(side.read_text())["pid"] == holder.pid
        start = time.monotonic()
        result = cli("status", "--db", str(db_path), env={"GOLDMINE_BUSY_WAIT": "0.5"},
                     subprocess=True)  # fmt: skip
        waited = time.monotonic() - start
        assert result.returncode == 3, result.stderr
        assert f"(PID {holder.pid}, `goldmine triage run`, running for " in result.stderr
        # The message gives the time it really waited: at least GOLDMINE_BUSY_WAIT, more on a
        # loaded machine (0.6 s was seen under pytest -n 2), never more than the call took.
        said = re.search(r"; waited (\d+\.\d) s\. ", result.stderr)
        assert said, result.stderr
        assert 0.5 <= float(said.group(1)) <= waited + 0.05 and waited >= 0.5
    finally:
        holder.kill()
        holder.wait()


def test_a_reader_waits_out_a_brief_holder(db_path: Path, cli) -> None:
    with open_store(db_path):
        pass
    holder = _holder(db_path, 1.0)
    try:
        result = cli("status", "--db", str(db_path), "--json", env={"GOLDMINE_BUSY_WAIT": "10"},
                     subprocess=True)  # fmt: skip
        assert result.returncode == 0, result.stderr
        assert json.loads(result.stdout)["counts"]
    finally:
        holder.wait()
    # the holder's record goes when it closes the store
    assert not db_path.with_name(db_path.name + ".writer").exists()


def test_duckdb_out_of_memory_is_one_line_naming_the_limit(tmp_path: Path) -> None:
    """A command that runs DuckDB out of memory ends with one line saying which limit, from
    where, and what to raise, not a traceback."""
    log = tmp_path / "log.jsonl"
    log.write_text(
        "".join(
            json.dumps({"query": f"query {i} about cards", "session_id": str(i // 5)}) + "\n"
            for i in range(20_000)
        )
    )
    db = tmp_path / "s.duckdb"
    assert run_cli("--db", str(db), "ingest", "searchlog", str(log)).returncode == 0
    out = run_cli("--db", str(db), "triage", "run", env={"GOLDMINE_MEMORY_LIMIT": "2MB"})
    assert out.returncode == 1, out.stderr
    last = out.stderr.strip().splitlines()[-1]
    assert last.startswith("error: DuckDB ran out of memory under memory_limit = '2MB' from ")
    assert "GOLDMINE_MEMORY_LIMIT" in last and "Traceback" not in out.stderr


@pytest.mark.parametrize(
    "args",
    [["add", "hello"], ["ingest", "searchlog", "LOG"], ["gold", "add-query", "hello"]],
    ids=" ".join,
)
def test_a_writing_command_makes_no_folder_for_a_mistyped_db(cli, tmp_path: Path, args) -> None:
    """Issue 27 item 14: `--db nodir/x.duckdb` made the folder and a new store in it."""
    log = tmp_path / "log.jsonl"
    log.write_text('{"query": "q", "ts": "2026-11-30T10:00:00Z"}\n')
    db = tmp_path / "nodir" / "x.duckdb"
    result = cli(*[str(log) if a == "LOG" else a for a in args], "--db", str(db), cwd=tmp_path)
    assert result.returncode == 2, result.stderr
    assert result.stderr.strip() == f"error: no folder {db.parent}: create it, or check --db"
    assert not db.parent.exists()


def test_a_file_that_is_no_store_is_bad_input(cli, tmp_path: Path) -> None:
    """A JSON lines or CSV file given as --db was opened by DuckDB as a database of one table
    ("None is a DuckDB database but not a goldmine store (it holds file, notes)"), and left a
    spill folder beside it."""
    for name, text in (("README.md", "# not a store\n"), ("notes.jsonl", '{"a": 1}\n'),
                       ("notes.csv", "a,b\n1,2\n")):  # fmt: skip
        notes = tmp_path / name
        notes.write_text(text)
        for args in (["status"], ["add", "hello"], ["triage", "run"]):
            result = cli(*args, "--db", str(notes))
            assert result.returncode == 2, result.stderr
            assert f"{notes} is not a goldmine store (not a DuckDB database file)" in result.stderr
        assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(name)) == [name]


def test_an_empty_file_as_db_is_a_new_store(cli, tmp_path: Path) -> None:
    """``--db "$(mktemp)"``: an empty file holds nothing, so a writing command makes the store
    there, and a reading one says there is no store yet; both used to say it was not a DuckDB
    database and leave a spill folder beside it."""
    empty = tmp_path / "fresh.duckdb"
    empty.touch()
    result = cli("status", "--db", str(empty))
    assert result.returncode == 2, result.stderr
    assert f"no goldmine store at {empty}" in result.stderr
    assert [p.name for p in tmp_path.iterdir()] == ["fresh.duckdb"]
    result = cli("add", "how do I reset my password", "--db", str(empty))
    assert result.returncode == 0, result.stderr
    assert cli("status", "--db", str(empty)).returncode == 0
    with duckdb.connect(str(empty), read_only=True) as con:
        assert con.execute("SELECT count(*) FROM manual_queries").fetchall() == [(1,)]


def test_another_duckdb_database_is_refused_and_left_as_it_was(cli, tmp_path: Path) -> None:
    """A team's own DuckDB file given as --db (analytics.duckdb): a read command such as
    ``gold list`` wrote goldmine's 38 tables into it, and ``goldmine.Store`` (read-only) did
    too. A DuckDB file that holds tables and is no goldmine store is refused, untouched; an
    empty DuckDB file is still made a store."""
    import goldmine
    from goldmine.errors import InputError

    theirs = tmp_path / "analytics.duckdb"
    with duckdb.connect(str(theirs)) as con:
        con.execute("CREATE TABLE page_views (url VARCHAR, n INTEGER)")
    for args in (["gold", "list"], ["status"], ["add", "hello"], ["eval", "runs"]):
        result = cli(*args, "--db", str(theirs))
        assert result.returncode == 2, (args, result.stderr)
        assert "not a goldmine store" in result.stderr and "page_views" in result.stderr
    with pytest.raises(InputError, match="not a goldmine store"):
        goldmine.Store(theirs).versions()
    with pytest.raises(InputError, match="not a goldmine store"), goldmine.Store(theirs).read():
        pass
    # nothing beside their file: the spill folder made for the open went with the refusal
    assert [p.name for p in tmp_path.iterdir()] == ["analytics.duckdb"]
    with duckdb.connect(str(theirs), read_only=True) as con:
        tables = con.execute("SELECT table_name FROM duckdb_tables()").fetchall()
    assert tables == [("page_views",)]
    empty = tmp_path / "empty.duckdb"
    duckdb.connect(str(empty)).close()
    assert cli("add", "hello", "--db", str(empty)).returncode == 0


def test_reading_a_store_leaves_no_folder_beside_it(db_path: Path) -> None:
    """The spill folder (``<store>.tmp``) is made for each open; a read from Python left it
    behind, empty, beside a file the read never changed."""
    import goldmine
    from goldmine.store import spill_root

    with open_store(db_path):
        pass
    assert not spill_root(db_path).exists()
    assert goldmine.Store(db_path).versions() is not None
    assert not spill_root(db_path).exists()


def test_the_holder_of_a_python_process_is_named_as_python(db_path: Path) -> None:
    """A notebook holding the store was named "goldmine -f kernel.json", a command nobody ran."""
    holder = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(f"""
            import sys, time
            sys.argv = ["/srv/ipykernel_launcher.py", "-f", "kernel-1.json"]
            from goldmine.store import open_store
            with open_store({str(db_path)!r}):
                print("ready", flush=True)
                time.sleep(30)
            """)],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert holder.stdout.readline().strip() == "ready"
        with pytest.raises(StoreBusyError) as caught:
            open_store(db_path).__enter__()
        said = str(caught.value)
        assert (
            "python ipykernel_launcher.py -f kernel-1.json" in said and "`goldmine -f" not in said
        )
    finally:
        holder.kill()
        holder.wait()
    time.sleep(0.1)


def test_a_store_on_a_read_only_volume_is_read(db_path: Path, monkeypatch, cli) -> None:
    """A published store on a read-only volume (a CI artifact, a bind mount): every reading
    command failed "cannot open …: Read-only file system", though DuckDB opens it read-only.
    Readers open it read-only; a command that writes says in one line that it cannot."""
    from goldmine import store

    from helpers import run_cli_in_process

    with open_store(db_path) as con:
        con.execute("INSERT INTO import_batches (batch_id, source, path, started_at) "
                    "VALUES (1, 'searchlog', 'x', now()::TIMESTAMP)")  # fmt: skip
    real = store._connect_waiting

    def volume(duckdb_, path, read_only, config, wait):  # the OS's answer to a write open
        if read_only:
            return real(duckdb_, path, read_only, config, wait)
        said = f'IO Error: Cannot open file "{path}": Read-only file system'
        return store._waiting(duckdb_, path, wait, lambda: _raise(duckdb.IOException(said)))

    monkeypatch.setattr(store, "_connect_waiting", volume)
    for args in (["status", "--json"], ["gold", "list"], ["eval", "runs"]):
        result = run_cli_in_process(*args, "--db", str(db_path))
        assert result.returncode == 0, (args, result.stderr)
    write = run_cli_in_process("gold", "add-query", "refund policy", "--db", str(db_path))
    assert write.returncode == 1 and "Traceback" not in write.stderr, write.stderr
    assert "read-only" in write.stderr.lower() and len(write.stderr.strip().splitlines()) == 1


def _raise(exc: BaseException):
    raise exc


def test_a_reader_out_of_memory_is_no_bad_file(tmp_path: Path) -> None:
    """Under GOLDMINE_MEMORY_LIMIT=50MB a 500k-event import said "cannot read as jsonl: Out of
    Memory Error" with exit 2: a malformed file. It is the memory limit's line, exit 1."""
    from goldmine.ingest.files import InputFile, unreadable

    item = InputFile(tmp_path / "log.jsonl", "jsonl", "none")
    oom = duckdb.OutOfMemoryException("Out of Memory Error: could not allocate block of 32 MiB")
    said = unreadable(item, oom)
    assert said.exit_code == 1 and "ran out of memory" in said.message
    # a full spill disk: DuckDB calls it memory, the line says where to look too
    full = unreadable(item, duckdb.OutOfMemoryException("failed to offload data block of 256 KiB"))
    assert "could not spill either" in full.message
    bad = unreadable(item, duckdb.InvalidInputException("Malformed JSON at byte 3"))
    assert bad.exit_code == 2 and "cannot read as" in bad.message


@pytest.mark.parametrize("how", ["flag", "env"])
def test_a_folder_as_the_store_is_bad_input_however_named(tmp_path: Path, how: str) -> None:
    """A folder given as the store was a usage error (exit 2) with --db and "cannot open …: Is a
    directory" (exit 1) through GOLDMINE_DB or goldmine.toml."""
    from helpers import run_cli_in_process

    folder = tmp_path / "store"
    folder.mkdir()
    env = {"GOLDMINE_DB": str(folder)} if how == "env" else None
    args = ["--db", str(folder)] if how == "flag" else []
    result = run_cli_in_process("status", *args, env=env, cwd=tmp_path)
    assert result.returncode == 2, result.stderr
    assert "folder" in result.stderr.lower() and "Traceback" not in result.stderr


@pytest.mark.parametrize("raw", ["-1", "nan", "-inf", "ten"])
def test_a_busy_wait_that_is_no_number_of_seconds_is_refused(cli, db_path: Path, raw) -> None:
    """GOLDMINE_BUSY_WAIT=-1 or nan was taken as 0 (no wait at all) without a word."""
    with open_store(db_path):
        pass
    result = cli("status", "--db", str(db_path), env={"GOLDMINE_BUSY_WAIT": raw})
    assert result.returncode == 2, result.stderr
    assert f"GOLDMINE_BUSY_WAIT must be a number of seconds (0 or more), not {raw!r}" in (
        result.stderr
    )
