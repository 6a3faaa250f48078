"""Gold sets as RAG and dense-retrieval tools write them, read by ``gold import``, ``eval run
--gold`` and (for the corpus they carry) ``ingest corpus``, with no converter to write:

- LlamaIndex's ``EmbeddingQAFinetuneDataset.save_json`` (what ``generate_question_context_pairs``
  gives, and its ``RetrieverEvaluator`` reads): one object ``{"queries": {id: text}, "corpus":
  {id: text}, "relevant_docs": {id: [ids]}, "mode": "text"}``;
- Tevatron's JSON lines (``query_id``, ``query``, ``positive_passages`` of ``{docid, title,
  text}``) and DPR's retriever files (a JSON array of ``{question, answers, positive_ctxs:
  [{passage_id, title, text}], negative_ctxs, hard_negative_ctxs}``);
- gold lines naming their ids in the words teams use (``chunk_ids``, ``relevant_doc_ids``,
  ``gold_ids``, ``question``).

Mined negatives (Tevatron's ``negative_passages``, DPR's hard negatives) are no judgments: a
retriever picked them, nobody read them, and a false negative among them would count as a
judged miss. They are left out, and the import says so.
"""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pytest
from test_goldset_wild import stored

Q1, Q2 = "6d0c5b52-1e4c-4f2b-9e0d-0f4c7ad1a001", "9f1e2a77-5c3b-4a1e-8d2f-1b2c3d4e5f60"
LLAMAINDEX = {
    "queries": {
        Q1: "What was Lyft's revenue growth in 2021?",
        Q2: "How many active riders did Lyft have at the end of 2021?",
    },
    "corpus": {
        "node-0001": "Revenue was $3.2 billion in 2021, up 36% from 2020.",
        "node-0002": "Active riders reached 18.7 million in the fourth quarter of 2021.",
        "node-0003": 'We face competition from Uber, "ride-hailing" apps and public transit.',
    },
    "relevant_docs": {Q1: ["node-0001"], Q2: ["node-0002", "node-0003"]},
    "mode": "text",
}


def _write(path: Path, obj: object, indent: int | None = 4) -> Path:
    path.write_text(json.dumps(obj, indent=indent, ensure_ascii=False), encoding="utf-8")
    return path


def _scored(cli, tmp_path: Path, gold: Path, run: Path):
    """``eval run --json`` of a run against a gold file, storing nothing."""
    return cli("eval", "run", "--gold", str(gold), "--run", str(run), "--json", "--no-store",
               "--db", str(tmp_path / "e.duckdb"))  # fmt: skip


def _import(cli, tmp_path: Path, path: Path, *args: str):
    return cli(
        "gold", "import", str(path), "--db", str(tmp_path / "s.duckdb"), "--by", "ana", *args
    )


def test_a_llamaindex_dataset_imports_its_queries_and_their_relevant_nodes(cli, tmp_path) -> None:
    path = _write(tmp_path / "val_dataset.json", LLAMAINDEX)
    result = _import(cli, tmp_path, path)
    assert result.returncode == 0, result.stderr
    items, labels = stored(tmp_path / "s.duckdb")
    assert items == [(Q1, LLAMAINDEX["queries"][Q1], False), (Q2, LLAMAINDEX["queries"][Q2], False)]
    assert labels == [(Q1, "node-0001", 1), (Q2, "node-0002", 1), (Q2, "node-0003", 1)]


def test_a_llamaindex_dataset_is_the_gold_of_an_eval_run(cli, tmp_path) -> None:
    gold = _write(tmp_path / "val_dataset.json", LLAMAINDEX, indent=None)
    run = tmp_path / "run.jsonl"
    run.write_text(
        json.dumps({"query_id": Q1, "results": ["node-0003", "node-0001"]}) + "\n"
        + json.dumps({"query_id": Q2, "results": ["node-0002"]}) + "\n"
    )  # fmt: skip
    result = _scored(cli, tmp_path, gold, run)
    assert result.returncode == 0, result.stderr
    got = json.loads(result.stdout)
    assert got["n_queries"] == 2
    assert got["metrics"]["mrr"] == pytest.approx((1 / 2 + 1) / 2)


def test_the_corpus_a_llamaindex_dataset_carries_is_ingested_as_chunks(cli, tmp_path) -> None:
    path = _write(tmp_path / "train_dataset.json", LLAMAINDEX)
    db = tmp_path / "s.duckdb"
    result = cli("ingest", "corpus", str(path), "--db", str(db))
    assert result.returncode == 0, result.stderr
    with duckdb.connect(str(db), read_only=True) as con:
        chunks = con.execute("SELECT chunk_id, text FROM chunks ORDER BY chunk_id").fetchall()
    assert chunks == sorted(LLAMAINDEX["corpus"].items())


def test_the_whole_loop_on_a_llamaindex_dataset_scores_bm25(cli, tmp_path) -> None:
    """ingest corpus, gold import, gold publish and eval run --baseline bm25 on one file."""
    path = _write(tmp_path / "val_dataset.json", LLAMAINDEX)
    db = ["--db", str(tmp_path / "s.duckdb")]
    for args in (["ingest", "corpus", str(path)], ["gold", "import", str(path), "--by", "ana"],
                 ["gold", "publish", "-m", "from LlamaIndex"]):  # fmt: skip
        result = cli(*args, *db)
        assert result.returncode == 0, (args, result.stderr)
    result = cli(
        "eval", "run", "--gold", "latest", "--baseline", "bm25", "--json", "--no-store", *db
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["n_queries"] == 2


TEVATRON = [
    {
        "query_id": "1185869",
        "query": ")what was the immediate impact of the success of the manhattan project?",
        "positive_passages": [{"docid": "0", "title": "", "text": "The presence of ..."}],
        "negative_passages": [
            {"docid": "2942565", "title": "", "text": "Manhattan Project ..."},
            {"docid": "6282245", "title": "", "text": "The pursuit of ..."},
        ],
    },
    {
        "query_id": "1185868",
        "query": "_________ justice is designed to repair the harm to victim",
        "positive_passages": [
            {"docid": "16", "title": "", "text": "The approach is based on ..."},
            {"docid": "17", "title": "", "text": "Restorative justice ..."},
        ],
        "negative_passages": [],
    },
]


def test_tevatron_lines_import_their_positives_and_say_negatives_are_left(cli, tmp_path) -> None:
    path = tmp_path / "dev.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in TEVATRON))
    result = _import(cli, tmp_path, path)
    assert result.returncode == 0, result.stderr
    items, labels = stored(tmp_path / "s.duckdb")
    assert [i[:2] for i in items] == [(line["query_id"], line["query"]) for line in TEVATRON[::-1]]
    assert labels == [("1185868", "16", 1), ("1185868", "17", 1), ("1185869", "0", 1)]
    assert "2 mined negatives" in result.stdout + result.stderr
    assert "negative_passages" in result.stdout + result.stderr


DPR = [
    {
        "dataset": "nq_dev_psgs_w100",
        "question": "who sings does he love me with reba",
        "answers": ["Linda Davis"],
        "positive_ctxs": [
            {"title": "Does He Love You", "text": "\"Does He Love You\" is a song ...",
             "score": 1000, "title_score": 1, "passage_id": "11828866"},
            {"title": "Red Sandy Spika", "text": "... Reba McEntire ...", "score": 13.39,
             "title_score": 0, "passage_id": "10891637"},
        ],
        "negative_ctxs": [{"title": "Cormac McCarthy", "text": "...", "score": 0,
                           "title_score": 0, "passage_id": "2893244"}],
        "hard_negative_ctxs": [{"title": "Why Not Me", "text": "...", "score": 14.2,
                                "title_score": 0, "passage_id": "14525568"}],
    },
    {
        "dataset": "nq_dev_psgs_w100",
        "question": "how many pages is invisible man by ralph ellison",
        "answers": ["581 (second edition)"],
        "positive_ctxs": [{"title": "Invisible Man", "text": "Invisible Man ...", "score": 1000,
                           "title_score": 1, "passage_id": "8762911"}],
        "negative_ctxs": [],
        "hard_negative_ctxs": [],
    },
]  # fmt: skip


def test_a_dpr_retriever_file_imports_its_questions_and_positive_contexts(cli, tmp_path) -> None:
    path = _write(tmp_path / "nq-dev.json", DPR)
    result = _import(cli, tmp_path, path)
    assert result.returncode == 0, result.stderr
    items, labels = stored(tmp_path / "s.duckdb")
    assert sorted(i[1] for i in items) == sorted(d["question"] for d in DPR)
    assert sorted((c, g) for _, c, g in labels) == [("10891637", 1), ("11828866", 1),
                                                    ("8762911", 1)]  # fmt: skip
    assert "2 mined negatives" in result.stdout + result.stderr


def test_a_dpr_retriever_file_is_the_gold_of_an_eval_run(cli, tmp_path) -> None:
    gold = _write(tmp_path / "nq-dev.json", DPR)
    run = tmp_path / "run.jsonl"
    run.write_text(
        "".join(json.dumps({"query": d["question"], "results": ["x", d["positive_ctxs"][0][
            "passage_id"]]}) + "\n" for d in DPR)
    )  # fmt: skip
    result = _scored(cli, tmp_path, gold, run)
    assert result.returncode == 0, result.stderr
    got = json.loads(result.stdout)
    assert got["n_queries"] == 2 and got["metrics"]["mrr"] == pytest.approx(0.5)


@pytest.mark.parametrize(
    "key", ["chunk_ids", "relevant_doc_ids", "relevant_chunk_ids", "gold_ids", "relevant_docs"]
)
def test_gold_lines_naming_their_ids_in_other_words_are_read(cli, tmp_path, key) -> None:
    lines = [
        {"id": "q1", "question": "how do I reset my password", key: ["kb-1", "kb-2"]},
        {"id": "q2", "question": "is there a fee abroad", key: []},
    ]
    path = tmp_path / "gold.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    result = _import(cli, tmp_path, path)
    assert result.returncode == 0, result.stderr
    items, labels = stored(tmp_path / "s.duckdb")
    assert items == [("q1", "how do I reset my password", False),
                     ("q2", "is there a fee abroad", True)]  # fmt: skip
    assert labels == [("q1", "kb-1", 1), ("q1", "kb-2", 1)]
    run = tmp_path / "run.jsonl"
    run.write_text(json.dumps({"query_id": "q1", "results": ["kb-2"]}) + "\n")
    result = _scored(cli, tmp_path, path, run)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["metrics"]["mrr"] == 1.0


def test_passages_given_as_texts_are_never_taken_for_ids(cli, tmp_path) -> None:
    """FlagEmbedding's training lines (``{"query", "pos": [texts], "neg": [texts]}``) hold no id
    a retriever returns: the import stops, saying what it needs, rather than store texts as
    chunk ids."""
    path = tmp_path / "train.jsonl"
    path.write_text(json.dumps({"query": "reset password", "pos": ["To reset it, open …"],
                                "neg": ["Fees are …"]}) + "\n")  # fmt: skip
    result = _import(cli, tmp_path, path)
    assert result.returncode == 2
    assert "relevant" in result.stderr


# --- runs as retrievers' own scripts write them ----------------------------------------------


def test_a_dpr_retriever_output_is_a_run(cli, tmp_path) -> None:
    """DPR's dense_retriever.py (and Pyserini's DPR output) writes one JSON array: each question
    with its ``ctxs``, ranked, their ids and scores (as strings)."""
    gold = _write(tmp_path / "nq-dev.json", DPR)
    out = [
        {"question": DPR[0]["question"], "answers": ["Linda Davis"], "ctxs": [
            {"id": "2893244", "title": "Cormac McCarthy", "text": "…", "score": "83.2",
             "has_answer": False},
            {"id": "11828866", "title": "Does He Love You", "text": "…", "score": "81.9",
             "has_answer": True}]},
        {"question": DPR[1]["question"], "answers": ["581"], "ctxs": [
            {"id": "8762911", "title": "Invisible Man", "text": "…", "score": "90.5",
             "has_answer": True}]},
    ]  # fmt: skip
    run = _write(tmp_path / "retrieved.json", out)
    result = _scored(cli, tmp_path, gold, run)
    assert result.returncode == 0, result.stderr
    got = json.loads(result.stdout)
    assert got["n_queries"] == 2 and got["metrics"]["mrr"] == pytest.approx((1 / 2 + 1) / 2)


def test_retrieved_and_expected_ids_are_a_run_and_its_gold(cli, tmp_path) -> None:
    """LlamaIndex's RetrieverEvaluator results saved as JSON lines: ``query``, ``expected_ids``
    (the gold) and ``retrieved_ids`` (the run), one file for both."""
    lines = [
        {"query": "What was Lyft's revenue growth in 2021?", "expected_ids": ["node-0001"],
         "retrieved_ids": ["node-0003", "node-0001"]},
        {"query": "How many riders?", "expected_ids": ["node-0002"],
         "retrieved_ids": ["node-0002"]},
    ]  # fmt: skip
    path = tmp_path / "results.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    result = _scored(cli, tmp_path, path, path)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["metrics"]["mrr"] == pytest.approx(0.75)


def test_a_run_lines_own_id_is_not_its_querys(cli, tmp_path) -> None:
    """A run line numbered by an "id" beside its query text matched no gold query (every run
    line's "id" read as a query id), where it was matched by its text."""
    gold = tmp_path / "gold.jsonl"
    gold.write_text(json.dumps({"query_id": "q1", "query": "reset password", "relevant": ["d1"]})
                    + "\n")  # fmt: skip
    run = tmp_path / "run.jsonl"
    run.write_text(
        json.dumps({"id": 0, "query": "reset password", "results": [{"doc_id": "d1",
                                                                      "chunk_id": "d1-c3"}]})
        + "\n"
    )  # fmt: skip
    result = _scored(cli, tmp_path, gold, run)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["metrics"]["mrr"] == 1.0
