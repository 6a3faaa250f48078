"""Runs from a callable, an HTTP endpoint and a baseline; the two k's; --save-run; the CI gate."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

GOLD = [
    {"query_id": "q1", "query": "refund damaged item", "relevant": {"policy-14": 2}},
    {"query_id": "q2", "query": "expense report deadline", "relevant": ["finance-3"]},
    {"query_id": "q3", "query": "parental leave", "relevant": ["hr-7"]},
    {"query_id": "q4", "query": "do you sell cars", "relevant": []},
]
ANSWERS = {
    "refund damaged item": ["policy-14", "policy-2"],
    "expense report deadline": ["finance-1", "finance-3"],
    "parental leave": ["hr-1", "hr-2", "hr-3", "hr-7"],
    "do you sell cars": [],
}


@pytest.fixture
def gold(tmp_path: Path) -> Path:
    path = tmp_path / "gold.jsonl"
    path.write_text("".join(json.dumps(item) + "\n" for item in GOLD))
    return path


@pytest.fixture
def simple_retriever(tmp_path: Path) -> str:
    """A module ``r`` in the project directory whose ``f(query, k)`` answers from ANSWERS."""
    (tmp_path / "r.py").write_text(f"A = {ANSWERS!r}\ndef f(query, k):\n    return A[query][:k]\n")
    return "r:f"


def run_json(cli, *args: str, cwd: Path | None = None) -> dict:
    result = cli("eval", "run", *args, "--json", "--no-store", cwd=cwd)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_callable_retriever_from_the_project_directory(cli, tmp_path: Path, gold: Path) -> None:
    (tmp_path / "my_retriever.py").write_text(
        f"ANSWERS = {ANSWERS!r}\n"
        "def search(query, k):\n"
        "    if query == 'parental leave':\n"
        "        raise RuntimeError('index down')\n"
        "    return [(doc, 1.0 / (i + 1)) for i, doc in enumerate(ANSWERS[query][:k])]\n"
    )
    data = run_json(
        cli,
        "-g",
        str(gold),
        "--retriever",
        "my_retriever:search",
        "-m",
        "mrr,recall@1",
        cwd=tmp_path,
    )
    assert data["per_query"]["q1"]["mrr"] == 1.0
    assert data["per_query"]["q2"]["mrr"] == 0.5
    assert data["errors"] == {"q3": "RuntimeError: index down"}
    assert data["per_query"]["q3"]["mrr"] == 0.0  # reported as an error, scored 0
    assert data["no_answer"][0]["abstained"] is True


def test_batched_callable(cli, tmp_path: Path, gold: Path) -> None:
    (tmp_path / "batched.py").write_text(
        f"ANSWERS = {ANSWERS!r}\n"
        "def search(queries, k):\n"
        "    return [ANSWERS[q][:k] for q in queries]\n"
    )
    data = run_json(
        cli, "-g", str(gold), "--retriever", "batched:search", "-m", "mrr", cwd=tmp_path
    )
    assert data["metrics"]["mrr"] == pytest.approx((1 + 0.5 + 0.25) / 3)


class _Handler(BaseHTTPRequestHandler):
    calls: dict[str, int] = {}

    def log_message(self, *args) -> None:  # keep test output clean
        pass

    def do_POST(self) -> None:  # noqa: N802 - the stdlib's name
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        query = body["q"]
        _Handler.calls[query] = _Handler.calls.get(query, 0) + 1
        if query == "expense report deadline" and _Handler.calls[query] == 1:
            self.send_error(503)  # a transient failure: the retry succeeds
            return
        if query == "parental leave":
            self.send_error(500)  # always failing: an error row
            return
        if query == "do you sell cars":
            time.sleep(2)  # slower than the timeout
        hits = [{"_id": d, "_score": 10 - i} for i, d in enumerate(ANSWERS[query][: body["size"]])]
        payload = json.dumps({"hits": {"hits": hits}}).encode()
        try:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up on the slow answer (its timeout), as the test means it to


@pytest.fixture
def server():
    _Handler.calls = {}
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/search"
    httpd.shutdown()
    httpd.server_close()


def test_http_retriever_with_retries_timeouts_and_errors(cli, gold: Path, server: str) -> None:
    data = run_json(
        cli,
        "-g",
        str(gold),
        "--http",
        server,
        "--http-body",
        '{"q": "{query}", "size": "{k}"}',
        "--json-path",
        "hits.hits",
        "--timeout",
        "0.5",
        "--retries",
        "1",
        "-m",
        "mrr",
    )
    assert data["per_query"]["q1"]["mrr"] == 1.0
    assert data["per_query"]["q2"]["mrr"] == 0.5  # 503 once, then answered
    assert data["errors"]["q3"].startswith("HTTP 500")
    assert "timed out" in data["errors"]["q4"]
    assert data["n_errors"] == 2


def _shaped(shape: str, ids: list[str]) -> object:
    """An answer in the shape a vector database or RAG service gives it."""
    scored = [(d, round(1 - i / 10, 2)) for i, d in enumerate(ids)]
    if shape == "pinecone":
        return {"matches": [{"id": d, "score": s} for d, s in scored], "namespace": ""}
    if shape == "qdrant":
        return {
            "result": [
                {"id": i, "score": s, "payload": {"chunk_id": d}} for i, (d, s) in enumerate(scored)
            ],
            "status": "ok",
        }
    if shape == "langchain":
        return [{"page_content": "...", "metadata": {"chunk_id": d}} for d in ids]
    if shape == "chroma":
        return {"ids": [ids], "distances": [[1 - s for _, s in scored]], "metadatas": [[{}] * 9]}
    if shape == "vespa":
        return {
            "root": {
                "id": "toplevel",
                "children": [
                    {"id": f"id:docs:chunk::{d}", "relevance": s, "fields": {"title": "t"}}
                    for d, s in scored
                ],
            }
        }
    raise AssertionError(shape)  # fmt: skip


@pytest.mark.parametrize("shape", ["pinecone", "qdrant", "langchain", "chroma", "vespa"])
def test_http_answers_in_the_vector_databases_own_shapes(cli, gold: Path, shape: str) -> None:
    # Each answer as the service gives it, with no --json-path: the ids are found where the
    # service puts them (a payload's or metadata's chunk_id, Vespa's document id).

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args) -> None:
            pass

        def do_POST(self) -> None:  # noqa: N802 - the stdlib's name
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            payload = json.dumps(_shaped(shape, ANSWERS[body["query"]])).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{httpd.server_address[1]}/search"
        data = run_json(cli, "-g", str(gold), "--http", url, "-m", "mrr")
    finally:
        httpd.shutdown()
        httpd.server_close()
    assert data["n_errors"] == 0, data["errors"]
    mrr = {q: data["per_query"][q]["mrr"] for q in ("q1", "q2", "q3")}
    assert mrr == {"q1": 1.0, "q2": 0.5, "q3": 0.25}


def test_save_run_then_score_the_file_gives_the_same(
    cli, tmp_path: Path, gold: Path, simple_retriever: str
) -> None:
    saved = tmp_path / "saved.trec"
    first = run_json(
        cli,
        "-g",
        str(gold),
        "--retriever",
        "r:f",
        "--save-run",
        str(saved),
        "-m",
        "mrr,ndcg@3",
        cwd=tmp_path,
    )
    second = run_json(cli, "-g", str(gold), "-r", str(saved), "-m", "mrr,ndcg@3")
    assert first["metrics"] == second["metrics"]
    assert saved.read_text().splitlines()[0] == "q1 Q0 policy-14 1 2.0 goldmine"


def test_two_ks_and_the_reranker_reading(
    cli, tmp_path: Path, gold: Path, simple_retriever: str
) -> None:
    data = run_json(
        cli,
        "-g",
        str(gold),
        "--retriever",
        "r:f",
        "--k-prompt",
        "1",
        "--k-candidates",
        "4",
        "-m",
        "mrr",
        cwd=tmp_path,
    )
    reranker = data["reranker"]
    assert reranker["recall_at_prompt"] == pytest.approx(1 / 3)
    assert reranker["recall_at_candidates"] == 1.0
    assert reranker["opportunity_per_100"] == pytest.approx(200 / 3)
    assert "recall@4" not in data["metrics"]  # computed for the report, not added to the table
    result = cli(
        "eval",
        "run",
        "-g",
        str(gold),
        "--retriever",
        "r:f",
        "--k-prompt",
        "1",
        "--k-candidates",
        "4",
        "--no-store",
        cwd=tmp_path,
    )
    assert "reranker opportunity: 67 queries per hundred" in result.stdout


def test_exactly_one_source(cli, gold: Path) -> None:
    result = cli("eval", "run", "-g", str(gold), "--no-store")
    assert result.returncode == 2 and "exactly one run source" in result.stderr


def test_fail_under_gate(cli, tmp_path: Path, gold: Path, simple_retriever: str) -> None:
    base = ["eval", "run", "-g", str(gold), "--retriever", "r:f", "--no-store"]
    ok = cli(*base, "--fail-under", "recall@5=0.9", cwd=tmp_path)
    assert ok.returncode == 0, ok.stderr
    failed = cli(*base, "--fail-under", "recall@1=0.5", "--fail-under", "mrr=0.1", cwd=tmp_path)
    assert failed.returncode == 1
    floor = "gate failed: recall@1 0.3333 is under the --fail-under floor 0.5"
    assert failed.stderr.strip() == floor
    bad = cli(*base, "--fail-under", "recall@1", cwd=tmp_path)
    assert bad.returncode == 2 and "METRIC=VALUE" in bad.stderr


BASELINE_CHUNKS = [
    ("policy-14", "Returns of damaged items: refund within 30 days of delivery."),
    ("policy-2", "Shipping policy: orders ship within two days."),
    ("finance-3", "Expense reports are due on the fifth working day of the month."),
    ("finance-1", "The finance team approves purchase orders."),
    ("hr-7", "Parental leave: sixteen weeks paid for every new parent."),
    ("hr-1", "Holidays and annual leave requests."),
]


def _store_baseline_chunks(db_path: Path, chunks: list = BASELINE_CHUNKS) -> None:
    from goldmine.store import open_store

    with open_store(db_path) as con:
        con.execute(
            "INSERT INTO corpus_snapshots VALUES (1, 1, now(), 'h', ?, 'test')", [len(chunks)]
        )
        for cid, text in chunks:
            con.execute(
                "INSERT INTO chunks VALUES (1, ?, ?, ?, NULL, ?, ?, NULL)",
                [cid, cid.split("-")[0], cid, text, cid],
            )


def test_bm25_baseline_over_the_stored_corpus(cli, tmp_path: Path, gold: Path, db_path: Path):
    _store_baseline_chunks(db_path)
    result = cli(
        "eval",
        "run",
        "-g",
        str(gold),
        "--baseline",
        "bm25",
        "-m",
        "mrr,recall@1",
        "--db",
        str(db_path),
        "--json",
    )
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["metrics"]["recall@1"] == 1.0
    assert data["run"]["source"] == "baseline:bm25"


@pytest.mark.parametrize(
    "kind", ["bm25", pytest.param("dense", marks=pytest.mark.slow),
             pytest.param("hybrid", marks=pytest.mark.slow)],
)  # fmt: skip
def test_a_baseline_returns_at_most_k_and_abstains_as_the_readme_says(
    cli, tmp_path: Path, gold: Path, db_path: Path, kind: str
) -> None:
    # "do you sell cars" has no answer and shares no term with the corpus.
    _store_baseline_chunks(db_path)
    saved = tmp_path / "run.trec"
    base = ["eval", "run", "-g", str(gold), "--baseline", kind, "--db", str(db_path), "--json"]
    out = cli(*base, "-k", "2", "--save-run", str(saved), "--no-store")
    assert out.returncode == 0, out.stderr
    per_query: dict[str, int] = {}
    for line in saved.read_text().splitlines():
        per_query[line.split()[0]] = per_query.get(line.split()[0], 0) + 1
    assert per_query and max(per_query.values()) <= 2
    (cars,) = json.loads(out.stdout)["no_answer"]
    assert cars["returned"] <= 2
    # Abstained means nothing returned, or nothing scoring --abstain-below or more: BM25 returns
    # nothing for a query sharing no term; dense and hybrid always rank every chunk, so only
    # --abstain-below makes them abstain.
    assert cars["abstained"] is (kind == "bm25")
    below = cli(*base, "-k", "2", "--abstain-below", "0.99", "--no-store")
    assert json.loads(below.stdout)["no_answer"][0]["abstained"] is True


def test_fail_if_worse_than_uses_the_compare_verdict(cli, tmp_path: Path, db_path: Path) -> None:
    gold = tmp_path / "gold.jsonl"
    gold.write_text(
        "".join(
            json.dumps({"query_id": f"q{i}", "query": f"query {i}", "relevant": [f"d{i}"]}) + "\n"
            for i in range(30)
        )
    )
    good = tmp_path / "good.jsonl"
    good.write_text(
        "".join(
            json.dumps({"query_id": f"q{i}", "results": [f"d{i}", "x"]}) + "\n" for i in range(30)
        )
    )
    bad = tmp_path / "bad.jsonl"  # loses the answer on 20 of 30 queries
    bad.write_text(
        "".join(
            json.dumps({"query_id": f"q{i}", "results": ["x", f"d{i}"] if i < 20 else [f"d{i}"]})
            + "\n"
            for i in range(30)
        )
    )
    base = ["eval", "run", "-g", str(gold), "-m", "mrr", "--db", str(db_path)]
    assert cli(*base, "-r", str(good), "--label", "good").returncode == 0
    same = cli(*base, "-r", str(good), "--fail-if-worse-than", "good")
    assert same.returncode == 0, same.stderr
    worse = cli(*base, "-r", str(bad), "--fail-if-worse-than", "good")
    assert worse.returncode == 1
    assert worse.stderr.startswith("gate failed: worse than run 1 (good) on 30 common queries")
    assert len(worse.stderr.strip().splitlines()) == 1


def test_runs_scored_at_two_relevance_levels_are_not_compared_as_alike(cli, db_path, tmp_path):
    """The same run file scored at -l 1 and gated at -l 2 against it failed "worse than run 1"
    (exit 1); eval compare of the two called one better with no note."""
    gold = tmp_path / "gold.jsonl"
    gold.write_text("".join(
        json.dumps({"query_id": f"q{i}", "query": f"query {i}",
                    "relevant": {f"d{i}": 2, f"e{i}": 1}}) + "\n" for i in range(30)))  # fmt: skip
    run = tmp_path / "run.jsonl"
    run.write_text("".join(
        json.dumps({"query_id": f"q{i}", "results": [f"e{i}", f"d{i}"]}) + "\n"
        for i in range(30)))  # fmt: skip
    base = ["eval", "run", "-g", str(gold), "-r", str(run), "-m", "mrr", "--db", str(db_path)]
    assert cli(*base, "-l", "1", "--label", "one").returncode == 0
    gated = cli(*base, "-l", "2", "--no-store", "--fail-if-worse-than", "one")
    assert gated.returncode == 2, gated.stderr
    assert "-l 1" in gated.stderr and "-l 2" in gated.stderr, gated.stderr
    assert cli(*base, "-l", "2", "--label", "two").returncode == 0
    compared = cli("eval", "compare", "one", "two", "--json", "--db", str(db_path))
    assert compared.returncode == 0, compared.stderr
    notes = " ".join(json.loads(compared.stdout)["notes"])
    assert "-l 1" in notes and "-l 2" in notes, notes
    # a run file as the reference is scored at this run's level: the same file is no worse
    same = cli(*base, "-l", "2", "--no-store", "--fail-if-worse-than", str(run))
    assert same.returncode == 0, same.stderr


def test_a_retriever_failing_on_every_query_is_a_failure(cli, tmp_path: Path, gold: Path) -> None:
    """Every query raised, and the run was scored 0 with exit 0: a CI job read MRR 0.00 as a
    number. No query scored is exit 1 (a failure, not bad input), nothing stored; a retriever
    failing on some queries only is still scored (test_callable_retriever_…)."""
    (tmp_path / "down.py").write_text("def search(query, k):\n    raise RuntimeError('down')\n")
    db = tmp_path / "e.duckdb"
    result = cli("eval", "run", "-g", str(gold), "--retriever", "down:search", "--db", str(db),
                 cwd=tmp_path)  # fmt: skip
    assert result.returncode == 1, result.stderr
    assert result.stderr.strip() == (
        "error: down:search failed on every query, so nothing was scored (4 queries; the "
        "first: q1: RuntimeError: down)"
    )
    assert not db.exists()


# What a Python retriever returns in the wild: an async def (an async vector-store client), a
# generator, faiss's numpy row of int64 ids, pandas' 184.0. Each was "failed on every query"
# (a coroutine "never awaited", "got generator", "got ndarray") or a bare id refused.
RETRIEVER_SHAPES = {
    "async": "import asyncio\nasync def search(query, k):\n"
    "    await asyncio.sleep(0)\n    return A[query][:k]\n",
    "async batch": "async def search(queries, k):\n    return [A[q][:k] for q in queries]\n",
    "generator": "def search(query, k):\n    yield from A[query][:k]\n",
    "numpy ids": "import numpy as np\nN = {q: np.array([int(d.split('-')[1]) for d in ds]) "
    "for q, ds in A.items()}\ndef search(query, k):\n    return N[query][:k]\n",
    "numpy pairs": "import numpy as np\ndef search(query, k):\n"
    "    return [(np.int64(d.split('-')[1]), np.float32(1 / (i + 1))) "
    "for i, d in enumerate(A[query][:k])]\n",
    "float ids": "def search(query, k):\n"
    "    return [float(d.split('-')[1]) for d in A[query][:k]]\n",
}


@pytest.mark.parametrize("shape", list(RETRIEVER_SHAPES))
def test_a_retriever_in_the_shapes_python_returns(cli, tmp_path: Path, shape: str) -> None:
    numeric = shape in ("numpy ids", "numpy pairs", "float ids")
    answers = {q: [f"doc-{i}" for i in range(1, len(ids) + 1)] for q, ids in ANSWERS.items()}
    first, second = ("1", "2") if numeric else ("doc-1", "doc-2")
    gold = [
        {"query_id": "q1", "query": "refund damaged item", "relevant": [first]},
        {"query_id": "q2", "query": "expense report deadline", "relevant": [second]},
    ]
    (tmp_path / "g.jsonl").write_text("".join(json.dumps(g) + "\n" for g in gold))
    module = "ret_" + shape.replace(" ", "_")  # one module a shape: the CLI runs in-process
    (tmp_path / f"{module}.py").write_text(f"A = {answers!r}\n" + RETRIEVER_SHAPES[shape])
    data = run_json(cli, "-g", str(tmp_path / "g.jsonl"), "--retriever", f"{module}:search",
                    "-m", "mrr", cwd=tmp_path)  # fmt: skip
    assert data["errors"] == {}
    assert data["metrics"]["mrr"] == pytest.approx(0.75)
