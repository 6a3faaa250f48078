"""Runs that key queries by their text (a retriever's log, ranx's dict of texts) matched to gold
queries: the exact text first, then the normalized one, and a text two gold queries share gives
its ranking to both. A later run entry of the same normalized text took the first's query, so one
query scored another's ranking and the other was "missing", with exit 0."""

from __future__ import annotations

import json
from pathlib import Path

GOLD = [
    {"query_id": "g1", "query": "Reset password", "relevant": ["d1"]},
    {"query_id": "g2", "query": "reset password!", "relevant": ["d2"]},
    {"query_id": "g3", "query": "refund", "relevant": ["d3"]},
]


def scored(cli, tmp_path: Path, gold: list[dict], run: list[dict]) -> dict:
    (tmp_path / "g.jsonl").write_text("".join(json.dumps(g) + "\n" for g in gold))
    (tmp_path / "r.jsonl").write_text("".join(json.dumps(r) + "\n" for r in run))
    result = cli("eval", "run", "--gold", str(tmp_path / "g.jsonl"), "--run",
                 str(tmp_path / "r.jsonl"), "-m", "mrr", "--per-query", "--json", "--no-store",
                 "--db", str(tmp_path / "e.duckdb"))  # fmt: skip
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def per_query(out: dict) -> dict[str, float]:
    return {q: m["mrr"] for q, m in out["per_query"].items()}


def test_two_texts_of_one_normalized_form_each_take_their_own_ranking(cli, tmp_path) -> None:
    run = [
        {"query": "Reset password", "results": ["d1", "x"]},
        {"query": "reset password!", "results": ["d2", "x"]},
        {"query": "refund", "results": ["d3"]},
    ]
    out = scored(cli, tmp_path, GOLD, run)
    assert per_query(out) == {"g1": 1.0, "g2": 1.0, "g3": 1.0}
    assert out["missing"] == []


def test_a_text_two_gold_queries_share_ranks_for_both(cli, tmp_path) -> None:
    gold = [
        {"query_id": "g1", "query": "Reset password", "relevant": ["d1"]},
        {"query_id": "g2", "query": "Reset password", "relevant": ["d2"]},
    ]
    run = [{"query": "reset password", "results": ["d2", "d1"]}]
    out = scored(cli, tmp_path, gold, run)
    assert per_query(out) == {"g1": 0.5, "g2": 1.0}
    assert out["missing"] == []


def test_a_normalized_match_takes_a_query_no_exact_text_took(cli, tmp_path) -> None:
    run = [
        {"query": "Reset password", "results": ["d1"]},
        {"query": "RESET PASSWORD", "results": ["x", "d2"]},
        {"query": "Refund.", "results": ["d3"]},
    ]
    out = scored(cli, tmp_path, GOLD, run)
    assert per_query(out) == {"g1": 1.0, "g2": 0.5, "g3": 1.0}


def test_a_csv_run_with_a_space_after_each_comma_reads_its_ids(cli, tmp_path) -> None:
    """``q1, d1, 3`` (a space after each comma, as many writers put it) read the ids as " d1":
    every query scored 0, exit 0."""
    gold = [{"query_id": "q1", "query": "a", "relevant": ["d1"]},
            {"query_id": "q2", "query": "b", "relevant": ["d5"]}]  # fmt: skip
    (tmp_path / "g.jsonl").write_text("".join(json.dumps(g) + "\n" for g in gold))
    (tmp_path / "r.csv").write_text("query_id, doc_id, score\nq1, d2, 2\nq1, d1, 3\nq2, d5, 5\n")
    result = cli("eval", "run", "--gold", str(tmp_path / "g.jsonl"), "--run",
                 str(tmp_path / "r.csv"), "-m", "mrr", "--json", "--no-store",
                 "--db", str(tmp_path / "e.duckdb"))  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["metrics"]["mrr"] == 1.0
