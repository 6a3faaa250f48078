"""``goldmine eval run`` as a user runs it: real files, a real store, a subprocess."""

from __future__ import annotations

import csv
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import duckdb
import pytest

from helpers import ROOT

SEED = ROOT / "data" / "seed"


def test_seed_example_prints_the_lesson_numbers(cli, db_path: Path) -> None:
    result = cli(
        "eval",
        "run",
        "--gold",
        str(SEED / "gold.json"),
        "--run",
        str(SEED / "runs.json"),
        "--metrics",
        "recall@1,recall@3,mrr",
        "--db",
        str(db_path),
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert "recall@1 0.33" in lines
    assert "recall@3 1.00" in lines
    assert "MRR 0.56" in lines


def test_json_output_has_the_contract_keys(cli, db_path: Path) -> None:
    result = cli(
        "eval",
        "run",
        "-g",
        str(SEED / "gold.json"),
        "-r",
        str(SEED / "runs.json"),
        "-m",
        "recall@1,recall@3,mrr",
        "--json",
        "--db",
        str(db_path),
    )
    data = json.loads(result.stdout)
    assert data["metrics"]["recall@1"] == pytest.approx(1 / 3)
    assert data["metrics"]["mrr"] == pytest.approx((1 + 1 / 3 + 1 / 3) / 3)
    assert data["n_queries"] == 3
    assert set(data["per_query"]) == set(json.loads((SEED / "gold.json").read_text()))
    for key in ("n_missing", "n_ignored", "n_no_answer", "abstention_rate", "run_id"):
        assert key in data


def write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


@pytest.fixture
def qrels(tmp_path: Path) -> Path:
    # q1: a (2), b (1); q2: c (1); q3: judged, nothing relevant -> a no-answer query
    return write(tmp_path / "qrels.txt", "q1 0 a 2\nq1 0 b 1\nq1 0 z 0\nq2 0 c 1\nq3 0 y 0\n")


def run_json(cli, *args: str) -> dict:
    result = cli("eval", "run", *args, "--json", "--no-store")
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_missing_and_ignored_queries_are_counted(cli, tmp_path: Path, qrels: Path) -> None:
    run = write(tmp_path / "run.trec", "q1 Q0 b 1 9.0 t\nq1 Q0 a 2 8.0 t\nq9 Q0 a 1 1.0 t\n")
    data = run_json(cli, "-g", str(qrels), "-r", str(run), "-m", "recall@1,mrr")
    assert data["n_queries"] == 2  # q1, q2 answerable; q3 is no-answer
    assert data["missing"] == ["q2"] and data["n_missing"] == 1
    assert data["per_query"]["q2"] == {"recall@1": 0.0, "mrr": 0.0}
    assert data["metrics"]["mrr"] == pytest.approx(0.5)  # (1 + 0) / 2: missing counts as 0
    assert data["ignored"] == ["q9"]
    assert data["n_no_answer"] == 1
    assert data["no_answer"][0]["abstained"] is True  # q3 absent from the run: returned nothing


def test_ties_are_broken_by_doc_id_descending(cli, tmp_path: Path) -> None:
    gold = write(tmp_path / "g.qrels", "q 0 d1 1\n")
    # Three docs tie on score; trec_eval orders them d3, d2, d1: the relevant d1 is third.
    run = write(tmp_path / "r.trec", "q Q0 d1 1 0.5 t\nq Q0 d2 2 0.5 t\nq Q0 d3 3 0.5 t\n")
    data = run_json(cli, "-g", str(gold), "-r", str(run), "-m", "mrr")
    assert data["metrics"]["mrr"] == pytest.approx(1 / 3)


def test_scores_stay_float64(cli, tmp_path: Path) -> None:
    gold = write(tmp_path / "g.qrels", "q 0 a 1\n")
    # float32 would tie these (pytrec_eval's rounding); float64 ranks b above a.
    run = write(tmp_path / "r.trec", "q Q0 a 1 0.5 t\nq Q0 b 2 0.50000001 t\n")
    data = run_json(cli, "-g", str(gold), "-r", str(run), "-m", "mrr")
    assert data["metrics"]["mrr"] == pytest.approx(0.5)


def test_repeated_doc_counts_once_with_a_warning(cli, tmp_path: Path) -> None:
    gold = write(tmp_path / "g.jsonl", '{"query_id": "q", "query": "x", "relevant": ["b"]}\n')
    run = write(tmp_path / "r.jsonl", '{"query_id": "q", "results": ["a", "a", "a", "b"]}\n')
    result = cli("eval", "run", "-g", str(gold), "-r", str(run), "-m", "mrr", "--no-store")
    assert "MRR 0.50" in result.stdout
    assert "2 repeated ids" in result.stdout


GOLD_FILES = {
    "trec": "q1 0 a 2\nq1 0 b 1\nq2 0 c 1\n",
    "beir": "query-id\tcorpus-id\tscore\nq1\ta\t2\nq1\tb\t1\nq2\tc\t1\n",
    "jsonl": '{"query_id": "q1", "query": "one", "relevant": {"a": 2, "b": 1}}\n'
    '{"query_id": "q2", "query": "two", "relevant": ["c"]}\n',
}
RUN_FILES = {
    "trec": "q1 Q0 x 1 3.0 t\nq1 Q0 b 2 2.0 t\nq1 Q0 a 3 1.0 t\nq2 Q0 c 1 5.0 t\n",
    "jsonl": '{"query_id": "q1", "results": ["x", "b", "a"]}\n'
    '{"query_id": "q2", "results": [{"id": "c", "score": 1.0}]}\n',
    "csv": "query_id,doc_id,rank\nq1,a,3\nq1,x,1\nq1,b,2\nq2,c,1\n",
    "tsv-score": "query_id\tdoc_id\tscore\nq1\tx\t0.9\nq1\tb\t0.8\nq1\ta\t0.7\nq2\tc\t0.1\n",
}


@pytest.mark.parametrize("gold_kind", sorted(GOLD_FILES))
@pytest.mark.parametrize("run_kind", sorted(RUN_FILES))
def test_every_format_gives_the_same_scores(cli, tmp_path, gold_kind, run_kind) -> None:
    gold = write(tmp_path / f"gold.{gold_kind}", GOLD_FILES[gold_kind])
    run = write(tmp_path / f"run.{run_kind}", RUN_FILES[run_kind])
    data = run_json(cli, "-g", str(gold), "-r", str(run), "-m", "mrr,ndcg@3,recall@1")
    assert data["metrics"]["mrr"] == pytest.approx((0.5 + 1) / 2)
    assert data["metrics"]["recall@1"] == pytest.approx(0.5)
    assert data["per_query"]["q2"]["ndcg@3"] == 1.0


def test_parquet_run(cli, tmp_path: Path, qrels: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    run = tmp_path / "run.parquet"
    pq.write_table(
        pa.table(
            {"query_id": ["q1", "q1", "q2"], "doc_id": ["b", "a", "c"], "score": [1.0, 2.0, 1.0]}
        ),
        run,
    )
    data = run_json(cli, "-g", str(qrels), "-r", str(run), "-m", "mrr")
    assert data["metrics"]["mrr"] == 1.0
    assert data["run"]["format"] == "parquet"


def test_run_keyed_by_query_text_matches_gold_text(cli, tmp_path: Path) -> None:
    gold = write(
        tmp_path / "g.jsonl", '{"query_id": "q1", "query": "Refund policy?", "relevant": ["a"]}\n'
    )
    run = write(tmp_path / "r.jsonl", '{"query": "refund  policy", "results": ["b", "a"]}\n')
    data = run_json(cli, "-g", str(gold), "-r", str(run), "-m", "mrr")
    assert data["metrics"]["mrr"] == 0.5 and data["n_missing"] == 0


def test_no_answer_queries_are_scored_apart(cli, tmp_path: Path) -> None:
    gold = write(
        tmp_path / "g.jsonl",
        '{"query_id": "q1", "query": "a", "relevant": ["a"]}\n'
        '{"query_id": "q2", "query": "b", "relevant": []}\n'
        '{"query_id": "q3", "query": "c", "relevant": {}}\n',
    )
    run = write(
        tmp_path / "r.jsonl",
        '{"query_id": "q1", "results": [{"id": "a", "score": 0.9}]}\n'
        '{"query_id": "q2", "results": []}\n'
        '{"query_id": "q3", "results": [{"id": "z", "score": 0.2}]}\n',
    )
    data = run_json(cli, "-g", str(gold), "-r", str(run), "-m", "mrr")
    assert data["n_queries"] == 1 and data["metrics"]["mrr"] == 1.0
    assert data["abstention_rate"] == 0.5
    data = run_json(cli, "-g", str(gold), "-r", str(run), "-m", "mrr", "--abstain-below", "0.5")
    assert data["abstention_rate"] == 1.0


@pytest.mark.parametrize(
    ("name", "content", "where"),
    [
        ("bad.trec", "q1 Q0 a 1 1.0 t\nq1 Q0 b 2 notanumber t\n", ":2:"),
        ("bad.jsonl", '{"query_id": "q1", "results": ["a"]}\n{"query_id": \n', ":2:"),
        ("short.trec", "q1 Q0 a 1 1.0 t\nq1 Q0 b\n", None),
    ],
)
def test_malformed_run_is_one_line_exit_2_nothing_written(
    cli, tmp_path: Path, qrels: Path, db_path: Path, name: str, content: str, where: str | None
) -> None:
    run = write(tmp_path / name, content)
    history = tmp_path / "history.csv"
    result = cli(
        "eval",
        "run",
        "-g",
        str(qrels),
        "-r",
        str(run),
        "--db",
        str(db_path),
        "--history",
        str(history),
    )
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert str(run) in result.stderr
    if where:
        assert where in result.stderr
    assert not history.exists()
    assert not db_path.exists()


def test_debug_shows_the_traceback(cli, tmp_path: Path, qrels: Path) -> None:
    run = write(tmp_path / "bad.trec", "q1 Q0 a 1 x t\n")
    result = cli("eval", "run", "-g", str(qrels), "-r", str(run), "--no-store", "--debug")
    assert result.returncode == 2 and "Traceback" in result.stderr


def test_unknown_metric_and_missing_file(cli, tmp_path: Path, qrels: Path) -> None:
    result = cli("eval", "run", "-g", str(qrels), "-r", str(qrels), "-m", "f1", "--no-store")
    assert result.returncode == 2 and "valid metrics" in result.stderr
    result = cli("eval", "run", "-g", str(tmp_path / "nope"), "-r", str(qrels), "--no-store")
    assert result.returncode == 2 and "no such file" in result.stderr


def test_run_is_stored_with_per_query_scores(
    cli, tmp_path: Path, qrels: Path, db_path: Path
) -> None:
    run = write(tmp_path / "run.trec", RUN_FILES["trec"])
    result = cli(
        "eval",
        "run",
        "-g",
        str(qrels),
        "-r",
        str(run),
        "-m",
        "mrr,recall@1",
        "--db",
        str(db_path),
        "--label",
        "bm25",
    )
    assert result.returncode == 0, result.stderr
    con = duckdb.connect(str(db_path), read_only=True)
    runs = con.execute("SELECT run_id, label, n_queries FROM eval_runs").fetchall()
    scores = con.execute("SELECT query_id, metric, value FROM eval_scores ORDER BY 1, 2").fetchall()
    con.close()
    assert runs == [(1, "bm25", 2)]
    assert scores == [
        ("q1", "mrr", 0.5),
        ("q1", "recall@1", 0.0),
        ("q2", "mrr", 1.0),
        ("q2", "recall@1", 1.0),
    ]
    listed = cli("eval", "runs", "--db", str(db_path), "--json")
    run = json.loads(listed.stdout)["runs"][0]
    assert run["label"] == "bm25"
    # The stored time is UTC, and the JSON says so: a script comparing it with its own aware
    # clock (datetime.now(UTC)) must not have to guess the zone.
    created = datetime.fromisoformat(run["created_at"])
    assert created.utcoffset() == timedelta(0)
    assert abs(datetime.now(UTC) - created) < timedelta(hours=1)


def test_history_gains_a_metric_column_without_corrupting_rows(
    cli, tmp_path: Path, qrels: Path
) -> None:
    run = write(tmp_path / "run.trec", RUN_FILES["trec"])
    history = tmp_path / "history.csv"
    base = [
        "eval",
        "run",
        "-g",
        str(qrels),
        "-r",
        str(run),
        "--no-store",
        "--history",
        str(history),
    ]
    assert cli(*base, "-m", "mrr", "--label", "first").returncode == 0
    assert cli(*base, "-m", "mrr,ndcg@3", "--label", "second").returncode == 0
    with history.open() as handle:
        rows = list(csv.DictReader(handle))
    assert [r["label"] for r in rows] == ["first", "second"]
    assert rows[0]["ndcg@3"] == "" and float(rows[0]["mrr"]) == 0.75
    assert float(rows[1]["ndcg@3"]) > 0
    assert rows[0]["gold_hash"] == rows[1]["gold_hash"] != ""
    assert rows[0]["run_hash"] != ""
