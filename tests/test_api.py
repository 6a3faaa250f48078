"""The Python API: the same numbers as the CLI and as pytrec_eval, the store, the CI assertion,
the exports other tools load, and what ``import goldmine`` costs."""

from __future__ import annotations

import json
import random
import subprocess
import sys
import uuid
from pathlib import Path

import pandas as pd
import polars as pl
import pytest

import goldmine
from goldmine.testing import assert_no_regression

from helpers import gold, run_cli

METRICS = ["recall@1", "recall@5", "frac_recall@10", "mrr", "ndcg", "ndcg@10", "precision@5",
           "map", "r_precision"]  # fmt: skip


# --- files and dicts of one small case -----------------------------------------------------------


def _case(n: int = 40, seed: int = 3) -> tuple[dict, dict]:
    """Graded qrels (a no-answer query among them) and a scored run with ties, a missing query
    and a query the gold lacks."""
    rng = random.Random(seed)
    qrels: dict[str, dict[str, int]] = {}
    for i in range(n):
        docs = rng.sample(range(60), rng.randint(1, 6))
        qrels[f"q{i}"] = {f"d{d}": rng.choice([0, 1, 1, 2, 3]) for d in docs}
    qrels["q0"] = {"d1": 0, "d2": 0}  # nothing relevant: scored apart as no-answer
    run = {  # one decimal: ties, which trec_eval breaks by doc id, descending
        f"q{i}": {f"d{d}": round(rng.random(), 1) for d in rng.sample(range(60), 25)}
        for i in range(1, n)  # q0, the no-answer query, is abstained on
        if i != 7  # q7 is missing from the run (scores 0)
    }
    run["extra"] = {"d1": 1.0}  # not in the gold: ignored
    return qrels, run


def _write_case(folder: Path, qrels: dict, run: dict, name: str = "run.trec") -> tuple[Path, Path]:
    gold_path = folder / "gold.jsonl"
    gold_path.write_text("".join(
        json.dumps({"query_id": q, "query": f"text of {q}", "relevant": judged}) + "\n"
        for q, judged in qrels.items()
    ))  # fmt: skip
    return gold_path, _write_run(folder / name, run)


def _write_run(path: Path, run: dict) -> Path:
    """A TREC run file; the lines of a query in any order (the reader ranks by score)."""
    path.write_text("".join(
        f"{q} Q0 {d} {r} {s} t\n"
        for q, docs in run.items()
        for r, (d, s) in enumerate(docs.items(), start=1)
    ))  # fmt: skip
    return path


def _cli_json(*args: str) -> dict:
    done = run_cli(*args)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_evaluate_gives_the_cli_numbers_for_files_dicts_and_frames(tmp_path: Path) -> None:
    qrels, run = _case()
    gold_path, run_path = _write_case(tmp_path, qrels, run)
    cli = _cli_json("eval", "run", "--gold", str(gold_path), "--run", str(run_path),
                    "--metrics", ",".join(METRICS), "--no-store", "--json")  # fmt: skip
    from_files = goldmine.evaluate(gold_path, run_path, METRICS)
    assert from_files.mean == cli["metrics"]
    assert from_files.to_dict()["per_query"] == cli["per_query"]
    for key in ("missing", "ignored", "n_queries", "n_no_answer"):
        assert from_files.to_dict()[key] == cli[key], key
    assert from_files.missing == ["q7"] and from_files.ignored == ["extra"]

    run_frame = pl.DataFrame(
        [(q, d, s) for q, docs in run.items() for d, s in docs.items()],
        schema={"qid": pl.String, "docno": pl.String, "score": pl.Float64}, orient="row",
    )  # fmt: skip
    gold_frame = pd.DataFrame(
        [(q, d, g) for q, judged in qrels.items() for d, g in judged.items()],
        columns=["query_id", "doc_id", "relevance"],
    )
    for g, r in ((qrels, run), (gold_frame, run_frame), (qrels, run_path)):
        result = goldmine.evaluate(g, r, METRICS)
        assert result.mean == pytest.approx(cli["metrics"], abs=1e-12), (type(g), type(r))
        assert result.per_query.columns == ["query_id", *METRICS]
        assert result.per_query.height == cli["n_queries"]
        by_query = {row["query_id"]: row for row in result.per_query.iter_rows(named=True)}
        for q, scores in cli["per_query"].items():
            assert by_query[q] == pytest.approx({"query_id": q, **scores}, abs=1e-12)


def test_evaluate_takes_ranked_lists_and_trec_eval_names() -> None:
    gold_ids = {"q1": ["d1"], "q2": ["d9"]}
    result = goldmine.evaluate(gold_ids, {"q1": ["d3", "d1"], "q2": ["d9", "d9", "d4"]},
                               ["success_1", "recip_rank", "P_2"])  # fmt: skip
    assert result.mean == {"recall@1": 0.5, "mrr": 0.75, "precision@2": 0.5}
    assert result.result.n_duplicates == 1  # d9 twice: kept at its first rank
    html = result._repr_html_()
    assert "<table>" in html and "mrr" in html and "0.7500" in html
    assert repr(result).startswith("Evaluation(recall@1=0.5000")


def test_bad_input_is_an_input_error_that_says_what() -> None:
    with pytest.raises(goldmine.InputError, match="unknown metric 'recal@5'"):
        goldmine.evaluate({"q1": ["d1"]}, {"q1": ["d1"]}, ["recal@5"])
    with pytest.raises(goldmine.InputError, match="grade is an integer, got 'high'"):
        goldmine.evaluate({"q1": {"d1": "high"}}, {"q1": ["d1"]})
    with pytest.raises(goldmine.InputError, match="score is a number, got 'x'"):
        goldmine.evaluate({"q1": ["d1"]}, {"q1": {"d1": "x"}})
    with pytest.raises(goldmine.InputError, match="match none of the gold"):
        goldmine.evaluate({"q1": ["d1"]}, {"other": ["d1"]})
    with pytest.raises(goldmine.InputError, match=r"published version .*Store\("):
        goldmine.evaluate("v3", {"q1": ["d1"]})
    with pytest.raises(goldmine.InputError, match="no doc_id column"):
        goldmine.evaluate(pl.DataFrame({"query_id": ["q1"], "grade": [1]}), {"q1": ["d1"]})


def test_a_run_of_pairs_or_a_set_is_read_or_refused_never_scored_wrong() -> None:
    """What retrievers hand back: a list of (id, score) pairs (bm25s, a vector store's
    ``similarity_search_with_score``) was taken as a list of ids that are tuples, so nothing
    matched and the run scored 0 without a word; a set of ids, which has no order, was scored
    in whatever order Python iterated it."""
    gold = {"q1": {"d1": 2, "d2": 0}, "q2": {"d3": 1}}
    pairs = {"q1": [("d2", 0.9), ("d1", 0.8)], "q2": [["d3", 0.5]]}
    assert goldmine.evaluate(gold, pairs, ["mrr"]).mean == {"mrr": 0.75}
    assert goldmine.evaluate(gold, pairs, ["mrr"]).mean == goldmine.evaluate(
        gold, {"q1": {"d2": 0.9, "d1": 0.8}, "q2": {"d3": 0.5}}, ["mrr"]).mean  # fmt: skip
    with pytest.raises(goldmine.InputError, match="a set has no order"):
        goldmine.evaluate(gold, {"q1": {"d2", "d1"}}, ["mrr"])
    with pytest.raises(goldmine.InputError, match=r"query 'q1'.*\(id, score\) pairs or ids"):
        goldmine.evaluate(gold, {"q1": [("d2", 0.9, "x")]}, ["mrr"])
    with pytest.raises(goldmine.InputError, match=r"query 'q1'.*\(id, score\) pairs or ids"):
        goldmine.evaluate(gold, {"q1": [{"id": "d2"}]}, ["mrr"])


def test_a_run_given_as_a_generator_keeps_its_first_result() -> None:
    """A run's ranking may come as any iterable, a generator or ``map`` over the hits too: the
    check for (id, score) pairs looked at its first item by taking it, so a one-shot iterable
    lost its best result and the query scored as if it had missed."""
    gold = {"q1": {"d1": 1}, "q2": {"d3": 1}}
    run = {"q1": (hit for hit in ["d1", "d2"]), "q2": iter([("d3", 0.7), ("d4", 0.2)])}
    assert goldmine.evaluate(gold, run, ["mrr"]).mean == {"mrr": 1.0}


def test_a_run_of_ids_that_are_objects_is_read_by_their_text() -> None:
    """Vector stores hand ids back as objects (Weaviate's ``uuid.UUID``, MongoDB's ObjectId):
    a list of them was read by their text until the (id, score) pairs check refused every
    item that was neither text nor a whole number."""
    ids = [uuid.UUID(int=n) for n in (7, 8)]
    gold = {"q1": {str(ids[1]): 1}}
    assert goldmine.evaluate(gold, {"q1": ids}, ["mrr"]).mean == {"mrr": 0.5}


# --- against pytrec_eval on random cases ----------------------------------------------------------

# goldmine name -> pytrec_eval (trec_eval) measure
TREC_NAMES = {
    "recall@5": "success_5", "frac_recall@10": "recall_10", "mrr": "recip_rank",
    "ndcg": "ndcg", "ndcg@10": "ndcg_cut_10", "precision@5": "P_5", "map": "map",
    "r_precision": "Rprec",
}  # fmt: skip


def _random_case(rng: random.Random, n_queries: int) -> tuple[dict, dict]:
    qrels, run = {}, {}
    for i in range(n_queries):
        pool = [f"d{j}" for j in range(rng.randint(5, 80))]
        judged = rng.sample(pool, rng.randint(1, 5))
        qrels[f"q{i}"] = {d: rng.choice([0, 0, 1, 2, 3]) for d in judged}
        if rng.random() < 0.95:  # a few queries the run lacks
            # one decimal: many ties, which trec_eval breaks by doc id, descending
            run[f"q{i}"] = {
                d: round(rng.random(), 1) for d in rng.sample(pool, rng.randint(0, len(pool)))
            }  # noqa: E501
    return qrels, run


@pytest.mark.parametrize("seed", [11, 12, 13])
def test_evaluate_equals_pytrec_eval_on_random_cases(seed: int) -> None:
    pytrec_eval = pytest.importorskip("pytrec_eval")
    qrels, run = _random_case(random.Random(seed), 300)
    ours = goldmine.evaluate(qrels, run, list(TREC_NAMES))
    theirs = pytrec_eval.RelevanceEvaluator(qrels, set(TREC_NAMES.values())).evaluate(run)
    compared = 0
    for q, scores in ours.result.per_query.items():
        for name, trec in TREC_NAMES.items():
            expected = theirs[q][trec] if q in theirs else 0.0  # -c: missing queries score 0
            assert scores[name] == pytest.approx(expected, abs=1e-9), (seed, q, name)
            compared += 1
    assert compared > 0.5 * 300 * len(TREC_NAMES)
    no_answer = {r.query_id for r in ours.result.no_answer}
    assert no_answer == {q for q, j in qrels.items() if max(j.values()) < 1}


# --- compare and the CI assertion ----------------------------------------------------------------


def _hits(n: int, rank_of: dict[int, int]) -> dict[str, list[str]]:
    """Query i finds d{i} at rank rank_of.get(i, 1)."""
    run = {}
    for i in range(n):
        docs = [f"x{i}_{j}" for j in range(9)]
        docs.insert(rank_of.get(i, 1) - 1, f"d{i}")
        run[f"q{i}"] = docs
    return run


def test_compare_gives_the_cli_test_interval_effect_and_verdict(tmp_path: Path) -> None:
    qrels, run_a = _case(60, seed=5)
    rng = random.Random(9)
    run_b = {q: {d: s + rng.choice([0.0, 0.0, 0.3]) for d, s in docs.items()}
             for q, docs in run_a.items()}  # fmt: skip
    gold_path, a_path = _write_case(tmp_path, qrels, run_a, "a.trec")
    _, b_path = _write_case(tmp_path, qrels, run_b, "b.trec")
    metrics = ["recall@5", "mrr", "ndcg@10"]
    cli = _cli_json("eval", "compare", str(a_path), str(b_path), "--gold", str(gold_path),
                    "--metrics", ",".join(metrics), "--permutations", "2000",
                    "--bootstrap", "2000", "--json")  # fmt: skip
    for a, b in ((a_path, b_path), (run_a, run_b)):
        ours = goldmine.compare(gold_path, a, b, metrics, permutations=2000, bootstrap=2000)
        assert json.loads(json.dumps(ours.to_dict()["metrics"])) == cli["metrics"]
        assert ours.to_dict()["n_queries"] == cli["n_queries"]
    assert ours.verdicts == {m: cli["metrics"][m]["verdict"] for m in metrics}
    assert ours.metric("ndcg_cut_10").metric == "ndcg@10"
    assert "paired randomization test" in str(ours)


def test_assert_no_regression_names_metric_delta_interval_and_queries_lost() -> None:
    n = 60
    qrels = {f"q{i}": [f"d{i}"] for i in range(n)}
    baseline = _hits(n, {})
    worse = _hits(n, {i: 4 for i in range(0, n, 2)})  # half the queries drop from rank 1 to 4
    with pytest.raises(AssertionError) as failed:
        assert_no_regression(qrels, worse, baseline=baseline, metrics=["mrr", "recall@5"],
                             permutations=2000, bootstrap=2000)  # fmt: skip
    message = str(failed.value)
    assert message.startswith("the run is worse than the baseline on 60 common queries: mrr ")
    assert "mrr 0.6250 vs 1.0000 (delta -0.3750, 95% CI [" in message
    assert "recall@5" not in message  # rank 4 is still in the top 5: not worse
    # the ten largest losses (all equal here: as eval compare lists them, last first)
    assert "\nmrr: lost 30 queries (q58 1.000->0.250, q56 1.000->0.250, " in message
    assert "and 20 more), won 0" in message
    # the same run, and a run a little different, pass; the comparison is returned
    passed = assert_no_regression(qrels, _hits(n, {3: 2}), baseline=baseline, metrics="mrr",
                                  permutations=2000, bootstrap=2000)  # fmt: skip
    assert passed.verdicts == {"mrr": "inside the noise"}


# --- the store ---------------------------------------------------------------------------------


@pytest.fixture
def published(tmp_path: Path) -> Path:
    """A store with version 1 published from a gold JSONL (graded, one no-answer query)."""
    qrels, _ = _case(20, seed=8)
    gold_path = tmp_path / "gold.jsonl"
    gold_path.write_text("".join(
        json.dumps({"query_id": q, "query": f"text of {q}",
                    "relevant": {d: min(g, 2) for d, g in judged.items() if g > 0}}) + "\n"
        for q, judged in qrels.items()
    ))  # fmt: skip
    db = tmp_path / "store.duckdb"
    gold(run_cli, db, "import", str(gold_path))
    gold(run_cli, db, "publish", "-m", "first")
    return db


def test_store_gold_versions_and_runs_as_the_cli_sees_them(published: Path, tmp_path) -> None:
    _, run = _case(20, seed=8)
    run_path = _write_run(tmp_path / "run.trec", run)
    cli = _cli_json("eval", "run", "--gold", "v1", "--db", str(published), "--run", str(run_path),
                    "--metrics", "recall@5,mrr,ndcg@10", "--label", "first", "--json")  # fmt: skip
    store = goldmine.Store(published)
    v1 = store.gold("v1")
    assert v1.hash == cli["gold"]["hash"] and v1.version == 1 and len(v1) == 20
    assert store.gold("latest").hash == v1.hash and store.gold(1).hash == v1.hash
    assert v1.judgments.columns == ["query_id", "doc_id", "grade"]
    assert v1.queries.filter(~pl.col("answerable")).height == cli["n_no_answer"] > 0
    result = goldmine.evaluate(v1, run_path)
    assert result.mean == cli["metrics"]
    assert goldmine.evaluate(v1.qrels, run).mean == pytest.approx(cli["metrics"], abs=1e-12)

    versions = store.versions()
    assert versions["version"].to_list() == [1] and versions["content_hash"][0] == v1.hash
    runs = store.runs()
    assert runs["label"].to_list() == ["first"] and runs["run_id"][0] == cli["run_id"]
    assert {"norm_query", "n_events", "cluster_id"} <= set(store.queries().columns)


def test_store_is_read_only_unless_asked_and_speaks_the_projects_errors(published: Path) -> None:
    store = goldmine.Store(published)
    refused = pytest.raises(goldmine.InputError, match=r"opened read-only: open it with Store\(")
    with refused, store.write():
        pass
    with pytest.raises(goldmine.StoreError, match=str(published)), store.read() as con:
        con.execute("INSERT INTO gold_versions (version) VALUES (99)").fetchall()
    with pytest.raises(goldmine.StoreError, match="no_such_table"), store.read() as con:
        con.execute("SELECT * FROM no_such_table").fetchall()
    with pytest.raises(goldmine.NotFoundError, match="v7"):
        store.gold("v7")
    with pytest.raises(goldmine.NotFoundError):
        goldmine.Store(published.parent / "absent.duckdb").versions()
    assert not (published.parent / "absent.duckdb").exists()
    writer = goldmine.Store(published, write=True)
    with writer.write() as con:
        con.execute("CREATE TABLE notes (x INTEGER)").fetchall()
    with store.read() as con:
        assert con.execute("SELECT count(*) FROM notes").fetchall() == [(0,)]


def test_a_store_made_from_a_relative_path_keeps_its_file_after_a_chdir(
    published: Path, tmp_path: Path, monkeypatch
) -> None:
    """The path was kept relative: after os.chdir a write made a new empty store there."""
    monkeypatch.chdir(published.parent)
    store = goldmine.Store(published.name, write=True)
    assert store.path == published.resolve() and str(published.resolve()) in repr(store)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    with store.write() as con:
        assert con.execute("SELECT count(*) FROM gold_versions").fetchall() == [(1,)]
    assert store.gold("v1").version == 1
    assert list(elsewhere.iterdir()) == []


def test_a_run_keyed_by_query_text_matches_as_a_run_file_does(published: Path, tmp_path) -> None:
    """A JSONL run of texts matched the gold's queries; the same run as a dict, or as a frame
    with a ``query`` column, matched none ("the run's query ids match none"), while the message
    said texts would do."""
    v1 = goldmine.Store(published).gold("v1")
    texts = {f"text of {q}": list(v1.qrels[q]) for q in v1}  # the relevant ids, best first
    (tmp_path / "r.jsonl").write_text("".join(
        json.dumps({"query": t, "results": ids}) + "\n" for t, ids in texts.items()
    ))  # fmt: skip
    from_file = goldmine.evaluate(v1, tmp_path / "r.jsonl", "mrr")
    assert from_file.missing == [] and from_file.mean["mrr"] == 1.0
    frame = pl.DataFrame(
        [(t, d, r) for t, ids in texts.items() for r, d in enumerate(ids, start=1)],
        schema={"query": pl.String, "doc_id": pl.String, "rank": pl.Int64}, orient="row",
    )  # fmt: skip
    loose = {f"  TEXT of {q}!": ids for q, ids in v1.qrels.items()}  # normalized, as a file's
    for run in (texts, frame, loose):
        result = goldmine.evaluate(v1, run, "mrr")
        assert result.to_dict()["per_query"] == from_file.to_dict()["per_query"], type(run)
    # an id wins over a text that names another query, whichever comes first
    q0, q1 = list(v1)[:2]
    both = {f"text of {q1}": ["x"], q1: list(v1.qrels[q1]), q0: ["x"]}
    per_query = goldmine.evaluate(v1, both, "mrr").result.per_query
    assert per_query[q1]["mrr"] == from_file.result.per_query[q1]["mrr"]
    with pytest.raises(goldmine.InputError, match=r"\(the same query ids\)\?$"):
        goldmine.evaluate(v1.qrels, texts, "mrr")  # a dict of judgments has no texts to match


def test_a_read_inside_a_write_block_goes_through_the_open_connection(published: Path) -> None:
    """DuckDB takes no read-only connection beside a read-write one in the same process: a
    view asked for inside ``with store.write()`` was a raw "different configuration" error."""
    store = goldmine.Store(published, write=True)
    with store.write() as con:
        con.execute("CREATE TABLE notes (x INTEGER)")
        assert store.gold(1).version == 1 and store.versions().height == 1
        assert goldmine.Store(published).versions().height == 1  # a second Store on the file
        with store.read() as reading:
            assert reading.execute("SELECT count(*) FROM notes").fetchall() == [(0,)]
        with pytest.raises(goldmine.StoreError, match="read-only"), store.read() as reading:
            reading.execute("INSERT INTO notes VALUES (1)")
        con.execute("INSERT INTO notes VALUES (1)")
    with store.read() as con:
        assert con.execute("SELECT count(*) FROM notes").fetchall() == [(1,)]
        held = f"this process holds {published} open for reading: write after the block"
        with pytest.raises(goldmine.StoreError, match=held), store.write():
            pass


# --- exports other tools load --------------------------------------------------------------------


def _export(db: Path, out: Path, fmt: str) -> list[Path]:
    done = gold(run_cli, db, "export", "--format", fmt, "--out", str(out), "--json")
    return [Path(p) for p in json.loads(done.stdout)["paths"]]


@pytest.mark.slow  # importing ranx compiles its numba kernels: 10-30 s
def test_export_ranx_loads_as_ranx_qrels_with_the_versions_judgments(published, tmp_path) -> None:
    ranx = pytest.importorskip("ranx")
    (path,) = _export(published, tmp_path / "out", "ranx")
    assert path.name == "v0001.qrels.json"
    loaded = ranx.Qrels.from_file(str(path)).to_dict()
    v1 = goldmine.Store(published).gold("v1")
    assert {q: dict(j) for q, j in loaded.items()} == {q: j for q, j in v1.qrels.items() if j}


def test_export_ir_measures_reads_as_qrels_and_scores_as_goldmine(published, tmp_path) -> None:
    ir_measures = pytest.importorskip("ir_measures")
    (path,) = _export(published, tmp_path / "out", "ir_measures")
    qrels = list(ir_measures.read_trec_qrels(str(path)))
    v1 = goldmine.Store(published).gold("v1")
    assert {(r.query_id, r.doc_id, r.relevance) for r in qrels} == {
        (q, d, g) for q, judged in v1.qrels.items() for d, g in judged.items()
    }
    _, run = _case(20, seed=8)
    ours = goldmine.evaluate(v1, {q: run.get(q, {}) for q in v1}, ["ndcg@10", "map"])
    run_rows = [ir_measures.ScoredDoc(q, d, s) for q, docs in run.items() for d, s in docs.items()]
    theirs = ir_measures.calc_aggregate([ir_measures.nDCG @ 10, ir_measures.AP], qrels, run_rows)
    # ir_measures averages over the queries it can score (answerable ones with a run)
    assert theirs[ir_measures.nDCG @ 10] == pytest.approx(
        ours.per_query.filter(pl.col("query_id").is_in(list(run)))["ndcg@10"].mean(), abs=1e-9
    )


def test_export_hf_loads_offline_with_datasets_and_carries_the_hash(
    published, tmp_path, monkeypatch
) -> None:
    datasets = pytest.importorskip("datasets")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    paths = _export(published, tmp_path / "out", "hf")
    folder = paths[0].parent
    assert sorted(p.name for p in paths) == ["README.md", "judgments.parquet", "queries.parquet"]
    v1 = goldmine.Store(published).gold("v1")
    card = (folder / "README.md").read_text()
    assert card.startswith("---\nconfigs:\n") and f"content_hash: {v1.hash}" in card
    cache = str(tmp_path / "hf-cache")
    judgments = datasets.load_dataset(str(folder), "judgments", split="train", cache_dir=cache)
    assert {(r["query_id"], r["doc_id"], r["grade"]) for r in judgments} == {
        (q, d, g) for q, judged in v1.qrels.items() for d, g in judged.items()
    }
    queries = datasets.load_dataset(str(folder), "queries", split="train", cache_dir=cache)
    no_answer = v1.queries.filter(~pl.col("answerable")).height
    assert sorted(queries["query_id"]) == sorted(v1) and sum(queries["no_answer"]) == no_answer > 0
    plain = datasets.load_dataset("parquet", data_files=str(folder / "judgments.parquet"),
                                  split="train", cache_dir=cache)  # fmt: skip
    assert plain.num_rows == judgments.num_rows
    import pyarrow.parquet as pq

    meta = pq.read_schema(folder / "judgments.parquet").metadata[b"goldmine"]
    assert json.loads(meta) == {"version": 1, "content_hash": v1.hash}


def test_two_gold_sets_hf_folders_of_one_name_load_apart_as_the_card_says(
    published, tmp_path, monkeypatch
) -> None:
    """``datasets`` caches a local folder by its name and config alone: a second store's
    ``v0001-hf`` loaded as ``load_dataset(folder, "judgments")`` came back as the first's rows
    (and with ``download_mode="force_redownload"`` failed on the first's split sizes). The card
    shows a call that reads each folder's own files."""
    datasets = pytest.importorskip("datasets")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    other = tmp_path / "other.duckdb"
    line = {"query_id": "x1", "query": "another team's query", "relevant": {"d9": 2}}
    (tmp_path / "other.jsonl").write_text(json.dumps(line) + "\n")
    gold(run_cli, other, "import", str(tmp_path / "other.jsonl"))
    gold(run_cli, other, "publish", "-m", "first")
    folders = [_export(db, tmp_path / name, "hf")[0].parent
               for db, name in ((published, "a"), (other, "b"))]  # fmt: skip
    assert folders[0].name == folders[1].name == "v0001-hf"
    card = (folders[0] / "README.md").read_text()
    assert 'load_dataset("parquet", data_files="path/to/this/folder/judgments.parquet"' in card
    cache = str(tmp_path / "hf-cache")
    for folder, db in zip(folders, (published, other), strict=True):
        rows = datasets.load_dataset("parquet", data_files=str(folder / "judgments.parquet"),
                                     split="train", cache_dir=cache)  # fmt: skip
        v1 = goldmine.Store(db).gold("v1")
        assert {(r["query_id"], r["doc_id"], r["grade"]) for r in rows} == {
            (q, d, g) for q, judged in v1.qrels.items() for d, g in judged.items()
        }


CARD_MESSAGES = {
    "emoji": "week 48 🚀 ✓",
    "yaml-syntax": 'a "quoted": colon\nand a line',
    "bidi-arabic": "RTL \u202e شكرا",
    "non-printable": "\x7f\x85\u2028\ufeff end",
}


@pytest.mark.parametrize("message", CARD_MESSAGES.values(), ids=CARD_MESSAGES.keys())
def test_the_dataset_card_keeps_the_versions_message_as_written(message: str) -> None:
    """An emoji in a version's message went into the card's YAML as JSON's surrogate pair
    (``\\ud83d\\ude80``), which YAML reads as two lone surrogates: the card's message was
    not the version's, and no UTF-8 writer could save it again."""
    yaml = pytest.importorskip("yaml")
    from goldmine.goldset.interop import dataset_card

    card = dataset_card({"version": 3, "content_hash": "ab" * 32, "message": message}, 2, 5)
    front = card.split("---\n")[1]
    assert yaml.safe_load(front)["goldmine"]["message"] == message


# --- what importing costs ------------------------------------------------------------------------

HEAVY = ("duckdb", "_duckdb", "polars", "pandas", "pyarrow", "torch", "sentence_transformers",
         "starlette", "uvicorn", "httpx", "httpx2", "typer", "rich", "goldmine.store")  # fmt: skip

_PROBE = """
import sys
import goldmine
after_import = sorted(m for m in sys.modules if m.startswith("goldmine."))
result = goldmine.evaluate({"q1": {"d1": 2, "d2": 0}}, {"q1": {"d2": 0.9, "d1": 0.5}})
print(after_import)
print(sorted(m for m in %r if m in sys.modules))
print(result.mean)
"""


def test_import_goldmine_and_scoring_two_dicts_import_no_store_frame_or_model() -> None:
    done = subprocess.run([sys.executable, "-c", _PROBE % (HEAVY,)], capture_output=True,
                          text=True, timeout=120)  # fmt: skip
    assert done.returncode == 0, done.stderr
    after_import, heavy, mean = done.stdout.strip().splitlines()
    assert after_import == "[]"  # `import goldmine` imports none of its modules
    assert heavy == "[]"
    assert mean == "{'recall@5': 1.0, 'mrr': 0.5, 'ndcg@10': 0.6309297535714575}"


def test_the_api_names_resolve_lazily_and_the_package_is_typed() -> None:
    assert sorted(goldmine.__all__) == sorted(["__version__", *goldmine._LAZY, "testing"])
    assert set(goldmine.__all__) <= set(dir(goldmine))
    assert goldmine.testing.assert_no_regression is assert_no_regression
    assert goldmine.Store.__mro__[1].__module__ == "goldmine.store"  # the core Store
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        goldmine.nope  # noqa: B018
    assert (Path(goldmine.__file__).parent / "py.typed").is_file()


def test_the_docstring_examples_hold() -> None:
    import doctest

    import goldmine.api
    import goldmine.stored
    import goldmine.testing

    for module in (goldmine.api, goldmine.stored, goldmine.testing, goldmine.store):
        failed, tried = doctest.testmod(module, extraglobs={"goldmine": goldmine})
        assert failed == 0, module.__name__
    assert doctest.testmod(goldmine.api).attempted >= 6  # evaluate's and compare's ran


def test_a_store_is_a_context_manager_and_refuses_use_once_closed(published: Path) -> None:
    """``with goldmine.Store(path) as store:``, as sqlite3 and duckdb connections are used, was
    "'Store' object does not support the context manager protocol", and close() an
    AttributeError. Nothing stays open between calls; a closed Store says so when used."""
    with goldmine.Store(published) as store:
        v1 = store.gold("v1")
        assert store.versions().height == 1
    assert {v1: "pinned"}[store_copy_of(v1)] == "pinned"  # a GoldSet is hashable, by its hash
    with pytest.raises(goldmine.StoreError, match=r"closed.*goldmine\.Store\("):
        store.gold("v1")
    with pytest.raises(goldmine.StoreError, match="closed"), store.read():
        pass
    writer = goldmine.Store(published, write=True)
    writer.close()
    writer.close()  # twice is harmless, as for a file
    with pytest.raises(goldmine.StoreError, match="closed"), writer.write():
        pass


def store_copy_of(gold_set):
    return type(gold_set)(gold_set.gold)
