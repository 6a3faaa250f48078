"""Cranfield as a gold set: 225 real queries and 1,837 graded judgments imported, published,
exported to TREC qrels, and the built-in BM25 scored on it with ``goldmine eval run``.

Cranfield's judgments are Cleverdon's codes, 1 (a complete answer) to 4 (of minimum interest), and
-1 (no interest). goldmine's scale is 2 (fully answers), 1 (useful context), 0 (not relevant); the
mapping used here follows the collection's readme:

    code 1 -> 2, code 2 -> 2, code 3 -> 1, code 4 -> 1, code -1 -> 0

Codes 1 and 2 become "answers" (2 is "the lack of which would have made the research
impracticable"); 3 and 4 "useful context", so the set of relevant documents is exactly the one
every published figure uses, and MAP and recall do not depend on the mapping. FACTS.md's reference
takes the code itself as the gain (4 highest, as ir_datasets reads it); it is scored here too, via
``--grade-map 1=1,2=2,3=3,4=4,-1=0``, and gives FACTS.md's figures.
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

import pytest

from goldmine.store import open_store, transaction
from goldmine.text import sha256_text

from realdata import cranfield_chunks, cranfield_queries

GOLDMINE_MAP = "1=2,2=2,3=1,4=1,-1=0"
REFERENCE_MAP = "1=1,2=2,3=3,4=4,-1=0"
METRICS = "ndcg@10,map@100,frac_recall@100,recall@10,mrr"


def store_cranfield(db: Path, folder: Path) -> None:
    import polars as pl

    chunks = cranfield_chunks(folder)
    frame = pl.DataFrame(
        {
            "chunk_id": [c.id for c in chunks],
            "title": [c.title for c in chunks],
            "text": [c.text for c in chunks],
            "text_hash": [sha256_text(c.text) for c in chunks],
        }
    )
    with open_store(db) as con, transaction(con):
        con.register("cranfield", frame)
        con.execute(
            "INSERT INTO corpus_snapshots VALUES (1, 1, ?, ?, ?, 'cranfield')",
            [datetime(2026, 12, 1), sha256_text("cranfield"), len(chunks)],
        )
        con.execute(
            "INSERT INTO chunks SELECT 1, chunk_id, chunk_id, title, NULL, text, text_hash, NULL"
            " FROM cranfield"
        )


@pytest.fixture
def cranfield(shared_dataset, tmp_path: Path) -> dict[str, Path]:
    folder = shared_dataset("datasets", "cranfield")
    # cranqrel numbers queries by their position in cran.qry (1..225), not by the .I printed
    # there: the topics are written by position.
    topics = tmp_path / "topics.tsv"
    topics.write_text(
        "".join(f"{pos}\t{text}\n" for pos, text in cranfield_queries(folder).items()),
        encoding="utf-8",
    )
    return {"folder": folder, "qrels": folder / "cranqrel", "topics": topics}


def scores(cli, db: Path, gold_spec: str, *run: str) -> dict[str, float]:
    source = list(run) or ["--baseline", "bm25", "-k", "100"]
    result = cli("--db", str(db), "eval", "run", "--gold", gold_spec, *source, "-m", METRICS,
                 "--json")  # fmt: skip
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)["metrics"]


@pytest.mark.slow
def test_cranfield_as_a_gold_set(cli, cranfield, tmp_path: Path) -> None:
    db = tmp_path / "cranfield.duckdb"
    store_cranfield(db, cranfield["folder"])

    def gold(*args: str) -> str:
        result = cli("--db", str(db), "gold", *args)
        assert result.returncode == 0, result.stderr
        return result.stdout

    # The raw file is read as it is: three columns, CRLF endings, no newline at the end.
    out = gold("import", str(cranfield["qrels"]), "--topics", str(cranfield["topics"]),
               "--grade-map", GOLDMINE_MAP, "--by", "cleverdon")  # fmt: skip
    assert out.startswith("imported 225 verified queries (trec), 1837 labels, 0 no answer")
    shown = json.loads(gold("show", "3", "--json"))
    assert shown["query"].startswith("what problems of heat conduction in composite slabs")
    assert shown["verified_by"] == "cleverdon" and shown["origin"] == "import:cranqrel"

    published = gold("publish", "-m", "Cranfield 1400, Cleverdon codes 1,2->2 3,4->1 -1->0")
    assert published.startswith("published v1: 225 queries (225 answerable, 0 no answer)")
    assert "v1\tok\t225 items" in gold("verify")

    gold("export", "--version", "v1", "--format", "trec", "--out", str(tmp_path / "gold"))
    qrels = (tmp_path / "gold" / "v0001.qrels").read_text().splitlines()
    assert len(qrels) == 1837
    assert "1 0 184 2" in qrels  # code 2
    assert "1 0 12 1" in qrels  # code 3
    assert "1 0 486 0" in qrels  # code -1
    assert sum(1 for line in qrels if line.endswith(" 0")) == 225

    run = tmp_path / "bm25.trec"
    ours = scores(cli, db, "v1", "--baseline", "bm25", "-k", "100", "--save-run", str(run))
    # The exported files score the same: the qrels against the saved run, the version file
    # (header line, then items) with the baseline.
    assert scores(cli, db, str(tmp_path / "gold" / "v0001.qrels"), "--run", str(run)) == (
        pytest.approx(ours)
    )
    gold("export", "--version", "v1", "--out", str(tmp_path / "gold"))
    assert scores(cli, db, str(tmp_path / "gold" / "v0001.jsonl")) == pytest.approx(ours)
    # The relevant set is every published figure's: MAP and recall equal FACTS.md's.
    assert ours["map@100"] == pytest.approx(0.304, abs=0.005)
    assert ours["frac_recall@100"] == pytest.approx(0.738, abs=0.005)
    assert ours["ndcg@10"] == pytest.approx(0.374, abs=0.005)

    reference_db = tmp_path / "reference.duckdb"
    store_cranfield(reference_db, cranfield["folder"])
    imported = cli("--db", str(reference_db), "gold", "import", str(cranfield["qrels"]),
                   "--topics", str(cranfield["topics"]), "--grade-map", REFERENCE_MAP)  # fmt: skip
    assert imported.returncode == 0, imported.stderr
    assert cli("--db", str(reference_db), "gold", "publish", "-m", "codes as gains").returncode == 0
    reference = scores(cli, reference_db, "latest")
    assert reference["ndcg@10"] == pytest.approx(0.341, abs=0.005)
    assert reference["map@100"] == pytest.approx(ours["map@100"])
    assert reference["frac_recall@100"] == pytest.approx(ours["frac_recall@100"])
