"""A corpus's id column as the tools that export collections name it: ir_datasets' JSONL
(``doc_id`` and ``text``, no other id), PyTerrier's and TREC's ``docno``, BEIR's ``corpus-id``
spelling, a ``uuid``; and an id written with spaces around it, which a log's click on the same
document never matched (log ids are trimmed)."""

from __future__ import annotations

from pathlib import Path

import pytest

from goldmine.store import open_store

from helpers import write_jsonl


def chunks(db: Path) -> list[tuple]:
    with open_store(db) as con:
        return con.execute("SELECT chunk_id, text FROM chunks ORDER BY chunk_id").fetchall()


@pytest.mark.parametrize("column", ["doc_id", "docno", "DOCNO", "corpus-id", "uuid", "Doc ID"])
def test_the_id_column_of_an_exported_collection_is_read(cli, tmp_path, column) -> None:
    path = write_jsonl(tmp_path / "docs.jsonl", [{column: "d1", "text": "alpha"},
                                                 {column: "d2", "text": "beta"}])  # fmt: skip
    db = tmp_path / "s.duckdb"
    result = cli("--db", str(db), "ingest", "corpus", str(path), "--json")
    assert result.returncode == 0, result.stderr
    assert chunks(db) == [("d1", "alpha"), ("d2", "beta")]


@pytest.mark.parametrize("column", ["paragraph", "sentence", "full_text"])
def test_the_text_column_of_other_collections_is_read(cli, tmp_path, column) -> None:
    path = write_jsonl(tmp_path / "docs.jsonl", [{"id": "d1", column: "alpha"}])
    db = tmp_path / "s.duckdb"
    result = cli("--db", str(db), "ingest", "corpus", str(path))
    assert result.returncode == 0, result.stderr
    assert chunks(db) == [("d1", "alpha")]


def test_an_id_with_spaces_around_it_is_stored_trimmed(cli, tmp_path) -> None:
    (tmp_path / "pad.csv").write_text('id,text\n d5 ,padded id\n"d6  ",two spaces\n')
    path = write_jsonl(tmp_path / "docs.jsonl", [{"id": " doc 2 ", "text": "inner space"}])
    got = []
    for file in (tmp_path / "pad.csv", path):
        db = tmp_path / f"{file.stem}.duckdb"
        result = cli("--db", str(db), "ingest", "corpus", str(file))
        assert result.returncode == 0, result.stderr
        got += [c for c, _ in chunks(db)]
    assert got == ["d5", "d6", "doc 2"]
