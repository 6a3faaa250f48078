"""``ingest corpus`` given a BEIR data set's folder, as ``beir.util.download_and_unzip`` leaves it:
``corpus.jsonl`` beside ``queries.jsonl`` and ``qrels/test.tsv``. Every file in it was read as
chunks, and the import stopped on the qrels ("chunks need an id and a text field (found
query-id, corpus-id, score)"). The folder's corpus is its ``corpus.jsonl``; the queries and qrels
are ``gold import``'s.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from goldmine.ingest import api
from goldmine.store import open_store

DOCS = [{"_id": "d1", "title": "Aspirin", "text": "Aspirin reduces fever."},
        {"_id": "d2", "title": "Vitamin C", "text": "Vitamin C and colds."}]  # fmt: skip


def beir_folder(root: Path, gz: bool = False) -> Path:
    folder = root / "scifact"
    (folder / "qrels").mkdir(parents=True)
    lines = "".join(json.dumps(d) + "\n" for d in DOCS)
    if gz:
        (folder / "corpus.jsonl.gz").write_bytes(gzip.compress(lines.encode()))
    else:
        (folder / "corpus.jsonl").write_text(lines)
    (folder / "queries.jsonl").write_text('{"_id": "q1", "text": "does aspirin reduce fever"}\n')
    (folder / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\n")
    return folder


@pytest.mark.parametrize("gz", [False, True])
def test_a_beir_folder_gives_its_corpus(tmp_path: Path, db_path: Path, gz: bool) -> None:
    with open_store(db_path) as con:
        result = api.corpus(con, [beir_folder(tmp_path, gz)])
        chunks = con.execute("SELECT chunk_id, title FROM chunks ORDER BY 1").fetchall()
    assert result.total["rejected"] == 0
    assert [f.path.rsplit("/", 1)[-1] for f in result.files] == [
        "corpus.jsonl.gz" if gz else "corpus.jsonl"]  # fmt: skip
    assert chunks == [("d1", "Aspirin"), ("d2", "Vitamin C")]


def test_a_document_with_a_title_and_no_text_is_its_title(tmp_path: Path, db_path: Path) -> None:
    """TREC-COVID's corpus (BEIR's, and CORD-19's metadata.csv) holds papers with a title and no
    abstract: ``"text": ""``. They are judged in its qrels and retrieved by their titles, so
    each is stored with its title as its text; only a document with neither is "missing text"
    (as two of Cranfield's are)."""
    docs = [
        {"_id": "ug7v899j", "title": "Clinical features of Mycoplasma", "text": "OBJECTIVE: ..."},
        {"_id": "ejv2xln0", "title": "Surfactant protein-D and pulmonary host defense", "text": ""},
        {"_id": "2b73a28n", "title": "Role of endothelin-1 in lung disease", "text": None},
        {"_id": "empty001", "title": "  ", "text": " "},
    ]
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join(json.dumps(d) + "\n" for d in docs))
    with open_store(db_path) as con:
        result = api.corpus(con, [corpus])
        chunks = con.execute("SELECT chunk_id, title, text FROM chunks ORDER BY 1").fetchall()
        reasons = con.execute("SELECT reason FROM rejects").fetchall()
    assert result.total["rejected"] == 1 and reasons == [("missing text",)]
    assert chunks == [
        ("2b73a28n", "Role of endothelin-1 in lung disease",
         "Role of endothelin-1 in lung disease"),
        ("ejv2xln0", "Surfactant protein-D and pulmonary host defense",
         "Surfactant protein-D and pulmonary host defense"),
        ("ug7v899j", "Clinical features of Mycoplasma", "OBJECTIVE: ..."),
    ]  # fmt: skip
