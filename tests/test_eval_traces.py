"""Production as an eval run: ``eval run --run-from-traces`` scores what the application retrieved
(stored trace retrievals) against the gold, and triage reads an answer that did not know.

Every number is counted by hand from the fixture; the end-to-end test goes through the CLI from a
trace export to a published version and its production scores.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_ingest_traces import oi_docs, phoenix_span, query, traces_json, write_jsonl

from goldmine.ingest import api
from goldmine.store import open_store


def production_spans() -> list[dict]:
    """t1 (October) and t2 (November) ask the same refund question; the November retrieval is
    the latest. t3 asks to cancel an order; t4 asks about gift cards (no gold query)."""
    return [
        phoenix_span("t1", "s1", "RETRIEVER", start="2026-10-20T09:00:00+00:00",
                     **{"input.value": "how long do refunds take", "session.id": "a"},
                     **oi_docs({"id": "shipping-4", "score": 0.8},
                               {"id": "refund-1", "score": 0.7})),
        phoenix_span("t2", "s2", "RETRIEVER", start="2026-11-05T09:00:00+00:00",
                     **{"input.value": "How long do refunds take?", "session.id": "b"},
                     **oi_docs({"id": "refund-1", "score": 0.9}, {"id": "refund-2", "score": 0.6},
                               {"id": "shipping-4", "score": 0.2})),
        phoenix_span("t2", "s3", "LLM", start="2026-11-05T09:00:01+00:00",
                     **{"output.value": "Five days."}),
        phoenix_span("t3", "s4", "RETRIEVER", start="2026-11-06T09:00:00+00:00",
                     **{"input.value": "cancel my order", "session.id": "c"},
                     **oi_docs({"id": "orders-9", "score": 0.5}, {"id": "orders-2", "score": 0.4})),
        phoenix_span("t3", "s5", "LLM", start="2026-11-06T09:00:01+00:00",
                     **{"output.value": "I don't know how to cancel that order."}),
        phoenix_span("t4", "s6", "RETRIEVER", start="2026-11-07T09:00:00+00:00",
                     **{"input.value": "gift cards"}, **oi_docs({"id": "gift-1"})),
    ]  # fmt: skip


def gold_file(tmp_path: Path) -> Path:
    rows = [
        {"query_id": "q-refund", "query": "how long do refunds take",
         "relevant": {"refund-1": 2, "refund-2": 1}},
        {"query_id": "q-cancel", "query": "Cancel my order", "relevant": {"orders-2": 1}},
        {"query_id": "q-vpn", "query": "vpn setup", "relevant": {"vpn-1": 1}},
    ]  # fmt: skip
    return write_jsonl(tmp_path / "gold.jsonl", rows)


def eval_json(cli, *args: str, code: int = 0) -> dict:
    result = cli("eval", "run", *args, "--json")
    assert result.returncode == code, result.stderr
    return json.loads(result.stdout) if code == 0 else {"stderr": result.stderr}


def test_run_from_traces_scores_the_latest_production_retrieval(tmp_path, db_path, cli):
    traces_json(cli, str(write_jsonl(tmp_path / "spans.jsonl", production_spans())),
                "--db", str(db_path))  # fmt: skip
    gold = gold_file(tmp_path)
    out = eval_json(cli, "--gold", str(gold), "--run-from-traces", "--since", "2026-11-01",
                    "--metrics", "recall@1,frac_recall@2,mrr", "--db", str(db_path))  # fmt: skip
    # Scored: the two gold queries production asked since November (q-vpn was not asked).
    # q-refund, latest retrieval [refund-1, refund-2, shipping-4]: recall@1 1, frac_recall@2 2/2,
    # rr 1. q-cancel [orders-9, orders-2]: recall@1 0, frac_recall@2 1/1, rr 1/2.
    assert out["n_queries"] == 2
    assert out["metrics"]["recall@1"] == pytest.approx(0.5)
    assert out["metrics"]["frac_recall@2"] == pytest.approx(1.0)
    assert out["metrics"]["mrr"] == pytest.approx(0.75)
    assert out["run"]["format"] == "traces"
    assert any("2 of the gold's 3 queries" in w for w in out["warnings"])
    # All time: t1 is older than t2, so the refund query still scores its November retrieval.
    every = eval_json(cli, "--gold", str(gold), "--run-from-traces", "--metrics", "mrr",
                      "--db", str(db_path), "--no-store")  # fmt: skip
    assert every["metrics"]["mrr"] == pytest.approx(0.75)
    # Before November only t1 was asked: [shipping-4, refund-1], rr 1/2.
    october = eval_json(cli, "--gold", str(gold), "--run-from-traces", "--until", "2026-11-01",
                        "--metrics", "mrr", "--db", str(db_path), "--no-store")  # fmt: skip
    assert (october["n_queries"], october["metrics"]["mrr"]) == (1, pytest.approx(0.5))
    runs = json.loads(cli("eval", "runs", "--db", str(db_path), "--json").stdout)["runs"]
    assert len(runs) == 1 and runs[0]["run_source"].startswith("traces")


def test_run_from_traces_with_no_matching_retrieval_is_an_error(tmp_path, db_path, cli):
    traces_json(cli, str(write_jsonl(tmp_path / "spans.jsonl", production_spans())),
                "--db", str(db_path))  # fmt: skip
    out = eval_json(cli, "--gold", str(gold_file(tmp_path)), "--run-from-traces",
                    "--since", "2027-01-01", "--db", str(db_path), code=2)  # fmt: skip
    assert "no trace retrieval" in out["stderr"] and "--since" in out["stderr"]
    both = cli("eval", "run", "--gold", str(gold_file(tmp_path)), "--run-from-traces",
               "--baseline", "bm25", "--db", str(db_path))  # fmt: skip
    assert both.returncode == 2 and "exactly one run source" in both.stderr


def test_triage_reads_an_answer_that_did_not_know_as_a_chat_failure(tmp_path, db_path):
    from goldmine.triage.events import normalize_events

    with open_store(db_path) as con:
        api.traces(con, [write_jsonl(tmp_path / "spans.jsonl", production_spans())])
        normalize_events(con)
        rows = con.execute("SELECT query, is_chat_fail FROM triage_events ORDER BY ts").fetchall()
    assert rows == [
        ("how long do refunds take", False),
        ("How long do refunds take?", False),
        ("cancel my order", True),
        ("gift cards", False),
    ]


@pytest.mark.slow
def test_traces_to_triage_to_a_published_gold_to_production_scores(tmp_path, db_path, cli):
    """traces → triage → starter set → label (review's decisions) → publish → eval run
    --run-from-traces, through the CLI."""
    db = ["--db", str(db_path)]
    traces_json(cli, str(write_jsonl(tmp_path / "spans.jsonl", production_spans())), *db)
    chunks = [{"id": i, "text": t} for i, t in [
        ("refund-1", "Refunds take five days."), ("refund-2", "Refunds go back to the card."),
        ("shipping-4", "Shipping is free over 50 euros."), ("orders-2", "Cancel an order."),
        ("orders-9", "Order history."), ("gift-1", "Gift cards never expire.")]]  # fmt: skip
    corpus = write_jsonl(tmp_path / "chunks.jsonl", chunks)
    assert cli("ingest", "corpus", str(corpus), *db).returncode == 0
    triage = cli("triage", "run", *db)
    assert triage.returncode == 0, triage.stderr
    clusters = json.loads(cli("triage", "show", "--json", *db).stdout)
    # Four retrievals, three distinct queries; the answer that did not know fails its cluster.
    assert sum(c["volume"] for c in clusters) == 4
    failing = {c["label"]: c["signals"]["chat_fail"] for c in clusters if c["n_failed"]}
    assert failing == {"cancel my order": 1}
    starter = cli("gold", "starter", "--n", "10", "--by", "tester", *db)
    assert starter.returncode == 0, starter.stderr
    items = json.loads(cli("gold", "list", "--json", *db).stdout)
    by_text = {i["query"].lower().rstrip("?"): i["query_id"] for i in items}
    assert {"how long do refunds take", "cancel my order"} <= set(by_text)
    labels = {
        "how long do refunds take": ["refund-1=2", "refund-2=1"],
        "cancel my order": ["orders-2=1"],
    }
    for text, grades in labels.items():
        args = [x for g in grades for x in ("--chunk", g)]
        done = cli("gold", "label", by_text[text], *args, "--rest-not-relevant", "--by", "alice",
                   *db)  # fmt: skip
        assert done.returncode == 0, done.stderr
    for text in set(by_text) - set(labels):
        done = cli("gold", "label", by_text[text], "--no-answer", "--by", "alice", *db)
        assert done.returncode == 0, done.stderr
    published = cli("gold", "publish", "-m", "from production", "--by", "alice", *db)
    assert published.returncode == 0, published.stderr
    out = eval_json(cli, "--gold", "v1", "--run-from-traces", "--since", "2026-11-01",
                    "--metrics", "recall@1,mrr", *db)  # fmt: skip
    # Answerable and asked since November: refund (rr 1) and cancel (rr 1/2); gift cards has no
    # answer in the gold and was asked: its retrieval returned gift-1 (it did not abstain).
    assert out["metrics"]["recall@1"] == pytest.approx(0.5)
    assert out["metrics"]["mrr"] == pytest.approx(0.75)
    assert out["gold"]["version"] == 1 and out["n_queries"] == 2
    assert query(db_path, "SELECT count(*) FROM eval_runs") == [(1,)]
