"""A corpus in several files is one snapshot.

Large corpora ship in shards: MS MARCO v2.1's segmented documents in 59 files, a Hugging Face
data set's ``train-0000N-of-0000M.parquet``, a team's export in parts. ``ingest corpus`` made
each file a snapshot of its own, so the current snapshot (the last) held the last shard alone:
``ingest corpus shards/`` on three files left one file's chunks for the baselines, the labels
and the drift check, and said "removed" of the rest. Now the files one command reads make one
snapshot; a chunk id in two of them is rejected in the second, as a repeat within a file is; and
a shard read before is read again, never skipped by its file hash, or its chunks would be
missing from the new snapshot.
"""

from __future__ import annotations

from goldmine.ingest import api
from goldmine.ingest.corpus import current_snapshot_id
from goldmine.store import open_store

from helpers import run_cli, write_jsonl


def _shards(folder, texts: dict[str, list[tuple[str, str]]]) -> None:
    folder.mkdir(exist_ok=True)
    for name, rows in texts.items():
        write_jsonl(folder / name, [{"id": i, "text": t} for i, t in rows])


SHARDS = {
    "part-00.jsonl": [("a1", "alpha one"), ("a2", "alpha two")],
    "part-01.jsonl": [("b1", "beta one")],
    "part-02.jsonl": [("c1", "gamma one"), ("c2", "gamma two")],
}


def _snapshot(con) -> list[tuple]:
    return con.execute(
        "SELECT chunk_id FROM chunks WHERE snapshot_id = ? ORDER BY chunk_id",
        [current_snapshot_id(con)],
    ).fetchall()


def test_the_files_of_one_import_make_one_snapshot(tmp_path, db_path):
    _shards(tmp_path / "shards", SHARDS)
    with open_store(db_path) as con:
        result = api.corpus(con, [tmp_path / "shards"])
        assert [f.stored for f in result.files] == [2, 1, 2]
        assert {f.extra["snapshot_id"] for f in result.files} == {1}
        assert all(f.extra["new_snapshot"] for f in result.files)
        assert [r[0] for r in _snapshot(con)] == ["a1", "a2", "b1", "c1", "c2"]
        assert con.execute("SELECT snapshot_id, n_chunks FROM corpus_snapshots").fetchall() == [
            (1, 5)
        ]


def test_the_same_shards_again_make_no_new_snapshot(tmp_path, db_path):
    _shards(tmp_path / "shards", SHARDS)
    with open_store(db_path) as con:
        api.corpus(con, [tmp_path / "shards"])
        again = api.corpus(con, [tmp_path / "shards"])
        assert [(f.stored, f.already_present) for f in again.files] == [(0, 2), (0, 1), (0, 2)]
        assert {f.extra["new_snapshot"] for f in again.files} == {False}
        assert current_snapshot_id(con) == 1


def test_one_shard_changed_makes_a_whole_new_snapshot(tmp_path, db_path):
    """The unchanged shards are read again: the new snapshot holds every chunk, and the diff
    with the last names the one changed."""
    _shards(tmp_path / "shards", SHARDS)
    with open_store(db_path) as con:
        api.corpus(con, [tmp_path / "shards"])
    _shards(tmp_path / "shards", {"part-01.jsonl": [("b1", "beta one, revised")]})
    with open_store(db_path) as con:
        result = api.corpus(con, [tmp_path / "shards"])
        assert not any(f.skipped for f in result.files)
        last = result.files[-1].extra
        assert (last["snapshot_id"], last["new_snapshot"]) == (2, True)
        assert (last["unchanged"], last["changed"], last["added"], last["removed"]) == (4, 1, 0, 0)
        assert [r[0] for r in _snapshot(con)] == ["a1", "a2", "b1", "c1", "c2"]


def test_a_chunk_id_in_two_shards_is_rejected_in_the_second(tmp_path, db_path):
    _shards(tmp_path / "shards", {
        "part-00.jsonl": [("a1", "alpha one"), ("x", "first x")],
        "part-01.jsonl": [("x", "second x"), ("b1", "beta one")],
    })  # fmt: skip
    with open_store(db_path) as con:
        result = api.corpus(con, [tmp_path / "shards"])
        counts = [(f.rows_in, f.stored, f.rejected, f.already_present) for f in result.files]
        assert counts == [(2, 2, 0, 0), (2, 1, 1, 0)]
        rejects = con.execute("SELECT path, line, reason FROM rejects").fetchall()
        assert [(p.endswith("part-01.jsonl"), line) for p, line, _ in rejects] == [(True, 1)]
        assert "duplicate chunk id: x" in rejects[0][2]
        batches = con.execute(
            "SELECT rows_in, stored, rejected, already_present FROM import_batches ORDER BY 1"
        ).fetchall()
        assert sorted(batches) == sorted(counts)
        texts = con.execute("SELECT text FROM chunks WHERE chunk_id = 'x'").fetchall()
    assert texts == [("first x",)]


def test_the_command_reports_one_snapshot(tmp_path, db_path):
    _shards(tmp_path / "shards", SHARDS)
    out = run_cli("--db", str(db_path), "ingest", "corpus", str(tmp_path / "shards"))
    assert out.returncode == 0, out.stderr
    status = run_cli("--db", str(db_path), "status")
    assert "snapshot 1, 5 chunks" in status.stdout


def test_an_earlier_corpus_file_read_again_is_current_again(tmp_path, db_path):
    """A, then B, then A again (a rollback of a chunking): A's file was skipped as "already
    imported" by its hash, and B stayed the current snapshot the baselines and labels use."""
    a = write_jsonl(tmp_path / "a.jsonl", [{"id": "a1", "text": "chunked one way"}])
    b = write_jsonl(tmp_path / "b.jsonl", [{"id": "b1", "text": "chunked another way"}])
    with open_store(db_path) as con:
        for path in (a, b):
            api.corpus(con, [path])
        again = api.corpus(con, [a]).files[0]
        assert not again.skipped and again.extra["new_snapshot"]
        assert [r[0] for r in _snapshot(con)] == ["a1"]
        # and read once more, it is the current one already: nothing new
        assert api.corpus(con, [a]).files[0].extra["new_snapshot"] is False


def test_a_command_that_fails_on_a_later_file_keeps_no_batch_of_it(tmp_path, db_path):
    """The snapshot is made once every file is read: a file that cannot be read ends the command
    with nothing of it kept, not with batches that say their chunks were stored."""
    from goldmine.errors import InputError

    folder = tmp_path / "shards"
    _shards(folder, {"part-00.jsonl": [("a1", "alpha one")]})
    write_jsonl(folder / "part-01.jsonl", [{"foo": "x", "bar": "y"}])
    with open_store(db_path) as con:
        try:
            api.corpus(con, [folder])
        except InputError:
            pass
        else:
            raise AssertionError("the file without ids and texts was read")
        assert con.execute("SELECT count(*) FROM import_batches").fetchall() == [(0,)]
        assert current_snapshot_id(con) is None
        left = con.execute(
            "SELECT count(*) FROM duckdb_tables() WHERE temporary AND table_name LIKE 'corpus_%'"
        ).fetchall()
    assert left == [(0,)]
    # the file mended, the same command reads every file
    write_jsonl(folder / "part-01.jsonl", [{"id": "b1", "text": "beta one"}])
    with open_store(db_path) as con:
        assert api.corpus(con, [folder]).total["stored"] == 2
