"""A corpus's id column as the tools that export collections name it: ir_datasets' JSONL
(``doc_id`` and ``text``, no other id), PyTerrier's and TREC's ``docno``, BEIR's ``corpus-id``
spelling, a ``uuid``; and an id written with spaces around it, which a log's click on the same
document never matched (log ids are trimmed)."""

from __future__ import annotations

import json
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


def test_a_corpus_whose_titles_urls_or_metadata_changed_is_a_new_snapshot(cli, tmp_path) -> None:
    """Only the ids and texts told a snapshot from the last: new titles (which BM25 indexes and
    review shows), urls and metadata were 'already present', the old ones kept."""
    db = tmp_path / "s.duckdb"
    old = {"id": "a", "title": "A", "text": "alpha", "url": "http://x/a", "lang": "en"}
    new = {**old, "title": "A2", "url": "http://x/a2", "lang": "de", "doc_id": "D1"}
    reports = []
    for name, row in (("m1", old), ("m1b", old), ("m2", new), ("m2b", new)):
        path = write_jsonl(tmp_path / f"{name}.jsonl", [row])
        result = cli("--db", str(db), "ingest", "corpus", str(path), "--json")
        assert result.returncode == 0, result.stderr
        reports.append(json.loads(result.stdout))
    news = [r["files"][0]["new_snapshot"] for r in reports]
    assert news == [True, False, True, False], reports
    with open_store(db) as con:
        current = con.execute(
            "SELECT title, url, doc_id, metadata FROM chunks WHERE snapshot_id = "
            "(SELECT max(snapshot_id) FROM corpus_snapshots)"
        ).fetchall()
    assert current[0][:3] == ("A2", "http://x/a2", "D1") and "de" in str(current[0][3])


def test_a_snapshot_hashed_on_ids_and_texts_alone_is_still_the_same_corpus(cli, tmp_path) -> None:
    """A store whose snapshot was hashed before titles counted: the same corpus again makes no
    new snapshot (its fields are compared once), and a changed title does."""
    db = tmp_path / "s.duckdb"
    path = write_jsonl(tmp_path / "c.jsonl", [{"id": "a", "title": "A", "text": "alpha"}])
    assert cli("--db", str(db), "ingest", "corpus", str(path)).returncode == 0
    with open_store(db) as con:
        con.execute(
            "UPDATE corpus_snapshots SET content_hash = (SELECT sha256(string_agg(chunk_id || "
            "chr(9) || text_hash, chr(10) ORDER BY chunk_id)) FROM chunks WHERE snapshot_id = 1)"
        )
    again = write_jsonl(tmp_path / "again.jsonl", [{"id": "a", "title": "A", "text": "alpha"}, ""])
    result = json.loads(cli("--db", str(db), "ingest", "corpus", str(again), "--json").stdout)
    assert result["files"][0]["new_snapshot"] is False
    retitled = write_jsonl(tmp_path / "t.jsonl", [{"id": "a", "title": "B", "text": "alpha"}])
    result = json.loads(cli("--db", str(db), "ingest", "corpus", str(retitled), "--json").stdout)
    assert result["files"][0]["new_snapshot"] is True


def test_chunks_that_name_only_their_document_are_no_corpus_of_documents(cli, tmp_path) -> None:
    """``parent_id`` (or ``source_id``) is the document a chunk comes from: with no chunk id the
    file is refused, as before; a repeated ``doc_id`` taken as the chunk id says so."""
    rows = [{"parent_id": "doc1", "text": "chunk one"}, {"parent_id": "doc1", "text": "two"}]
    path = write_jsonl(tmp_path / "chunks.jsonl", rows)
    result = cli("--db", str(tmp_path / "a.duckdb"), "ingest", "corpus", str(path))
    assert result.returncode == 2 and "--map chunk_id=" in result.stderr, result.stderr
    rows = [{"doc_id": "doc1", "text": "chunk one"}, {"doc_id": "doc1", "text": "two"}]
    path = write_jsonl(tmp_path / "docs.jsonl", rows)
    db = tmp_path / "b.duckdb"
    assert cli("--db", str(db), "ingest", "corpus", str(path)).returncode == 0
    with open_store(db) as con:
        (reason,) = con.execute("SELECT reason FROM rejects").fetchall()[0]
    assert "doc_id" in reason and "--map chunk_id=" in reason, reason
