"""What eval prints when a person is not watching the terminal (issue 27, items 4-7 and 15).

Each test was written first and failed before its fix: a piped history table cut its headers to
`recall@`, every eval run listed each no-answer query, the reading said "a reranker is the fix"
beside "reranker opportunity: 0", `eval history FILE` was a usage error, and an empty run file
was "cannot tell the run format".
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from goldmine.eval.runner import HIGH_RECALL, LOW_MRR, Reranker, reading

from helpers import write_jsonl

METRICS = "recall@1,recall@5,recall@10,recall@20,recall@100,mrr,ndcg@10,ndcg@100,map@100"


def _history(cli, tmp_path: Path) -> Path:
    gold = write_jsonl(tmp_path / "gold.jsonl", [
        {"query_id": "q1", "query": "a", "relevant": ["d1"]},
        {"query_id": "q2", "query": "b", "relevant": ["d2"]},
    ])  # fmt: skip
    run = tmp_path / "run.trec"
    run.write_text("q1 Q0 d1 1 1.0 x\nq2 Q0 d9 1 1.0 x\nq2 Q0 d2 2 0.5 x\n")
    history = tmp_path / "history.csv"
    for _ in range(2):
        done = cli("eval", "run", "--gold", str(gold), "--run", str(run), "--no-store",
                   "--history", str(history), "--metrics", METRICS)  # fmt: skip
        assert done.returncode == 0, done.stderr
    return history


def test_a_piped_history_table_keeps_every_header_whole(cli, tmp_path) -> None:
    history = _history(cli, tmp_path)
    # Through a pipe (the subprocess's stdout), with the 80 columns of a terminal nobody sees.
    out = cli("eval", "history", str(history), env={"COLUMNS": "80"}).stdout
    header = out.splitlines()[0].split()
    assert header == ["#", "time", "run", "gold", "queries", *METRICS.split(",")]
    assert all(line.split()[-1] == "0.7500" for line in out.splitlines()[1:3])


def test_history_as_tsv_and_the_file_as_an_argument(cli, tmp_path) -> None:
    history = _history(cli, tmp_path)
    as_option = cli("eval", "history", "--file", str(history), "--format", "tsv").stdout
    as_argument = cli("eval", "history", str(history), "--format", "tsv").stdout
    assert as_option == as_argument
    lines = [line.split("\t") for line in as_argument.splitlines()]
    assert lines[0] == ["#", "time", "run", "gold", "queries", *METRICS.split(",")]
    assert len(lines) == 3 and all(len(line) == len(lines[0]) for line in lines)
    both = cli("eval", "history", str(history), "--file", str(tmp_path / "other.csv"))
    assert both.returncode == 2 and "give one" in both.stderr


def test_no_answer_queries_are_one_line_unless_asked(cli, tmp_path) -> None:
    rows = [{"query_id": "q1", "query": "a", "relevant": ["d1"]}]
    rows += [{"query_id": f"n{i}", "query": f"nothing {i}", "relevant": []} for i in range(43)]
    gold = write_jsonl(tmp_path / "gold.jsonl", rows)
    run = tmp_path / "run.trec"
    run.write_text("q1 Q0 d1 1 1.0 x\nn0 Q0 d5 1 1.0 x\n")
    args = ["eval", "run", "--gold", str(gold), "--run", str(run), "--no-store"]
    quiet = cli(*args).stdout
    assert "no-answer queries (left out of the averages): 43, abstained on 42 (98%)" in quiet
    assert "n17" not in quiet
    loud = cli(*args, "--verbose").stdout
    assert "  n0: returned 1  nothing 0" in loud and "  n17: abstained  nothing 17" in loud
    data = json.loads(cli(*args, "--json").stdout)
    assert data["n_no_answer"] == 43


def test_a_set_with_no_answerable_query_prints_no_average(cli, tmp_path) -> None:
    """Only grade-0 judgments printed "MRR 0.00" and the rest, read as a retriever finding
    nothing."""
    gold = write_jsonl(tmp_path / "gold.jsonl",
                       [{"query_id": "q1", "query": "a", "relevant": {"d1": 0}}])  # fmt: skip
    run = tmp_path / "run.trec"
    run.write_text("q1 Q0 d1 1 1.0 x\n")
    out = cli("eval", "run", "--gold", str(gold), "--run", str(run), "--no-store").stdout
    assert "no answerable query" in out and "MRR" not in out, out


@pytest.mark.parametrize(
    "recall,mrr,opportunity,says,never",
    [
        (0.70, 0.90, 0.0, "not a ranking problem", "reranker is the fix"),
        (0.95, 0.30, 0.0, "already reach the top 5", "would recover them"),
        (0.95, 0.30, 25.0, "25 per hundred have their answer in the candidates", "already reach"),
        (0.95, 0.80, 12.0, "a reranker (or a larger k", "already ranks"),
        (0.95, 0.80, 2.0, "already ranks answers into the prompt", "reranker"),
    ],
)
def test_the_reading_follows_from_the_figures_printed_above_it(
    recall, mrr, opportunity, says, never
) -> None:
    text = reading(recall, mrr, Reranker(k_prompt=5, k_candidates=50), opportunity)
    assert says in text and never not in text
    # The one contradiction seen: "a reranker is the fix" beside an opportunity of 0.
    if opportunity < 10:
        assert "recover" not in text
    assert recall < HIGH_RECALL or mrr < LOW_MRR or opportunity >= 10 or "already" in text


@pytest.mark.parametrize("content", ["", "\n\n  \n"])
def test_an_empty_run_file_says_so(cli, tmp_path, content) -> None:
    gold = write_jsonl(
        tmp_path / "gold.jsonl", [{"query_id": "q1", "query": "a", "relevant": ["d1"]}]
    )
    run = tmp_path / "run.trec"
    run.write_text(content)
    for extra in ([], ["--run-format", "trec"]):
        done = cli("eval", "run", "--gold", str(gold), "--run", str(run), "--no-store", *extra)
        assert done.returncode == 2
        assert (
            done.stderr.strip()
            == f"error: {run}: the run file is empty: it ranks nothing for any query"
        )
