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


def write_lines(path: Path, line) -> Path:
    """One JSON line a query, ``line(qid, [(doc, score), ...])`` giving it."""
    path.write_text("".join(json.dumps(line(q, hits)) + "\n" for q, hits in RANKED.items()))
    return path


# Retrievers' answers as their clients return them, kept one line a query: the chunk id is in
# the hit's document, beside the engine's own id (Elasticsearch's _id, a Qdrant point's UUID).
ANSWERS = {
    "elasticsearch": lambda q, hits: {"query_id": q, "hits": [
        {"_index": "docs", "_id": f"Xk{n}a", "_score": s, "_source": {"chunk_id": d}}
        for n, (d, s) in enumerate(hits)]},
    "elasticsearch-response": lambda q, hits: {"query_id": q, "hits": {
        "total": {"value": len(hits), "relation": "eq"}, "max_score": hits[0][1],
        "hits": [{"_index": "docs", "_id": d, "_score": s} for d, s in hits]}},
    "qdrant": lambda q, hits: {"query_id": q, "results": [
        {"id": f"5c56c793-69f3-4fbf-87e6-c4bf54c28c{n:02d}", "version": 3, "score": s,
         "payload": {"chunk_id": d}} for n, (d, s) in enumerate(hits)]},
    "langchain": lambda q, hits: {"query_id": q, "results": [
        {"page_content": "…", "metadata": {"chunk_id": d}, "type": "Document"}
        for d, _ in hits]},
    # LlamaIndex's NodeWithScore.dict(): the node's id_ is the chunk id
    "llamaindex": lambda q, hits: {"query_id": q, "results": [
        {"node": {"id_": d, "text": "…", "metadata": {}, "class_name": "TextNode"}, "score": s,
         "class_name": "NodeWithScore"} for d, s in hits]},
    "vespa": lambda q, hits: {"query_id": q, "root": {"id": "toplevel", "relevance": 1.0,
        "fields": {"totalCount": len(hits)}, "children": [
            {"id": f"id:docs:chunk::{d}", "relevance": s, "source": "docs",
             "fields": {"text": "…"}} for d, s in hits]}},
    # Chroma's collection.query for one query text: a list of lists, nearest first
    "chroma": lambda q, hits: {"query_id": q, "ids": [[d for d, _ in hits]],
        "distances": [[10 - s for _, s in hits]], "documents": [["…" for _ in hits]]},
    "pinecone": lambda q, hits: {"query_id": q, "matches": [
        {"id": d, "score": s, "values": []} for d, s in hits], "namespace": ""},
}  # fmt: skip


@pytest.mark.parametrize("tool", list(ANSWERS))
def test_retriever_answers_kept_as_json_lines_score_as_the_trec_run(
    cli, tmp_path, reference, tool
) -> None:
    path = write_lines(tmp_path / f"{tool}.jsonl", ANSWERS[tool])
    assert scored(cli, tmp_path, path) == reference


def test_a_result_objects_own_doc_id_still_comes_before_its_chunk_id(cli, tmp_path) -> None:
    """A run line ranking documents names both; its doc_id is what it ranks, as before."""
    path = write_lines(tmp_path / "docs.jsonl", lambda q, hits: {"query_id": q, "results": [
        {"doc_id": d, "chunk_id": f"{d}#0", "score": s} for d, s in hits]})  # fmt: skip
    assert scored(cli, tmp_path, path)["mrr"] == pytest.approx((1 / 1 + 1 / 2 + 1 / 3) / 3)


@pytest.fixture(scope="module")
def ranx_files(tmp_path_factory) -> Path:
    """RANKED saved by ranx's own Run.save, in each layout it writes."""
    ranx = pytest.importorskip("ranx")
    folder = tmp_path_factory.mktemp("ranx")
    run = ranx.Run({q: dict(hits) for q, hits in RANKED.items()}, name="bm25")
    for name in ("run.json", "run.trec", "run.parquet", "run.lz4"):
        run.save(str(folder / name))
    return folder


@pytest.mark.slow  # importing ranx compiles its numba kernels: 10-30 s
@pytest.mark.parametrize("name", ["run.json", "run.trec", "run.parquet"])
def test_a_ranx_run_as_run_save_writes_it_scores_as_the_trec_run(
    cli, tmp_path, reference, ranx_files, name
) -> None:
    assert scored(cli, tmp_path, ranx_files / name) == reference


def test_ranx_parquet_layout_q_id_doc_id_score_is_read(cli, tmp_path, reference) -> None:
    """Run.save('run.parquet') writes Run.to_dataframe(): q_id, doc_id, score."""
    rows = [(q, d, s) for q, hits in RANKED.items() for d, s in hits]
    path = tmp_path / "run.parquet"
    pl.DataFrame(rows, schema=["q_id", "doc_id", "score"], orient="row").write_parquet(path)
    assert scored(cli, tmp_path, path) == reference


def test_an_lz4_run_is_one_line_saying_what_to_save_instead(cli, tmp_path) -> None:
    """ranx's Run.save('run.lz4') writes its dict as CBOR in an LZ4 frame: no layout goldmine
    reads, said in one line rather than 'not valid UTF-8'."""
    lz4_frame = pytest.importorskip("lz4.frame")
    path = tmp_path / "run.lz4"
    path.write_bytes(lz4_frame.compress(b"\xa1a1\xa1bd1\xf9\x3c\x00"))
    got = scored(cli, tmp_path, path)
    assert got["returncode"] == 2, got
    assert "LZ4" in got["stderr"] and ".json" in got["stderr"], got
    assert got["stderr"].count("\n") == 1 and "Traceback" not in got["stderr"]


@pytest.mark.slow  # importing ranx compiles its numba kernels: 10-30 s
def test_ranx_lz4_run_is_refused_in_one_line(cli, tmp_path, ranx_files) -> None:
    got = scored(cli, tmp_path, ranx_files / "run.lz4")
    assert got["returncode"] == 2 and "LZ4" in got["stderr"], got


def es_response(hits: list[tuple[str, float]]) -> dict:
    """An Elasticsearch/OpenSearch _search response as the REST API returns it."""
    return {"took": 3, "timed_out": False,
            "_shards": {"total": 1, "successful": 1, "skipped": 0, "failed": 0},
            "hits": {"total": {"value": len(hits), "relation": "eq"}, "max_score": hits[0][1],
                     "hits": [{"_index": "docs", "_id": d, "_score": s}
                              for d, s in hits]}}  # fmt: skip


@pytest.mark.parametrize(
    ("name", "body", "indent"),
    [("search.json", es_response(RANKED["1"]), 2),
     ("search-one-line.json", es_response(RANKED["1"]), None),
     ("msearch.json", {"took": 5, "responses": [es_response(h) for h in RANKED.values()]}, 2)],
)  # fmt: skip
def test_a_search_response_saved_as_the_run_is_one_line_naming_why(
    cli, tmp_path, name, body, indent
) -> None:
    """A _search or _msearch response names no query: its hits answer no gold query anyone can
    tell, so it is refused saying so, and what to give instead."""
    path = tmp_path / name
    path.write_text(json.dumps(body, indent=indent))
    got = scored(cli, tmp_path, path)
    assert got["returncode"] == 2, got
    assert "_search response" in got["stderr"] and "query_id" in got["stderr"], got
    assert got["stderr"].count("\n") == 1, got


def test_whole_float_ids_in_a_parquet_run_read_as_the_integers(cli, tmp_path) -> None:
    """pandas holds an integer column with a gap as float64: query 1 and document 7 are 1.0
    and 7.0 in the Parquet file, and still the numbers 1 and 7 (not the texts "1.0", "7.0")."""
    (tmp_path / "gold.qrels").write_text("1 0 7 1\n2 0 9 1\n")
    rows = {"qid": [1.0, 1.0, 2.0], "docno": [3.0, 7.0, 9.0], "score": [2.0, 1.0, 1.0]}
    path = tmp_path / "run.parquet"
    pl.DataFrame(rows).write_parquet(path)
    result = cli("eval", "run", "--gold", str(tmp_path / "gold.qrels"), "--run", str(path),
                 "-m", "mrr", "--json", "--no-store")  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["metrics"]["mrr"] == 0.75


def test_whole_float_ids_in_json_lines_read_as_the_integers(cli, tmp_path) -> None:
    """A frame's float columns written as JSON (pandas' to_json, polars' write_ndjson) give
    1.0 and 7.0: the numbers 1 and 7."""
    (tmp_path / "gold.qrels").write_text("1 0 7 1\n2 0 9 1\n")
    path = tmp_path / "run.jsonl"
    path.write_text('{"query_id": 1.0, "results": [{"id": 3.0, "score": 2}, {"id": 7.0, '
                    '"score": 1}]}\n{"query_id": 2.0, "results": [9.0]}\n')  # fmt: skip
    result = cli("eval", "run", "--gold", str(tmp_path / "gold.qrels"), "--run", str(path),
                 "-m", "mrr", "--json", "--no-store")  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["metrics"]["mrr"] == 0.75


def test_whole_float_ids_in_gold_lines_read_as_the_integers_as_the_runs_do(cli, tmp_path) -> None:
    """A gold file written from the same frame as the run (ids 1.0 and 7.0) kept them as the
    texts "1.0" and "7.0" while the run read 1 and 7: every query was a mismatch."""
    gold = tmp_path / "gold.jsonl"
    gold.write_text('{"query_id": 1.0, "relevant": [{"id": 7.0, "grade": 1}]}\n'
                    '{"query_id": 2.0, "relevant": [9.0]}\n')  # fmt: skip
    run = tmp_path / "run.jsonl"
    run.write_text(
        '{"query_id": 1.0, "results": [3.0, 7.0]}\n{"query_id": 2.0, "results": [9.0]}\n'
    )
    result = cli("eval", "run", "--gold", str(gold), "--run", str(run), "-m", "mrr", "--json",
                 "--no-store")  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["metrics"]["mrr"] == 0.75


def test_whole_float_ids_in_a_pandas_frame_given_to_evaluate_read_as_integers() -> None:
    pd = pytest.importorskip("pandas")
    import goldmine

    gold = {"1": {"7": 1}, "2": {"9": 1}}
    run = pd.DataFrame({"qid": [1, 1, 2, None], "docno": [3, 7, 9, 4], "score": [2, 1, 1, 0]})
    run = run.dropna()  # the gap made qid float64: 1.0, 1.0, 2.0
    result = goldmine.evaluate(gold, run, metrics=["mrr"])
    assert result.mean["mrr"] == 0.75
    frame_gold = pd.DataFrame({"qid": [1.0, 2.0], "docno": [7, 9], "label": [1, 1]})
    assert goldmine.evaluate(frame_gold, run, metrics=["mrr"]).mean["mrr"] == 0.75


@pytest.mark.parametrize(
    ("name", "body"),
    [("run.trec", "1 Q0 7.0 1 2.0 r\n1 Q0 3.0 2 1.0 r\n2 Q0 9.0 1 1.0 r\n"),
     ("run.csv", "qid,docno,rank,score\n1,7.0,0,2.0\n1,3.0,1,1.0\n2,9.0,0,1.0\n")],
)  # fmt: skip
def test_a_run_file_none_of_whose_ids_the_gold_judged_says_so(cli, tmp_path, name, body):
    """Every query matched, and not one ranked id is one the gold judged (pandas wrote the
    doc ids as floats): every figure 0 with no word was a silent loss; a warning shows two ids
    from either side, first, and under --json's warnings."""
    (tmp_path / "gold.qrels").write_text("1 0 7 1\n1 0 3 0\n2 0 9 1\n")
    (tmp_path / name).write_text(body)
    args = ["eval", "run", "--gold", str(tmp_path / "gold.qrels"), "--run", str(tmp_path / name),
            "-m", "mrr", "--no-store"]  # fmt: skip
    shown = cli(*args)
    assert shown.returncode == 0, shown.stderr
    assert "none of the 3 ids the run ranks is one the gold judged" in shown.stderr
    assert "7.0" in shown.stderr and "written as floats" in shown.stderr
    warnings = json.loads(cli(*args, "--json").stdout)["warnings"]
    assert any("none of the 3 ids" in w for w in warnings), warnings


def test_a_run_frame_written_as_json_lines_a_row_a_line_is_read_as_its_table(
    cli, tmp_path, reference
) -> None:
    """polars' write_ndjson (and pandas' to_json(orient="records", lines=True)) of a result
    frame: one line a ranked doc, ``{"qid": …, "docno": …, "rank": …, "score": …}``."""
    path = tmp_path / "run.jsonl"
    pyterrier_frame().write_ndjson(path)
    assert scored(cli, tmp_path, path) == reference
    ranx_rows = [(q, d, s) for q, hits in RANKED.items() for d, s in hits]
    frame = pl.DataFrame(ranx_rows, schema=["q_id", "doc_id", "score"], orient="row")
    frame.sample(fraction=1.0, shuffle=True, seed=3).write_ndjson(path)  # any row order
    assert scored(cli, tmp_path, path) == reference


@pytest.mark.parametrize(
    ("name", "body"),
    [("test.tsv", "query-id\tcorpus-id\tscore\n1\td1\t2\n1\td2\t1\n2\td3\t1\n"),
     ("qrels.jsonl", '{"query-id": "1", "corpus-id": "d1", "score": 2}\n'
                     '{"query-id": "2", "corpus-id": "d3", "score": 1}\n')],
)  # fmt: skip
def test_beir_qrels_given_as_the_run_are_sent_to_gold(cli, tmp_path, name, body) -> None:
    """BEIR's qrels (query-id, corpus-id and a whole-number score) are judgments: read as a
    run, their grades ranked the judged docs and scored them near 1."""
    path = tmp_path / name
    path.write_text(body)
    got = scored(cli, tmp_path, path)
    assert got["returncode"] == 2 and "pass it as --gold" in got["stderr"], got


@pytest.mark.parametrize(
    ("body", "said"),
    [('{"query_id": "1", "docs": ["d1", "d2"]}\n{"query_id": "2", "docs": ["d3"]}\n',
      "it has query_id, docs"),
     ('{"id": "1", "input": "a question", "output": [{"provenance": []}]}\n',
      "'id' maps to a string"),
     ('{"1": "d1", "2": "d3"}', "'1' maps to a string")],
)  # fmt: skip
def test_an_unreadable_json_run_names_what_it_holds_and_what_is_read(
    cli, tmp_path, body, said
) -> None:
    path = tmp_path / "run.json"
    path.write_text(body)
    got = scored(cli, tmp_path, path)
    assert got["returncode"] == 2 and said in got["stderr"], got
    assert "results" in got["stderr"] and got["stderr"].count("\n") == 1, got


@pytest.mark.parametrize("force", [False, True])
def test_a_nan_score_is_refused_by_both_engines(tmp_path, force) -> None:
    """A large run is read by polars (``force`` stands in for the size); it read 'nan' as a
    score and ranked it somewhere, where the Python reader names the line."""
    from goldmine.errors import InputError
    from goldmine.eval.scoring import evaluate_files
    from goldmine.metrics import parse_metrics

    (tmp_path / "gold.qrels").write_text(QRELS)
    run = tmp_path / "run.trec"
    run.write_text(trec_run() + "3 Q0 d9 4 nan bm25\n")
    with pytest.raises(InputError, match="NaN"):
        evaluate_files(tmp_path / "gold.qrels", run, parse_metrics(["mrr"]), force=force)


def test_pyserini_dpr_retrieval_json_scores_as_the_trec_run(cli, tmp_path, reference) -> None:
    """convert_trec_run_to_dpr_retrieval_run's output: {qid: {question, answers, contexts:
    [{docid, score (as text), has_answer}]}}, one JSON document."""
    retrieval = {
        q: {"question": f"query {q}", "answers": ["x"],
            "contexts": [{"docid": d, "score": f"{s:.6f}", "has_answer": False}
                         for d, s in hits]}
        for q, hits in RANKED.items()
    }  # fmt: skip
    path = tmp_path / "run.dpr.json"
    path.write_text(json.dumps(retrieval, indent=4))
    assert scored(cli, tmp_path, path) == reference


def test_compare_of_a_run_file_missing_queries_says_they_scored_0(cli, tmp_path) -> None:
    """eval run says a gold query missing from the run scored 0; eval compare, pairing that
    file's zeros, said nothing of them."""
    (tmp_path / "gold.qrels").write_text(QRELS)
    full, part = tmp_path / "full.trec", tmp_path / "part.trec"
    full.write_text(trec_run())
    part.write_text("".join(line for line in trec_run().splitlines(keepends=True)
                            if not line.startswith("2 ")))  # fmt: skip
    result = cli("eval", "compare", str(full), str(part), "--gold", str(tmp_path / "gold.qrels"),
                 "-m", "mrr", "--db", str(tmp_path / "s.duckdb"))  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert f"{part}: 1 gold query missing from the run scored 0 (paired as 0): 2" in result.stderr
    assert "full.trec:" not in result.stderr


def test_hits_whose_score_is_null_are_taken_in_their_order(cli, tmp_path, reference) -> None:
    """Elasticsearch answers "_score": null when the query sorts by a field: the hits come in
    the order asked for, as --http reads them, not 'score must be a number, got None'."""
    path = write_lines(tmp_path / "sorted.jsonl", lambda q, hits: {"query_id": q, "hits": [
        {"_id": d, "_score": None, "sort": [s]} for d, s in hits]})  # fmt: skip
    assert scored(cli, tmp_path, path) == reference


@pytest.mark.parametrize(
    "body",
    ['{"format_version": 1, "version": 3, "hash": "ab12"}\n'
     '{"query_id": "1", "query": "q one", "relevant": {"d1": 2}}\n',
     '{"query_id": "1", "query": "q one", "relevant": ["d1", "d2"]}\n'],
)  # fmt: skip
def test_a_gold_set_given_as_the_run_is_sent_to_gold(cli, tmp_path, body) -> None:
    """goldmine's gold JSONL (an exported version, or lines of relevant ids) given as --run,
    the two flags swapped: one line saying so, not 'a run line needs query_id'."""
    path = tmp_path / "v0003.jsonl"
    path.write_text(body)
    got = scored(cli, tmp_path, path)
    assert got["returncode"] == 2 and "pass it as --gold" in got["stderr"], got


@pytest.mark.parametrize(
    ("data", "says"),
    [
        (
            b"q1 Q0 caf\xe9 1 2.0 r\n",
            "byte 0xe9 at line 1 is no UTF-8 (Latin-1 or Windows-1252 text?): save it as UTF-8",
        ),
        (
            bytes(range(1, 32)) * 20 + b"\xff\xfe\x00\x81",
            "is not text (binary bytes in its first 4 KB)",
        ),
    ],
)
def test_a_run_that_is_no_utf8_says_what_it_looks_like(cli, tmp_path, data, says) -> None:
    """A run saved as Latin-1 and a binary file both said 'not valid UTF-8' alone."""
    path = tmp_path / "run.txt"
    path.write_bytes(data)
    got = scored(cli, tmp_path, path)
    assert got["returncode"] == 2 and says in got["stderr"], got
    assert got["stderr"].count("\n") == 1
