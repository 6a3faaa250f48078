"""``eval run`` on runs as retrieval tools write them: PyTerrier's result frame saved as CSV or
Parquet, ranx's ``Run.save`` files, retrievers' answers kept one JSON line a query. Each must
score as the same run written as TREC does, never a silent zero or a wrong figure."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

QRELS = "1 0 d1 2\n1 0 d2 1\n2 0 d3 1\n2 0 d9 1\n3 0 d5 1\n"
# The reference run, as TREC: query 1 finds d2 then d1, query 2 finds d3 second, 3 finds d5 third.
RANKED = {"1": [("d2", 3.0), ("d1", 2.5), ("d7", 1.0)],
          "2": [("d8", 4.0), ("d3", 3.0)],
          "3": [("d6", 9.0), ("d4", 8.0), ("d5", 7.0)]}  # fmt: skip
METRICS = "mrr,ndcg,map,recall@1"


def trec_run() -> str:
    return "".join(
        f"{q} Q0 {d} {i} {s} bm25\n" for q, hits in RANKED.items()
        for i, (d, s) in enumerate(hits, start=1)
    )  # fmt: skip


def scored(cli, tmp_path: Path, run: Path) -> dict:
    """``eval run --json`` of ``run`` on QRELS: the metrics, or the failed result itself."""
    gold = tmp_path / "gold.qrels"
    gold.write_text(QRELS)
    result = cli("eval", "run", "--gold", str(gold), "--run", str(run), "-m", METRICS, "--json",
                 "--no-store", "--db", str(tmp_path / "s.duckdb"))  # fmt: skip
    if result.returncode:
        return {"returncode": result.returncode, "stderr": result.stderr}
    return json.loads(result.stdout)["metrics"]


@pytest.fixture
def reference(cli, tmp_path: Path) -> dict:
    path = tmp_path / "ref.trec"
    path.write_text(trec_run())
    got = scored(cli, tmp_path, path)
    assert got["mrr"] == pytest.approx((1 / 1 + 1 / 2 + 1 / 3) / 3), got
    return got


def pyterrier_frame() -> pl.DataFrame:
    """PyTerrier's result frame: qid, docid (Terrier's internal number), docno (the collection's
    id), rank from 0, score, query."""
    rows = [
        {"qid": q, "docid": 100 + n, "docno": d, "rank": i, "score": s, "query": f"query {q}"}
        for n, (q, i, d, s) in enumerate(
            (q, i, d, s) for q, hits in RANKED.items() for i, (d, s) in enumerate(hits)
        )
    ]
    return pl.DataFrame(rows)


def test_a_pyterrier_frame_as_csv_is_scored_by_its_docno(cli, tmp_path, reference) -> None:
    path = tmp_path / "bm25.csv"
    pyterrier_frame().with_row_index("").write_csv(path)  # pandas' to_csv keeps the index
    assert scored(cli, tmp_path, path) == reference


def test_a_pyterrier_frame_as_parquet_is_scored_by_its_docno(cli, tmp_path, reference) -> None:
    path = tmp_path / "bm25.parquet"
    pyterrier_frame().write_parquet(path)
    assert scored(cli, tmp_path, path) == reference


def test_a_pyterrier_frame_given_to_evaluate_is_scored_by_its_docno() -> None:
    import goldmine

    gold = pl.DataFrame(
        [line.split() for line in QRELS.splitlines()],
        schema=["qid", "iter", "docno", "label"],
        orient="row",
    ).with_columns(pl.col("label").cast(pl.Int64))
    result = goldmine.evaluate(gold, pyterrier_frame(), metrics=["mrr"])
    assert result.mean["mrr"] == pytest.approx((1 / 1 + 1 / 2 + 1 / 3) / 3)
