"""The one DuckDB file every stage reads and writes, and the migrations that shape it.

Each stage declares its tables as named, numbered migrations in its own ``schema`` module; opening
the store applies the ones a file lacks, each with the record that it ran in one transaction. A file
that has migrations this code does not know was written by a newer goldmine and is refused.

DuckDB allows one writer process, and while one process has the file open no other can open it at
all. Commands therefore hold a connection only for their unit of work (``open_store`` as a context
manager), and long work (embedding, clustering) runs with the store closed. Whoever holds the file
says so in a small side file, ``<store>.writer`` (pid, command, start), removed on close; a process
that meets the lock retries for a moment (readers are brief), then gets ``StoreBusyError`` naming
the holder and how long it has been running.

Only commands that write create a store: the others pass ``create=False`` and a missing file is a
``NotFoundError``, so a mistyped ``--db`` leaves no empty file or folder behind.
"""

from __future__ import annotations

import importlib
import json
import math
import os
import re
import shutil
import stat
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from goldmine.config import engine_settings, resolve_db_path
from goldmine.errors import (
    GoldmineError,
    InputError,
    Interrupted,
    NotFoundError,
    StoreBusyError,
    StoreError,
    error_line,
)

if TYPE_CHECKING:
    import duckdb

# Number ranges keep stages from colliding: core 1-99, ingest 100-199, triage 200-299,
# goldset 300-399, eval 400-499.
SCHEMA_MODULES = (
    "goldmine.schema",
    "goldmine.ingest.schema",
    "goldmine.triage.schema",
    "goldmine.goldset.schema",
    "goldmine.eval.schema",
)

Apply = str | Callable[["duckdb.DuckDBPyConnection"], None]


@dataclass(frozen=True)
class Migration:
    """One schema step. ``apply`` is SQL (may hold several statements) or a function."""

    number: int
    name: str
    apply: Apply

    @property
    def key(self) -> str:
        return f"{self.number:04d}_{self.name}"

    def run(self, con: duckdb.DuckDBPyConnection) -> None:
        if callable(self.apply):
            self.apply(con)
        else:
            con.execute(self.apply)


def all_migrations() -> list[Migration]:
    found: list[Migration] = []
    for module_name in SCHEMA_MODULES:
        found.extend(importlib.import_module(module_name).MIGRATIONS)
    found.sort(key=lambda m: m.number)
    numbers = [m.number for m in found]
    if len(numbers) != len(set(numbers)):
        dupes = sorted({n for n in numbers if numbers.count(n) > 1})
        raise RuntimeError(f"two migrations share a number: {dupes}")
    return found


@contextmanager
def transaction(con: duckdb.DuckDBPyConnection) -> Iterator[duckdb.DuckDBPyConnection]:
    """BEGIN … COMMIT, rolled back on any exception (Ctrl-C included)."""
    con.execute("BEGIN TRANSACTION")
    try:
        yield con
    except BaseException:
        con.execute("ROLLBACK")
        raise
    con.execute("COMMIT")


def fetch_dicts(
    con: duckdb.DuckDBPyConnection, sql: str, params: list | dict | None = None
) -> list[dict[str, Any]]:
    """The query's rows, each a dict by column name: for the few rows a command prints or
    returns as JSON (a bulk read stays in Arrow or polars)."""
    cur = con.execute(sql, params or [])
    names = [d[0] for d in cur.description]
    return [dict(zip(names, row, strict=True)) for row in cur.fetchall()]


def register_function(con: duckdb.DuckDBPyConnection, name: str, fn: Callable, *signature,
                      **options: Any) -> None:  # fmt: skip
    """``con.create_function(name, fn, *signature, **options)`` unless ``con`` has ``name``
    already: a Python function the stages' SQL calls, registered once per connection."""
    found = con.execute(
        "SELECT count(*) FROM duckdb_functions() WHERE function_name = ?", [name]
    ).fetchall()[0][0]
    if not found:
        con.create_function(name, fn, *signature, **options)


def applied_migrations(con: duckdb.DuckDBPyConnection) -> list[str]:
    """Names of the migrations this file has; creates the record table on a writable blank file.

    Asking the table directly is ~18 ms cheaper than a catalog lookup first (start-up matters for
    ``eval run``); only a blank file takes the exception path.
    """
    try:
        return [r[0] for r in con.execute("SELECT name FROM schema_migrations").fetchall()]
    except _duckdb_error():
        _refuse_foreign(con)
        if is_read_only(con):
            return []
    con.execute(
        "CREATE TABLE schema_migrations ("
        " name VARCHAR NOT NULL, applied_at TIMESTAMP NOT NULL DEFAULT current_timestamp)"
    )
    return []


def _refuse_foreign(con: duckdb.DuckDBPyConnection) -> None:
    """A DuckDB database with tables of its own and no migration record is someone else's (a
    team's analytics file given as --db): goldmine writes none of its tables into it."""
    theirs = [
        r[0]
        for r in con.execute(
            "SELECT table_name FROM duckdb_tables() WHERE database_name = current_database() "
            "AND NOT temporary UNION ALL SELECT view_name FROM duckdb_views() "
            "WHERE database_name = current_database() AND NOT internal AND NOT temporary "
            "ORDER BY 1"
        ).fetchall()
    ]
    if theirs:
        path = con.execute(
            "SELECT path FROM duckdb_databases() WHERE database_name = current_database()"
        ).fetchall()[0][0]
        more = f" and {len(theirs) - 3} more" if len(theirs) > 3 else ""
        raise InputError(
            f"{path} is a DuckDB database but not a goldmine store (it holds "
            f"{', '.join(theirs[:3])}{more}): point --db (goldmine.Store(path) in Python) at a "
            "goldmine store or a new file"
        )


def is_read_only(con: duckdb.DuckDBPyConnection) -> bool:
    rows = con.execute(
        "SELECT readonly FROM duckdb_databases() WHERE database_name = current_database()"
    ).fetchall()
    return bool(rows and rows[0][0])


def pending_migrations(con: duckdb.DuckDBPyConnection) -> list[Migration]:
    """Migrations this file lacks; raises if the file knows migrations this code does not."""
    done = set(applied_migrations(con))
    known = all_migrations()
    unknown = done - {m.key for m in known}
    if unknown:
        raise StoreError(
            f"this store was written by a newer goldmine (it has migration "
            f"{sorted(unknown)[-1]}, which this version does not know); upgrade goldmine"
        )
    return [m for m in known if m.key not in done]


def _duckdb_error() -> type[Exception]:
    """DuckDB's base exception, from whichever module the open connection came from."""
    return (sys.modules.get("_duckdb") or sys.modules["duckdb"]).Error


def migrate(con: duckdb.DuckDBPyConnection) -> list[str]:
    """Apply every pending migration, each with its record in one transaction."""
    ran = []
    for migration in pending_migrations(con):
        try:
            with transaction(con):
                migration.run(con)
                con.execute("INSERT INTO schema_migrations (name) VALUES (?)", [migration.key])
        except _duckdb_error() as exc:
            raise StoreError(f"migration {migration.key} failed: {exc}") from exc
        ran.append(migration.key)
    return ran


_LOCK_PID = re.compile(r"PID (\d+)")
BUSY_WAIT_ENV = "GOLDMINE_BUSY_WAIT"
# A reader meeting the lock retries this long: writers hold the file for seconds at most now.
BUSY_WAIT_S = 2.0
# When this process started: the holder file reports how long the command has been running.
_STARTED = time.time()


def missing_store(path: Path) -> NotFoundError:
    return NotFoundError(
        f"no goldmine store at {path} (create one with goldmine ingest searchlog|tickets|chat|"
        "corpus FILE, or point --db, or goldmine.Store(path) in Python, at an existing store)"
    )


def holder_file(path: Path) -> Path:
    """``<store>.writer``: who holds the store now (pid, command, start), while it is open."""
    return path.with_name(path.name + ".writer")


def pid_alive(pid: int) -> bool:
    """Whether a process with this pid exists (a record left by a killed one is stale)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def process_start(pid: int) -> str | None:
    """When a process started, in clock ticks since boot (field 22 of ``/proc/<pid>/stat``): with
    the pid it names one process, never a later one given the same pid. None when there is no
    such process, or no /proc to ask."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text(encoding="ascii", errors="replace")
    except OSError:
        return None
    fields = text.rsplit(")", 1)[-1].split()  # after the command name, which may hold spaces
    return fields[19] if len(fields) > 19 else None


def same_process(pid: int, start: str | None) -> bool:
    """Whether the process recorded as (pid, start) still runs. Without /proc (or a start
    recorded) only the pid can be checked."""
    if start is None or not Path("/proc/self/stat").exists():
        return pid_alive(pid)
    return process_start(pid) == start


def _holder(path: Path, pid: int | None) -> dict | None:
    """The live holder recorded beside the store (the one DuckDB names, when it names one)."""
    try:
        data = json.loads(holder_file(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or not isinstance(data.get("pid"), int):
        return None
    if (pid is not None and data["pid"] != pid) or not pid_alive(data["pid"]):
        return None  # left behind by a killed process
    return data


def _duration(seconds: float) -> str:
    seconds = max(0, int(seconds))
    if seconds < 60:
        return f"{seconds} s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes} min {seconds:02d} s"
    return f"{minutes // 60} h {minutes % 60:02d} min"


def _busy_error(path: Path, exc: Exception, waited: float) -> StoreBusyError:
    match = _LOCK_PID.search(str(exc))
    pid = int(match.group(1)) if match else None
    who = f" (PID {pid})" if pid else ""
    holder = _holder(path, pid)
    if holder:
        who = (
            f" (PID {holder['pid']}, `{holder.get('command', '?')}`, running for "
            f"{_duration(time.time() - float(holder.get('started', time.time())))})"
        )
    return StoreBusyError(
        f"database is in use by another goldmine process{who}: {path}; waited {waited:.1f} s. "
        "Wait for it to finish, or point --db (goldmine.Store(path) in Python) at another file."
    )


# How long a writer that closed the store for long work waits to reopen it: readers hold it for
# well under a second, and giving up would throw away the work just done. Here, not in
# goldmine.embed, so a writer that embeds nothing (a model's grades) imports no numpy for it.
WRITE_WAIT_S = 60.0


def busy_wait() -> float:
    """Seconds a process retries a locked store: GOLDMINE_BUSY_WAIT, else BUSY_WAIT_S."""
    raw = os.environ.get(BUSY_WAIT_ENV, "").strip()
    if not raw:
        return BUSY_WAIT_S
    try:
        seconds = float(raw)
    except ValueError:
        seconds = math.nan
    if not seconds >= 0:  # nan and a negative wait were taken as none
        raise InputError(f"{BUSY_WAIT_ENV} must be a number of seconds (0 or more), not {raw!r}")
    return seconds


_held: dict[Path, int] = {}  # this process's open_store depth per store, for the holder file


def _claim(path: Path) -> None:
    key = path.resolve()
    _held[key] = _held.get(key, 0) + 1
    if _held[key] > 1:
        return
    _write_holder(path)


def _command() -> str:
    """This process's command as the busy error names it: ``goldmine …`` for the command line,
    else the Python program (a notebook's kernel, a test run), never a goldmine command."""
    if not sys.argv or not sys.argv[0]:
        return "python"
    program = Path(sys.argv[0])
    if program.name == "goldmine" or (
        program.name == "__main__.py" and program.parent.name == "goldmine"
    ):
        return " ".join(["goldmine", *sys.argv[1:]])
    return " ".join(["python", program.name, *sys.argv[1:]])


def _write_holder(path: Path) -> None:
    record = {
        "pid": os.getpid(),
        "command": _command(),
        "started": _STARTED,
        "opened": time.time(),
    }
    with suppress(OSError):  # a read-only folder: the holder is then named by PID alone
        holder_file(path).write_text(json.dumps(record), encoding="utf-8")


def _release(path: Path) -> None:
    key = path.resolve()
    _held[key] -= 1
    if _held[key]:
        return
    del _held[key]
    _drop_own_spill(path)
    _drop_holder(path)


def _drop_holder(path: Path) -> None:
    side = holder_file(path)
    try:
        if json.loads(side.read_text(encoding="utf-8")).get("pid") == os.getpid():
            side.unlink()
    except (OSError, ValueError):
        pass


def duckdb_engine(lean: bool = False):
    """The DuckDB module to connect with.

    ``lean`` takes the C extension ``_duckdb`` alone, which the ``duckdb`` package re-exports: the
    same connection class and exceptions, imported in half the time (the package's Python layer
    pulls in importlib.metadata). Its connections lack that layer's helpers (``con.sql``,
    relations' ``.pl()``, scanning polars frames), so only code that sticks to
    ``execute``/``fetchall`` asks for it: ``goldmine eval run`` storing a small run, whose whole
    run on a starter set takes less than the full import. Every other connection comes from the
    full package, so no caller imports ``duckdb`` for its side effects.
    """
    if lean and "duckdb" not in sys.modules:
        try:
            import _duckdb

            return _duckdb
        except ImportError:  # a DuckDB build without the separate extension module
            pass
    import duckdb

    return duckdb


# A DuckDB database file holds this at byte 8 (its main header's magic).
_DUCKDB_MAGIC = b"DUCK"


def _empty_file(path: Path) -> bool:
    try:
        return path.is_file() and path.stat().st_size == 0
    except OSError:
        return False


def _refuse_other_file(path: Path) -> None:
    """A file given as --db that is no DuckDB database (notes, a log, a CSV), before anything is
    made beside it: DuckDB opens a JSON lines or CSV file as a database of one table."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(12)
    except (FileNotFoundError, IsADirectoryError, PermissionError):
        return  # DuckDB's own error says what is wrong, or the store is made
    if head and head[8:12] != _DUCKDB_MAGIC:
        raise InputError(f"{path} is not a goldmine store (not a DuckDB database file): check --db")


def _connect_waiting(duckdb, path: Path, read_only: bool, config: dict, wait: float):
    """duckdb.connect, retried while another process holds the lock, up to ``wait`` seconds."""
    return _waiting(
        duckdb, path, wait, lambda: duckdb.connect(str(path), read_only=read_only, config=config)
    )


def _waiting(duckdb, path: Path, wait: float, opening: Callable):
    """``opening()``, retried while another process holds the store's lock, up to ``wait``
    seconds; then StoreBusyError naming the holder."""
    start = time.monotonic()
    pause = 0.02
    while True:
        try:
            return opening()
        except duckdb.IOException as exc:
            if "not a valid DuckDB database file" in str(exc):
                raise InputError(
                    f"{path} is not a goldmine store (not a DuckDB database file): check --db"
                ) from exc
            if "lock" not in str(exc).lower():
                raise StoreError(f"cannot open {path}: {exc}") from exc
            waited = time.monotonic() - start
            if waited >= wait:
                raise _busy_error(path, exc, waited) from exc
            time.sleep(min(pause, wait - waited))
            pause = min(pause * 2, 0.2)


# DuckDB writes what does not fit its memory limit to spill files, in plain text: a query's rows,
# PII before redaction included. They go under ``<store>.tmp/<pid>-<start>/``, one folder per
# process, private (0700) like the folder above it. DuckDB removes its files when the store is
# closed, but a killed process leaves them; every open removes the folders of processes that no
# longer run (same pid and start time, so a reused pid is not trusted), never a live one's.
_SPILL_FOLDER = re.compile(r"(\d+)-(\d+|x)")


def spill_root(path: Path) -> Path:
    """``<store>.tmp``: where the store's processes spill, each in its own folder."""
    return path.with_name(path.name + ".tmp")


def _own_spill(path: Path) -> Path:
    return spill_root(path) / f"{os.getpid()}-{process_start(os.getpid()) or 'x'}"


def _private_folder(folder: Path) -> None:
    folder.mkdir(mode=0o700, exist_ok=True)
    if stat.S_IMODE(folder.stat().st_mode) != 0o700:  # made by an older goldmine, or DuckDB
        folder.chmod(0o700)


def _stale(entry: Path) -> bool:
    """A spill folder whose process is gone."""
    named = _SPILL_FOLDER.fullmatch(entry.name)
    if not named or not entry.is_dir():
        return False
    start = None if named.group(2) == "x" else named.group(2)
    return not same_process(int(named.group(1)), start)


def sweep_spill(path: Path, exclusive: bool = False) -> None:
    """Remove the spill folders of processes that no longer run. ``exclusive``: this process
    holds the store read-write, so no other has it open, and loose DuckDB files in the root
    (an older goldmine spilled there) are stale too."""
    root = spill_root(path)
    with suppress(OSError):
        for entry in root.iterdir():
            if _stale(entry):
                shutil.rmtree(entry, ignore_errors=True)
            elif exclusive and entry.is_file() and entry.name.startswith("duckdb_temp"):
                entry.unlink(missing_ok=True)


def spill_folder(path: Path) -> Path | None:
    """This process's private spill folder for the store, made after removing stale ones; None
    when it cannot be made (a read-only folder: DuckDB then keeps its default)."""
    own = _own_spill(path)
    # Another process closing the store removes an empty root (_drop_own_spill): made again
    # when it went between the two mkdirs, never left to DuckDB's shared default folder.
    for attempt in range(100):  # each a few syscalls; three processes racing need under ten
        try:
            _private_folder(spill_root(path))
            if attempt == 0:
                sweep_spill(path)
            _private_folder(own)
            return own
        except (FileNotFoundError, FileExistsError):  # the root went, or came back, meanwhile
            continue
        except OSError:
            return None
    return None


def _drop_own_spill(path: Path) -> None:
    """This process's spill folder, once DuckDB has removed its files (it does on close), and
    the root when no other process has one there: a read leaves nothing beside the store."""
    with suppress(OSError):
        _own_spill(path).rmdir()
        spill_root(path).rmdir()


def known_failure(exc: BaseException) -> GoldmineError | None:
    """What DuckDB or the system raised that a user can act on, as one line: Ctrl-C inside a
    query, a write to a store only readable here, a folder that takes no journal, out of
    memory, a full disk; None for anything else (a defect: a traceback)."""
    if isinstance(exc, KeyboardInterrupt) or _interrupted(exc):
        return Interrupted()
    if "attached in read-only mode" in str(exc):  # a store only readable here (_cannot_write)
        return StoreError(
            "the store can only be read here (its file or folder is read-only), and this command "
            "writes to it"
        )
    said = error_line(exc)
    if _cannot_write(exc) and (".wal" in said or "commit" in said.lower()):
        # a folder that takes no new file: the journal (.wal) is made at the commit
        return StoreError(
            f"cannot write the store's files ({said}): its folder must be writable; the "
            "unfinished step stored nothing"
        )
    return out_of_memory(exc) or _disk_full(exc)


def _interrupted(exc: BaseException) -> bool:
    # DuckDB takes SIGINT itself and stops its query with an exception of its own.
    names = {c.__name__ for c in type(exc).__mro__}
    return "InterruptException" in names or (
        isinstance(exc, RuntimeError) and "query interrupted" in str(exc).lower()
    )


def _disk_full(exc: BaseException) -> StoreError | None:
    said = error_line(exc)
    if "no space left on device" not in said.lower():
        return None
    return StoreError(
        f"no space left on device ({said}); the unfinished step stored nothing: free some "
        "space beside the store (it and its .tmp folder) and run the command again"
    )


def out_of_memory(exc: BaseException) -> StoreError | None:
    """DuckDB's out-of-memory error as a StoreError saying which limit was hit, where it came
    from and what to raise; None for any other exception."""
    if not any(c.__name__ == "OutOfMemoryException" for c in type(exc).__mro__):
        return None
    limit = engine_settings().get("memory_limit")
    given = f"memory_limit = {limit[0]!r} from {limit[1]}" if limit else "DuckDB's default limit"
    said = error_line(exc)
    # "failed to offload": the spill files had no room either, most often a full disk
    spill = (
        "; it could not spill either: free space beside the store (its .tmp folder)"
        if "offload" in said
        else ""
    )
    return StoreError(
        f"DuckDB ran out of memory under {given} ({said}){spill}: raise GOLDMINE_MEMORY_LIMIT or "
        "[store] memory_limit in goldmine.toml, or run fewer threads (GOLDMINE_THREADS)"
    )


def connect(
    db: str | Path | None = None,
    *,
    read_only: bool = False,
    lean: bool = False,
    create: bool = True,
    wait: float | None = None,
) -> duckdb.DuckDBPyConnection:
    """Open (migrating as needed) the store. Callers close it; prefer open_store.

    ``create``: make the file (and its folder) when absent; read commands pass False and get
    NotFoundError instead. ``lean``: execute/fetch only, for start-up-sensitive commands (see
    ``duckdb_engine``). ``wait``: seconds to retry a store another process holds (default
    :func:`busy_wait`).
    """
    duckdb = duckdb_engine(lean)
    path = resolve_db_path(db)
    if path.is_dir():  # --db's own check says so too; GOLDMINE_DB and goldmine.toml reach here
        raise InputError(
            f"{path} is a folder, not a store file: name a file in it ({path / 'goldmine.duckdb'})"
        )
    if _empty_file(path):  # ``--db "$(mktemp)"``: a file holding nothing is no store yet
        if read_only or not create:
            raise missing_store(path)
        path.unlink()  # DuckDB refuses to open an empty file as a new database
    if not path.exists() and (read_only or not create):
        raise missing_store(path)
    if not read_only and not path.exists() and path.parent and not path.parent.exists():
        # A store is made only in a folder that is there: a mistyped --db folder is no new store.
        raise InputError(f"no folder {path.parent}: create it, or check --db")
    _refuse_other_file(path)
    settings = engine_settings()
    config = _engine_config(path, settings, spill=path.exists() or not read_only)
    try:
        return _opened(duckdb, path, config, settings, read_only=read_only, lean=lean, wait=wait)
    except BaseException:
        if path.resolve() not in _held:  # no open unit of work of this process spills there
            _drop_own_spill(path)  # a refused file (someone else's database) keeps nothing beside
        raise


def _opened(
    duckdb, path: Path, config: dict, settings: dict, *, read_only: bool, lean: bool,
    wait: float | None,
) -> duckdb.DuckDBPyConnection:  # fmt: skip
    """``connect``'s connection once the file is known to be a store or to be made one."""
    try:
        con = _connect_waiting(
            duckdb, path, read_only, config, busy_wait() if wait is None else wait
        )
    except StoreError as exc:
        if not read_only and path.exists() and _cannot_write(exc.__cause__ or exc):
            # A store on a read-only volume or file (a published artifact): read it read-only;
            # a write then fails in one line (known_failure).
            return _read_only_instead(duckdb, path, config, wait)
        raise
    except duckdb.Error as exc:
        if "different configuration" in str(exc) and path.resolve() in _held:
            raise _held_here(path) from exc
        if settings and not isinstance(exc, duckdb.IOException | duckdb.CatalogException):
            # DuckDB's message names neither the setting nor where its value came from.
            given = "; ".join(f"{k} = {v!r} from {where}" for k, (v, where) in settings.items())
            raise InputError(
                f"a store setting was refused ({given}): {str(exc).strip().splitlines()[0]}"
            ) from exc
        raise StoreError(f"cannot open {path}: {exc}") from exc
    if not read_only:
        sweep_spill(path, exclusive=True)
    try:
        if read_only:
            if pending_migrations(con):
                con.close()
                # An older file needs upgrading first: do it read-write, then reopen read-only.
                connect(path, lean=lean).close()
                return connect(path, read_only=True, lean=lean)
        else:
            migrate(con)
    except BaseException:
        con.close()
        raise
    return con


def _cannot_write(exc: BaseException) -> bool:
    said = str(exc).lower()
    return any(
        w in said for w in ("read-only file system", "permission denied", "operation not permitted")
    )


def _read_only_instead(duckdb, path: Path, config: dict, wait: float | None):
    con = _connect_waiting(duckdb, path, True, config, busy_wait() if wait is None else wait)
    if pending_migrations(con):
        con.close()
        raise StoreError(f"{path} needs upgrading to this goldmine, and its file cannot be written")
    return con


def _held_here(path: Path) -> StoreError:
    """What DuckDB's "different configuration" means when this process has the store open: a
    read-only and a read-write connection cannot both be open in one process."""
    if open_writer(path) is not None:
        return StoreError(f"this process holds {path} open for writing: read through `con` "
                          "inside the block, or after it")  # fmt: skip
    return StoreError(f"this process holds {path} open for reading: write after the block")


@contextmanager
def open_store(
    db: str | Path | None = None,
    *,
    read_only: bool = False,
    lean: bool = False,
    create: bool = True,
    wait: float | None = None,
    detachable: bool = False,
) -> Iterator[duckdb.DuckDBPyConnection]:
    """The store for one unit of work; closed on exit so other processes can open it.

    Read commands pass ``create=False``: a missing store is then an error, not a new empty file.
    While open, ``<store>.writer`` names this process, for the message another one gets.
    ``detachable``: the store is attached to an in-memory connection (and made its default
    database), so that long work can let go of the file (``released``) and keep its temp
    tables: an import stages a big file that way while readers come and go.
    """
    path = resolve_db_path(db)
    if detachable:
        with _detachable(path, create=create, wait=wait) as con:
            yield con
        return
    con = connect(path, read_only=read_only, lean=lean, create=create, wait=wait)
    _claim(path)
    # A read-write connection is registered for reads beside it (Store.read).
    writing = None if read_only else _writing.setdefault(path.resolve(), [])
    if writing is not None:
        writing.append(con)
    try:
        yield con
    finally:
        if writing is not None:
            writing.remove(con)
        con.close()
        _release(path)


# This process's read-write connections per store (resolved path), innermost last: DuckDB takes
# no read-only connection beside them in the same process, so a read goes through one.
_writing: dict[Path, list] = {}


def open_writer(path: Path) -> duckdb.DuckDBPyConnection | None:
    """The read-write connection this process holds open on the store, if any."""
    held = _writing.get(path.resolve())
    return held[-1] if held else None


@contextmanager
def read_through(con: duckdb.DuckDBPyConnection) -> Iterator[duckdb.DuckDBPyConnection]:
    """A cursor of ``con`` (the same database, a transaction of its own) in a read-only
    transaction: a read beside a write in one process sees what the write has committed, and
    cannot write."""
    cursor = con.cursor()
    try:
        with suppress(_duckdb_error()):  # a DuckDB without READ ONLY transactions: a plain cursor
            cursor.execute("BEGIN TRANSACTION READ ONLY")
        yield cursor
    finally:
        with suppress(_duckdb_error()):
            cursor.execute("ROLLBACK")
        cursor.close()


@contextmanager
def removed_on_input_error(db: str | Path | None = None) -> Iterator[None]:
    """Wrap a command that may create the store: if it fails on its input (an error of exit 2)
    and the store was not there before, the store it made is removed again, so a mistyped file
    leaves no empty store behind. A store that holds any row (another process may have written
    it meanwhile) is kept. Enter it before ``open_store``, so the store is closed when it acts."""
    path = resolve_db_path(db)
    beside = (_wal(path), spill_root(path), key_file(path))
    made = [p for p in (path, *beside) if not os.path.lexists(p)]
    try:
        yield
    except (InputError, NotFoundError):
        if path in made and _holds_nothing(path):
            for created in made:
                if created.is_dir():
                    shutil.rmtree(created, ignore_errors=True)
                else:
                    created.unlink(missing_ok=True)
        raise


def _wal(path: Path) -> Path:
    return path.with_name(path.name + ".wal")


def _holds_nothing(path: Path) -> bool:
    """Whether the store has no row in any table but the migrations' own."""
    try:
        con = connect(path, read_only=True, wait=0)
    except (StoreError, StoreBusyError, NotFoundError, InputError):
        return False
    try:
        tables = con.execute(
            "SELECT schema_name, table_name FROM duckdb_tables() "
            "WHERE database_name = current_database() AND table_name <> 'schema_migrations'"
        ).fetchall()
        return not any(
            con.execute(f'SELECT count(*) > 0 FROM "{schema}"."{table}"').fetchall()[0][0]
            for schema, table in tables  # names from the catalog, not from a user
        )
    finally:
        con.close()


# Connections made by ``_detachable``: id -> (the store's path, attached now).
_ATTACHED = "gm_store"
_detached: dict[int, list] = {}


def _engine_config(path: Path, settings: dict, spill: bool = True) -> dict[str, str]:
    """DuckDB's config for a connection to the store: the engine settings, and this process's
    private spill folder (``spill``: when the store is there or will be made)."""
    config = {k: v for k, (v, _) in settings.items()}
    folder = spill_folder(path) if spill else None
    if folder is not None:
        config["temp_directory"] = str(folder)
    return config


def key_file(path: Path) -> Path:
    """``<store>.key``: the store's pseudonym key, beside it and never in it (ingest.batch)."""
    return path.with_name(path.name + ".key")


@contextmanager
def _detachable(path: Path, *, create: bool, wait: float | None) -> Iterator:
    connect(path, create=create, wait=wait).close()  # create, migrate, sweep old spill
    duckdb = duckdb_engine()
    con = duckdb.connect(":memory:", config=_engine_config(path, engine_settings()))
    _detached[id(con)] = [path, False]
    _claim(path)
    try:
        _attach(con, path, busy_wait() if wait is None else wait)
        yield con
    finally:
        _detached.pop(id(con))
        con.close()
        _release(path)


def _attach(con, path: Path, wait: float) -> None:
    _waiting(duckdb_engine(), path, wait,
             lambda: con.execute(f"ATTACH ? AS {_ATTACHED}", [str(path)]))  # fmt: skip
    con.execute(f"USE {_ATTACHED}")
    _detached[id(con)][1] = True
    _write_holder(path)


def store_path(con) -> Path | None:
    """The file of the store ``con`` works on (None for a database in memory)."""
    state = _detached.get(id(con))
    if state:
        return state[0]
    rows = con.execute(
        "SELECT path FROM duckdb_databases() WHERE database_name = current_database()"
    ).fetchall()
    return Path(rows[0][0]) if rows and rows[0][0] else None


def can_release(con) -> bool:
    """Whether ``con`` came from ``open_store(detachable=True)`` and holds the store now."""
    state = _detached.get(id(con))
    return bool(state and state[1])


def is_released(con) -> bool:
    state = _detached.get(id(con))
    return bool(state and not state[1])


@contextmanager
def released(con) -> Iterator[None]:
    """Let go of the store file for the block (other processes may open it), keeping the
    connection's temp tables, macros and functions; take it again after, waiting as long as
    a writer does (WRITE_WAIT_S) for readers to finish. A no-op on a plain store connection."""
    if not can_release(con):
        yield
        return
    path = _detached[id(con)][0]
    con.execute("USE memory")
    con.execute(f"DETACH {_ATTACHED}")
    _detached[id(con)][1] = False
    _drop_holder(path)
    try:
        yield
    finally:
        _attach(con, path, WRITE_WAIT_S)


@contextmanager
def registered(con: duckdb.DuckDBPyConnection, **frames) -> Iterator[None]:
    """Polars frames visible to SQL under the given names for the block, then dropped."""
    for name, value in frames.items():
        con.register(name, value)
    try:
        yield
    finally:
        for name in frames:
            con.unregister(name)


# --- the store as an object ---------------------------------------------------------------------


class Store:
    """The store, its path resolved once (flag > ``GOLDMINE_DB`` > goldmine.toml > default) and
    made absolute, opened for one unit of work at a time.

    ``read()`` and ``write()`` hold a connection for the ``with`` block only, so other processes
    can use the file between units, and turn DuckDB's errors into the project's (``StoreError``;
    out of memory names the limit). Read-only unless made with ``write=True``; a missing store is
    a ``NotFoundError`` when reading, created by the first ``write()``.

    Example:
        >>> store = Store("goldmine.duckdb", write=True)                         # doctest: +SKIP
        >>> with store.write() as con:                                             # doctest: +SKIP
        ...     n = con.execute("SELECT count(*) FROM eval_runs").fetchall()[0][0]
    """

    def __init__(self, path: str | Path | None = None, *, write: bool = False) -> None:
        # Absolute now: a notebook that changes folder later still means this file, never a new
        # empty store in the folder it moved to.
        self.path = resolve_db_path(path).resolve()
        self.writable = write

    def __repr__(self) -> str:
        return f"{type(self).__name__}({str(self.path)!r}{', write=True' if self.writable else ''})"

    @property
    def settings(self):
        """The project's typed settings (goldmine.toml), for stages that take them from here."""
        from goldmine.config import settings

        return settings()

    @contextmanager
    def open(self, **options: Any) -> Iterator[duckdb.DuckDBPyConnection]:
        """One unit of work for a stage, with :func:`open_store`'s options (``read_only``,
        ``create``, ``wait``, ``lean``, ``detachable``), on the path resolved when the store was
        made; DuckDB's errors are left to the command (``read()`` and ``write()`` are the
        library's, which map them)."""
        if not (options.get("read_only") or self.writable):
            raise InputError(
                f"{self.path} was opened read-only: open it with Store(path, write=True) to write"
            )
        with open_store(self.path, **options) as con:
            yield con

    @contextmanager
    def read(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """A read-only connection for one unit of work. Inside a ``write()`` block on the same
        file (this Store or another) it reads through the open connection, and sees what that
        has committed."""
        writer = open_writer(self.path)
        if writer is not None:  # DuckDB refuses a read-only connection beside it
            with read_through(writer) as con, _mapped(self.path):
                yield con
            return
        with open_store(self.path, read_only=True, create=False) as con, _mapped(self.path):
            yield con

    @contextmanager
    def write(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """A read-write connection for one unit of work (the store is made if absent)."""
        with self.open() as con, _mapped(self.path):
            yield con


def as_store(where: Store | str | Path | None) -> Store:
    """``where`` as a ``Store``: the object itself, or one made (writable) from a path, for the
    core's helpers that a stage calls with its store and a script may call with a path."""
    return where if isinstance(where, Store) else Store(where, write=True)


@contextmanager
def _mapped(path: Path) -> Iterator[None]:
    """DuckDB's exceptions inside a unit of work as the project's: one line, the store named."""
    try:
        yield
    except Exception as exc:
        module = sys.modules.get("_duckdb") or sys.modules.get("duckdb")
        if module is None or not isinstance(exc, module.Error):
            raise
        oom = out_of_memory(exc)
        if oom is not None:
            raise oom from exc
        said = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise StoreError(f"{path}: {said}") from exc
