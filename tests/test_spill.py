"""What a killed process leaves on disk beside the store: DuckDB's spill files (plain text of
whatever the query held, PII included) and embed.row_buffer's vector file.

A real child process opens the store under a tiny memory limit, fills a temp table with PII-like
rows until DuckDB spills them to ``<store>.tmp``, and is killed with SIGKILL; the next command
that opens the store, here ``goldmine status``, must remove what it left, and the spill folder is
private (0700). A live process's spill is never touched, and a reused pid is not trusted.
"""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from goldmine.store import open_store, process_start, spill_root

# Opens the store the way every command does, then holds a temp table far past the memory limit,
# so DuckDB writes it to spill files, and waits to be killed.
_SPILLER = """
import sys, time
from goldmine.store import connect
con = connect(sys.argv[1])
con.execute(
    "CREATE TEMP TABLE pii AS SELECT 'anna.' || i || '@example.com' AS email, "
    "'+1 415 555 ' || lpad((i % 10000)::VARCHAR, 4, '0') AS phone, md5(i::VARCHAR) AS h "
    "FROM range(600000) t(i)"
).fetchall()
print("spilled", flush=True)
time.sleep(600)
"""


def _files(folder: Path) -> list[Path]:
    return [p for p in folder.rglob("*") if p.is_file()] if folder.exists() else []


def _spill_and_kill(db: Path) -> list[Path]:
    """A child that spilled PII under a 24 MB limit, killed with SIGKILL; the files it left."""
    env = {**os.environ, "GOLDMINE_MEMORY_LIMIT": "24MB", "GOLDMINE_THREADS": "1"}
    child = subprocess.Popen(
        [sys.executable, "-c", _SPILLER, str(db)], env=env, stdout=subprocess.PIPE, text=True
    )
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "spilled"
        left = [p for p in _files(spill_root(db)) if p.stat().st_size]
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
    return left


def test_a_killed_process_spill_files_are_removed_by_the_next_command(cli, db_path: Path) -> None:
    left = _spill_and_kill(db_path)
    assert left, "the child spilled nothing: the test set-up is broken"
    assert any(b"@example.com" in p.read_bytes() for p in _files(spill_root(db_path)))

    out = cli("status", "--db", str(db_path))
    assert out.returncode == 0, out.stderr
    assert _files(spill_root(db_path)) == []
    # the root goes too once no process has a folder in it; while it is there, it is private
    root = spill_root(db_path)
    assert not root.exists() or stat.S_IMODE(root.stat().st_mode) == 0o700


def test_the_spill_folder_is_private_from_the_first_open(db_path: Path) -> None:
    old = os.umask(0o022)  # the usual umask, under which a folder is made 0755
    try:
        with open_store(db_path):
            root = spill_root(db_path)
            assert stat.S_IMODE(root.stat().st_mode) == 0o700
            assert all(stat.S_IMODE(p.stat().st_mode) == 0o700 for p in root.iterdir())
    finally:
        os.umask(old)


def _sleeper() -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])


def test_a_live_process_spill_is_kept_and_a_reused_pid_is_not_trusted(db_path: Path) -> None:
    """Another live process's folder stays; a folder naming that pid with another start time
    (the pid reused after its process died) and one of a dead pid go."""
    live = _sleeper()
    try:
        start = process_start(live.pid)
        assert start is not None
        root = spill_root(db_path)
        folders = {
            "live": root / f"{live.pid}-{start}",
            "reused": root / f"{live.pid}-{int(start) - 1}",
            "dead": root / f"{2**22 + 7}-123",
        }
        for folder in folders.values():
            folder.mkdir(parents=True)
            (folder / "duckdb_temp_storage-0.tmp").write_bytes(b"anna@example.com" * 100)
        with open_store(db_path):
            pass
        kept = {name for name, folder in folders.items() if folder.exists()}
        assert kept == {"live"}
        assert (folders["live"] / "duckdb_temp_storage-0.tmp").stat().st_size == 1600
    finally:
        live.kill()
        live.wait()


def test_this_process_folder_goes_when_the_store_is_closed(db_path: Path) -> None:
    with open_store(db_path):
        own = [p for p in spill_root(db_path).iterdir() if p.name.startswith(f"{os.getpid()}-")]
        assert len(own) == 1
    assert not own[0].exists()


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="needs Linux /proc")
def test_a_killed_process_leaves_no_vector_file(tmp_path: Path) -> None:
    """embed.row_buffer's file is unlinked from the start: a SIGKILL leaves nothing to read."""
    child = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time\n"
            "from pathlib import Path\n"
            "from goldmine import embed\n"
            "embed.SPILL_BYTES = 1\n"
            "x = embed.row_buffer(1000, 16, Path(sys.argv[1]))\n"
            "x[:] = 7.0\n"
            "print('filled', flush=True)\n"
            "time.sleep(600)\n",
            str(tmp_path),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "filled"
        assert list(tmp_path.iterdir()) == []  # no name while it runs
        maps = Path(f"/proc/{child.pid}/maps").read_text()
        assert f"{tmp_path}/" in maps  # the vectors are in a mapping of a file there
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
    assert list(tmp_path.iterdir()) == []


def _open_and_close(path: str, seconds: float, out) -> None:
    from goldmine.store import _drop_own_spill, spill_folder

    misses, end = 0, time.time() + seconds
    while time.time() < end:
        misses += spill_folder(Path(path)) is None
        _drop_own_spill(Path(path))
    out.put(misses)


def test_processes_opening_and_closing_at_once_each_get_their_private_folder(db_path) -> None:
    """Closing removes an empty spill root; another process making its folder in that moment
    got none, and DuckDB spilled into its shared default folder (the review measured 100 of
    2,400 opens)."""
    import multiprocessing as mp

    ctx = mp.get_context("fork")
    out = ctx.Queue()
    workers = [ctx.Process(target=_open_and_close, args=(str(db_path), 2.0, out)) for _ in range(3)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert [out.get(timeout=30) for _ in workers] == [0, 0, 0]
