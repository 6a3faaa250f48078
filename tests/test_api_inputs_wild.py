"""What a notebook hands ``goldmine.evaluate``, found by a probe as an ML engineer would write
it: grades from a numpy array, a frame with a missing grade or a judgment given twice, ranx's
own Qrels and Run objects. Each is read, or refused with an InputError that says what."""

from __future__ import annotations

import collections
import dataclasses
import json

import numpy as np
import pandas as pd
import polars as pl
import pytest

import goldmine
from goldmine.errors import InputError

RUN = {"q1": {"d1": 0.9, "d2": 0.5}, "q2": {"d3": 0.8, "d4": 0.1}}


@pytest.mark.parametrize("kind", [np.int64, np.int32, np.int8, np.uint8, np.float64])
def test_numpy_grades_are_grades(kind) -> None:
    gold = {"q1": {"d1": kind(2)}, "q2": {"d4": kind(1)}}
    result = goldmine.evaluate(gold, RUN, metrics="mrr")
    assert result.mean["mrr"] == pytest.approx((1 + 1 / 2) / 2)


def test_grades_from_an_array_zipped_with_ids() -> None:
    labels = np.array([2, 0])
    gold = {"q1": dict(zip(["d1", "d2"], labels, strict=True)), "q2": {"d4": 1}}
    assert goldmine.evaluate(gold, RUN, metrics="mrr").mean["mrr"] == pytest.approx(0.75)


@pytest.mark.parametrize(
    "frame",
    [
        pl.DataFrame({"qid": ["q1", "q1"], "docid": ["d1", "d2"], "rel": [1, None]}),
        pd.DataFrame({"qid": ["q1", "q1"], "docid": ["d1", "d2"], "rel": [1.0, float("nan")]}),
        pl.DataFrame({"qid": ["q1", None], "docid": ["d1", "d2"], "rel": [1, 1]}),
        pl.DataFrame({"qid": ["q1", "q1"], "docid": ["d1", None], "rel": [1, 1]}),
    ],
)
def test_a_missing_value_in_a_gold_frame_is_an_input_error(frame) -> None:
    with pytest.raises(InputError, match="missing"):
        goldmine.evaluate(frame, RUN)


def test_a_judgment_given_twice_with_two_grades_in_a_frame_is_refused() -> None:
    """As in a qrels file: never a silent choice of the last grade."""
    frame = pd.DataFrame({"qid": ["q1", "q1", "q2"], "docid": ["d1", "d1", "d4"], "rel": [2, 0, 1]})
    with pytest.raises(InputError, match=r"d1.*twice.*rows 1 and 2"):
        goldmine.evaluate(frame, RUN)
    same = pd.DataFrame({"qid": ["q1", "q1", "q2"], "docid": ["d1", "d1", "d4"], "rel": [2, 2, 1]})
    assert goldmine.evaluate(same, RUN, metrics="mrr").mean["mrr"] == pytest.approx(0.75)


def test_ranx_qrels_and_run_objects_are_read() -> None:
    ranx = pytest.importorskip("ranx")
    qrels = ranx.Qrels({"q1": {"d1": 2}, "q2": {"d4": 1}})
    run = ranx.Run(RUN)
    got = goldmine.evaluate(qrels, run, metrics=["mrr", "ndcg@10"]).mean
    assert got == goldmine.evaluate({"q1": {"d1": 2}, "q2": {"d4": 1}}, RUN,
                                    metrics=["mrr", "ndcg@10"]).mean  # fmt: skip


def test_a_mean_is_read_by_any_spelling_the_metrics_take() -> None:
    result = goldmine.evaluate({"q1": {"d1": 2}}, RUN, metrics=["P_1", "recip_rank"])
    assert result.mean["P_1"] == result.mean["precision@1"] == 1.0
    assert result.mean["recip_rank"] == result.mean["mrr"]
    with pytest.raises(KeyError, match="was not scored"):
        result.mean["ndcg@10"]
    assert dict(result.mean) == {"precision@1": 1.0, "mrr": 1.0}
    assert result.mean.get("P_1") == 1.0 and "P_1" in result.mean and "ndcg" not in result.mean


def test_frames_named_as_ms_marco_and_trec_topics_name_them() -> None:
    gold = pd.DataFrame({"topic": ["q1", "q2"], "pid": ["d1", "d4"], "rel": [2, 1]})
    run = pd.DataFrame({"topic_id": ["q1", "q2"], "passage_id": ["d1", "d4"], "score": [1.0, 0.5]})
    assert goldmine.evaluate(gold, run, metrics="mrr").mean["mrr"] == 1.0


def test_a_run_frame_with_no_score_or_rank_names_both() -> None:
    run = pd.DataFrame({"qid": ["q1"], "docid": ["d1"], "value": [1.0]})
    with pytest.raises(InputError, match=r"no score column \(any of score, sim, similarity\)"):
        goldmine.evaluate({"q1": {"d1": 1}}, run)


def test_a_path_from_home_is_read_as_the_shell_reads_it(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / "g.qrels").write_text("q1 0 d1 2\n")
    (tmp_path / "r.trec").write_text("q1 Q0 d1 1 1.0 r\n")
    assert goldmine.evaluate("~/g.qrels", "~/r.trec", metrics="mrr").mean["mrr"] == 1.0
    with pytest.raises(goldmine.errors.NotFoundError, match=str(tmp_path)):
        goldmine.Store("~/missing.duckdb").versions()


def test_a_repeated_id_is_a_warning_in_python_and_in_json(cli, tmp_path) -> None:
    """eval.md promises a warning with the count; Evaluation.warnings and --json's were []."""
    run = {"q1": ["d1", "d1", "d2"]}
    result = goldmine.evaluate({"q1": {"d1": 1}}, run, metrics="mrr")
    assert result.warnings == ["1 repeated ids within a query counted once, at first rank"]
    (tmp_path / "g.qrels").write_text("q1 0 d1 1\n")
    (tmp_path / "r.trec").write_text("q1 Q0 d1 1 3 r\nq1 Q0 d1 2 2 r\nq1 Q0 d2 3 1 r\n")
    out = cli("eval", "run", "--gold", str(tmp_path / "g.qrels"), "--run",
              str(tmp_path / "r.trec"), "--json", "--db", str(tmp_path / "s.duckdb"))  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert (
        "1 repeated ids within a query counted once, at first rank"
        in __import__("json").loads(out.stdout)["warnings"]
    )


@pytest.mark.parametrize("grade", [True, False, np.True_])
def test_a_bool_is_no_grade(grade) -> None:
    with pytest.raises(InputError, match="a grade is an integer"):
        goldmine.evaluate({"q1": {"d1": grade}}, RUN)


@pytest.mark.parametrize(
    "ranked",
    [["d1", None], [None, None, "d1"], [("d1", 0.9), (None, 0.5)], {"d1": 0.9, None: 0.5}],
)
def test_a_none_among_a_querys_results_is_no_id(ranked) -> None:
    """A retriever's miss (None) was the doc id "None", and several were "repeated ids": the
    CLI's --retriever refuses it, and so does a run given in Python, naming the query."""
    with pytest.raises(InputError, match=r"run: query 'q1': .*None.* not an id"):
        goldmine.evaluate({"q1": {"None": 1, "d1": 1}}, {"q1": ranked}, metrics="mrr")


@pytest.mark.parametrize("column", ["qid", "docid"])
def test_a_run_frame_row_missing_its_query_or_doc_is_refused(column) -> None:
    """A null doc was ranked as a result, a null query crashed matching with AttributeError."""
    run = pl.DataFrame({"qid": ["q1", "q1"], "docid": ["d2", "d1"], "score": [2.0, 1.0]})
    run = run.with_columns(pl.when(pl.int_range(2) == 0).then(None).otherwise(pl.col(column))
                           .alias(column))  # fmt: skip
    with pytest.raises(InputError, match=f"run: row 1 of the frame is missing its '{column}'"):
        goldmine.evaluate({"q1": {"d1": 1}}, run, metrics="mrr")


@pytest.mark.parametrize("make", [pd.DataFrame, pl.DataFrame])
def test_a_fractional_grade_in_a_frame_is_refused_as_in_a_dict(make) -> None:
    """A frame's 1.7 was cast to 1 without a word; a dict's, and a qrels file's, is refused."""
    frame = make({"query_id": ["q1", "q1"], "doc_id": ["d2", "d1"], "relevance": [2.0, 1.7]})
    with pytest.raises(InputError, match=r"query 'q1', doc 'd1': a grade is an integer, got 1.7"):
        goldmine.evaluate(frame, RUN)
    whole = make({"query_id": ["q1", "q2"], "doc_id": ["d1", "d4"], "relevance": [2.0, 1.0]})
    assert goldmine.evaluate(whole, RUN, metrics="mrr").mean["mrr"] == pytest.approx(0.75)


def test_a_missing_run_file_is_an_input_error_as_a_missing_gold_file_is(tmp_path) -> None:
    """The run's path went to os.stat first: a bare FileNotFoundError, not goldmine's error."""
    with pytest.raises(InputError, match="nope.qrels: no such file or folder"):
        goldmine.evaluate(tmp_path / "nope.qrels", RUN)
    with pytest.raises(InputError, match="nope.trec: no such file or folder"):
        goldmine.evaluate({"q1": {"d1": 1}}, tmp_path / "nope.trec")
    with pytest.raises(InputError, match="nope.trec: no such file or folder"):
        goldmine.compare({"q1": {"d1": 1}}, RUN, str(tmp_path / "nope.trec"))


def test_a_wrong_argument_to_evaluate_or_compare_says_which() -> None:
    """Each raised from deep inside: a bare KeyError, zip's ValueError, 'int' object is not
    iterable, a TypeError from gold.py's comparison of grades."""
    gold = {f"q{i}": {f"d{i}": 1} for i in range(10)}
    run = {q: list(docs) for q, docs in gold.items()}
    compared = goldmine.compare(gold, run, run, metrics="mrr", permutations=100, bootstrap=100)
    with pytest.raises(KeyError, match="'ndcg@10' was not compared; the metrics are mrr"):
        compared.metric("ndcg@10")
    with pytest.raises(InputError, match=r"labels: two, one per run, not \('x',\)"):
        goldmine.compare(gold, run, run, metrics="mrr", labels=("x",))
    with pytest.raises(InputError, match="metrics: a name or a list of names, not 5"):
        goldmine.evaluate(gold, run, metrics=5)
    with pytest.raises(InputError, match="rel_level: a whole grade, not '2'"):
        goldmine.evaluate(gold, run, metrics="mrr", rel_level="2")


def test_an_id_given_twice_in_pairs_is_a_warning_as_in_a_list() -> None:
    pairs = goldmine.evaluate({"q1": {"d1": 1}}, {"q1": [("d2", 0.9), ("d2", 0.5), ("d1", 0.4)]},
                              metrics="mrr")  # fmt: skip
    assert pairs.mean["mrr"] == 0.5
    assert pairs.warnings == ["1 repeated ids within a query counted once, at first rank"]


def test_pairs_are_taken_in_their_order_as_a_run_file_and_a_retriever_take_them(tmp_path) -> None:
    """A vector store's ``(id, distance)`` pairs come nearest first, the distance growing: they
    were ranked by score, so the nearest hit went last and the run scored its worst. Ties were
    broken by id, not as the retriever ranked them. A list is taken in its order (DESIGN's
    "a run given as a list is taken in its order"), as a JSON run file of the same pairs and
    ``eval run --retriever`` take it; a ``{doc: score}`` dict is ranked by score."""
    gold = {"q1": {"d1": 1}, "q2": {"a": 1}}
    pairs = {"q1": [("d1", 0.12), ("d2", 0.40), ("d3", 0.95)],  # distances, nearest first
             "q2": [("a", 0.5), ("b", 0.5)]}  # a tie the retriever ranked a first  # fmt: skip
    assert goldmine.evaluate(gold, pairs, metrics="mrr").mean == {"mrr": 1.0}
    path = tmp_path / "run.jsonl"
    path.write_text("".join(
        json.dumps({"query_id": q, "results": [list(p) for p in ranked]}) + "\n"
        for q, ranked in pairs.items()
    ))  # fmt: skip
    assert goldmine.evaluate(gold, path, metrics="mrr").mean == {"mrr": 1.0}
    ranked_by_score = {q: dict(ranked) for q, ranked in pairs.items()}
    assert goldmine.evaluate(gold, ranked_by_score, metrics="mrr").mean == {
        "mrr": pytest.approx((1 / 3 + 1 / 2) / 2)
    }


# A chunk id 184 reaches a notebook as 184, "184" or 184.0: pandas holds an id column with a gap
# as floats, and numpy arrays of ids are floats after any arithmetic. 184.0 printed "184.0",
# matched no "184" in the other side, and every query scored 0 without a word.
FLOAT_GOLD = {"q1": {"184": 1}, "q2": {"7": 2}}
FLOAT_RUNS = {
    "a list": {"q1": [3.0, 184.0], "q2": [7.0]},
    "an array": {"q1": np.array([3.0, 184.0]), "q2": np.array([7.0])},
    "pairs": {"q1": [(3.0, 0.9), (184.0, 0.8)], "q2": [(np.float32(7), 0.5)]},
    "a dict": {"q1": {3.0: 0.9, 184.0: 0.8}, "q2": {np.float64(7): 0.5}},
    "a pandas frame": pd.DataFrame(
        {"query_id": ["q1", "q1", "q2"], "doc_id": [3.0, 184.0, 7.0], "score": [0.9, 0.8, 0.5]}
    ),
    "a polars frame": pl.DataFrame(
        {"query_id": ["q1", "q1", "q2"], "doc_id": [3.0, 184.0, 7.0], "score": [0.9, 0.8, 0.5]}
    ),
}


@pytest.mark.parametrize("shape", list(FLOAT_RUNS))
def test_a_whole_float_id_in_a_run_is_the_integer_id(shape) -> None:
    result = goldmine.evaluate(FLOAT_GOLD, FLOAT_RUNS[shape], metrics=["recall@1", "mrr"])
    assert result.mean == {"recall@1": 0.5, "mrr": 0.75}


@pytest.mark.parametrize(
    "gold, run",
    [
        ({"q1": {184.0: 1}, "q2": {np.float64(7): 2}}, {"q1": ["3", "184"], "q2": ["7"]}),
        ({"q1": np.array([184.0]), "q2": [7.0]}, {"q1": ["3", "184"], "q2": ["7"]}),
        ({1.0: {"184": 1}, 2.0: {"7": 1}}, {"1": ["3", "184"], 2: ["7"]}),
        (
            pd.DataFrame({"query_id": ["q1", "q2"], "doc_id": [184.0, 7.0], "relevance": [1, 2]}),
            {"q1": ["3", "184"], "q2": ["7"]},
        ),
        (
            pd.DataFrame({"query_id": [1.0, 2.0], "doc_id": ["184", "7"], "relevance": [1, 2]}),
            {"1": ["3", "184"], "2": ["7"]},
        ),
    ],
)
def test_a_whole_float_id_in_the_gold_is_the_integer_id(gold, run) -> None:
    assert goldmine.evaluate(gold, run, metrics="mrr").mean["mrr"] == 0.75


@pytest.mark.parametrize(
    "gold, run",
    [
        (FLOAT_GOLD, {"q1": [184.5]}),
        (FLOAT_GOLD, {"q1": [("x", 0.9), (184.5, 0.8)]}),
        ({"q1": {184.5: 1}}, {"q1": ["184"]}),
        (FLOAT_GOLD, pl.DataFrame({"query_id": ["q1"], "doc_id": [184.5], "score": [1.0]})),
        (pd.DataFrame({"qid": ["q1"], "docno": [184.5], "rel": [1]}), {"q1": ["184"]}),
    ],
)
def test_a_fractional_float_id_is_refused_naming_it(gold, run) -> None:
    with pytest.raises(InputError, match=r"184\.5.*(text or a whole number|integer)"):
        goldmine.evaluate(gold, run, metrics="mrr")


def test_a_2d_array_of_id_score_rows_is_pairs() -> None:
    run = {"q1": np.array([[3, 0.9], [184, 0.8]]), "q2": np.array([[7, 0.5]])}
    assert goldmine.evaluate(FLOAT_GOLD, run, metrics="mrr").mean["mrr"] == 0.75


@pytest.mark.parametrize(
    "run, says",
    [
        (pd.Series(["184"], name="doc_id"), "not Series"),
        (pl.Series("doc_id", ["184"]), "not Series"),
        (
            pl.DataFrame({"query_id": ["q1"], "doc_id": [["3", "184"]], "score": [1.0]}),
            r"column 'doc_id' holds List.*explode",
        ),
        ({"q1": np.array([["184", "x"]])}, r"expected \(id, score\) pairs or ids"),
    ],
)
def test_a_series_a_column_of_lists_or_rows_of_text_are_named(run, says) -> None:
    with pytest.raises(InputError, match=says):
        goldmine.evaluate(FLOAT_GOLD, run, metrics="mrr")


# Settings a notebook passes as text or NaN: "0.5" was "'<' not supported between instances of
# 'float' and 'str'" from the scoring, seed=1.5 numpy's SeedSequence error, and abstain_below=nan
# (as --abstain-below nan) abstained on nothing without a word.
@pytest.mark.parametrize("value", ["0.5", "x", float("nan"), float("inf"), True, [1]])
def test_abstain_below_is_a_number(value) -> None:
    with pytest.raises(InputError, match=r"abstain_below.*: a number"):
        goldmine.evaluate({"q1": {"d1": 1}, "q2": {}}, RUN, metrics="mrr", abstain_below=value)


@pytest.mark.parametrize(
    "setting, says",
    [
        ({"permutations": 2.5}, "permutations: a whole number"),
        ({"bootstrap": "10"}, "bootstrap: a whole number"),
        ({"seed": 1.5}, "seed: a whole number"),
        ({"seed": "x"}, "seed: a whole number"),
        ({"alpha": "0.05"}, "alpha: a number"),
    ],
)
def test_compare_settings_are_checked_and_named(setting, says) -> None:
    gold = {f"q{i}": {"d1": 1} for i in range(5)}
    with pytest.raises(InputError, match=says):
        goldmine.compare(gold, RUN, RUN, metrics="mrr", **setting)


def test_abstain_below_nan_on_the_command_line_is_refused(cli, tmp_path) -> None:
    (tmp_path / "g.qrels").write_text("q1 0 d1 1\nq2 0 d2 0\n")
    (tmp_path / "r.trec").write_text("q1 Q0 d1 1 3 r\nq2 Q0 d2 1 2 r\n")
    out = cli("eval", "run", "--gold", str(tmp_path / "g.qrels"), "--run", str(tmp_path / "r.trec"),
              "--abstain-below", "nan", "--no-store")  # fmt: skip
    assert out.returncode == 2, out.stdout
    assert "abstain" in out.stderr and "Traceback" not in out.stderr


# A retriever as a notebook holds it: a function (or an async one) of a query's text and k, as
# `eval run --retriever module:function` takes it. evaluate() refused it ("not function").
TEXT_GOLD = [
    {"query_id": "q1", "query": "refund damaged item", "relevant": ["policy-14"]},
    {"query_id": "q2", "query": "expense deadline", "relevant": ["finance-3"]},
]
HITS = {"refund damaged item": ["policy-14", "policy-2"], "expense deadline": ["x", "finance-3"]}


@pytest.fixture
def text_gold(tmp_path):
    path = tmp_path / "gold.jsonl"
    path.write_text("".join(json.dumps(g) + "\n" for g in TEXT_GOLD))
    return path


def search(query: str, k: int) -> list[str]:
    return HITS[query][:k]


async def search_async(query: str, k: int) -> list[tuple[str, float]]:
    return [(doc, 1 / (i + 1)) for i, doc in enumerate(HITS[query][:k])]


@pytest.mark.parametrize("retriever", [search, search_async, lambda q, k: iter(HITS[q][:k])])
def test_a_retriever_function_is_scored_as_eval_run_scores_it(text_gold, retriever) -> None:
    result = goldmine.evaluate(text_gold, retriever, metrics="mrr")
    assert result.mean["mrr"] == 0.75 and result.warnings == []


def test_k_is_what_the_retriever_is_asked_for(text_gold) -> None:
    asked = []
    goldmine.evaluate(text_gold, lambda q, k: asked.append(k) or HITS[q][:k], metrics="mrr", k=1)
    assert asked == [1, 1]
    asked.clear()
    goldmine.evaluate(text_gold, lambda q, k: asked.append(k) or HITS[q][:k], metrics="ndcg@100")
    assert asked == [100, 100]  # the CLI's default: 50, or the largest cut-off


def test_an_async_retriever_runs_inside_a_notebooks_event_loop(text_gold) -> None:
    """Jupyter runs an event loop; a second one in its thread is a RuntimeError."""
    import asyncio

    async def cell():
        return goldmine.evaluate(text_gold, search_async, metrics="mrr")

    assert asyncio.run(cell()).mean["mrr"] == 0.75


def test_a_retriever_failing_is_told(text_gold) -> None:
    def flaky(query, k):
        if query == "expense deadline":
            raise TimeoutError("index busy")
        return HITS[query][:k]

    result = goldmine.evaluate(text_gold, flaky, metrics="mrr")
    assert result.mean["mrr"] == 0.5
    assert result.to_dict()["errors"] == {"q2": "TimeoutError: index busy"}
    assert any("1 query failed" in w and "index busy" in w for w in result.warnings)
    with pytest.raises(goldmine.GoldmineError, match="failed on every query"):
        goldmine.evaluate(text_gold, lambda q, k: 1 / 0, metrics="mrr")


def test_a_retriever_needs_the_queries_texts() -> None:
    with pytest.raises(InputError, match="no query text"):
        goldmine.evaluate({"q1": {"d1": 1}}, search, metrics="mrr")
    with pytest.raises(InputError, match="k: a whole number"):
        goldmine.evaluate({"q1": {"d1": 1}}, search, metrics="mrr", k="5")


def test_two_retrievers_are_compared_under_their_names(text_gold) -> None:
    compared = goldmine.compare(text_gold, search, search_async, metrics="mrr")
    assert (compared.comparison.label_a, compared.comparison.label_b) == ("search", "search_async")
    lambdas = goldmine.compare(text_gold, lambda q, k: HITS[q], lambda q, k: HITS[q], "mrr")
    assert (lambdas.comparison.label_a, lambdas.comparison.label_b) == ("A", "B")


# Redis (and other clients left at their default) return ids as bytes: b"184" read "b'184'",
# matched nothing and scored 0.
@pytest.mark.parametrize(
    "run",
    [
        {"q1": [b"3", b"184"], "q2": [b"7"]},
        {"q1": [(b"3", 0.9), (b"184", 0.8)], "q2": [(b"7", 0.5)]},
        {b"q1": {b"3": 0.9, b"184": 0.8}, b"q2": {b"7": 0.5}},
    ],
)
def test_an_id_given_as_bytes_is_its_text(run) -> None:
    assert goldmine.evaluate(FLOAT_GOLD, run, metrics="mrr").mean["mrr"] == 0.75


def test_a_retriever_returning_bytes_ids_is_read(text_gold) -> None:
    result = goldmine.evaluate(text_gold, lambda q, k: [d.encode() for d in HITS[q]], "mrr")
    assert result.mean["mrr"] == 0.75


def test_an_id_of_bytes_that_are_no_text_is_refused() -> None:
    with pytest.raises(InputError, match=r"b'\\xff'.*UTF-8"):
        goldmine.evaluate(FLOAT_GOLD, {"q1": [b"\xff"]}, metrics="mrr")


def test_a_gold_set_with_no_answerable_query_says_its_means_are_over_none(cli, tmp_path) -> None:
    """The report says "no average to give"; Python's mean and --json's metrics read 0.0 with
    no warning, as a retriever that finds nothing would."""
    result = goldmine.evaluate({"q1": {"d1": 0}, "q2": {}}, {"q1": ["d1"]}, metrics="mrr")
    said = (
        "no answerable query (none has a doc graded relevant at rel_level 1): the means are over "
        "no query"
    )
    assert result.n_queries == 0 and said in result.warnings
    (tmp_path / "g.qrels").write_text("q1 0 d1 0\n")
    (tmp_path / "r.trec").write_text("q1 Q0 d1 1 3 r\n")
    out = cli("eval", "run", "--gold", str(tmp_path / "g.qrels"), "--run", str(tmp_path / "r.trec"),
              "--json", "--no-store", "-m", "mrr")  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert said in json.loads(out.stdout)["warnings"]


def test_metrics_given_as_a_generator_are_read() -> None:
    names = (f"{m}@{k}" for m in ("recall", "ndcg") for k in (1, 10))
    result = goldmine.evaluate({"q1": {"d1": 1}}, {"q1": ["d1"]}, metrics=names)
    assert result.metrics == ["recall@1", "recall@10", "ndcg@1", "ndcg@10"]


def test_a_retriever_of_one_parameter_is_told_how_it_is_called(text_gold) -> None:
    """Each query failed with "<lambda>() takes 1 positional argument but 2 were given"."""
    with pytest.raises(InputError, match=r"search_one is called as f\(query, k\).*\(query\)"):

        def search_one(query):
            return HITS[query]

        goldmine.evaluate(text_gold, search_one, metrics="mrr")
    default_k = goldmine.evaluate(text_gold, lambda query, k=3: HITS[query][:k], metrics="mrr")
    assert default_k.mean["mrr"] == 0.75


def test_compare_and_the_gate_ask_two_retrievers_for_k(text_gold) -> None:
    asked = []

    def top(query, k):
        asked.append(k)
        return HITS[query][:k]

    goldmine.compare(text_gold, top, search, metrics="mrr", k=1)
    assert asked == [1, 1]
    from goldmine.testing import assert_no_regression

    assert_no_regression(text_gold, search, baseline=top, metrics="mrr", k=2)
    assert asked[2:] == [2, 2]


@pytest.mark.parametrize(
    "run",
    [{}, pl.DataFrame(schema={"query_id": pl.String, "doc_id": pl.String, "score": pl.Float64})],
)
def test_an_empty_run_is_told_as_an_empty_run_file_is(run) -> None:
    """It read "the run's query ids match none of the gold's 1 queries: run ids look like
    (none)", as if the ids were of another scheme."""
    with pytest.raises(InputError, match=r"^the run is empty: it ranks nothing for any query$"):
        goldmine.evaluate({"q1": {"d1": 1}}, run, metrics="mrr")
    with pytest.raises(InputError, match=r"none of the gold's 1 query: "):
        goldmine.evaluate({"q1": {"d1": 1}}, {"x": ["d1"]}, metrics="mrr")


def test_a_pandas_series_of_scores_indexed_by_doc_is_doc_score() -> None:
    """``{q: g.set_index("docno")["score"] for q, g in df.groupby("qid")}``: its values were
    read as ids ("id 0.9 is no whole number")."""
    df = pd.DataFrame(
        {"qid": ["q1", "q1", "q2"], "docno": ["3", "184", "7"], "score": [0.9, 0.8, 0.5]}
    )
    run = {q: g.set_index("docno")["score"] for q, g in df.groupby("qid")}
    assert goldmine.evaluate(FLOAT_GOLD, run, metrics="mrr").mean["mrr"] == 0.75
    ids = {q: g["docno"] for q, g in df.groupby("qid")}  # a column of ids: a ranked list
    assert goldmine.evaluate(FLOAT_GOLD, ids, metrics="mrr").mean["mrr"] == 0.75


def test_a_nan_id_is_named_a_missing_id() -> None:
    with pytest.raises(InputError, match=r"query 'q1': an id is missing \(NaN\)"):
        goldmine.evaluate(FLOAT_GOLD, {"q1": pd.Series([184.0, float("nan")])}, metrics="mrr")


def test_k_is_at_least_one_and_only_for_a_retriever(text_gold) -> None:
    with pytest.raises(InputError, match="k: at least 1"):
        goldmine.evaluate(text_gold, search, metrics="mrr", k=0)
    with pytest.raises(InputError, match=r"k is what a retriever is asked for.*recall@5"):
        goldmine.evaluate(text_gold, {"q1": ["policy-14"]}, metrics="mrr", k=5)
    mixed = goldmine.compare(text_gold, {"q1": ["policy-14"], "q2": ["finance-3"]}, search,
                             metrics="mrr", k=1)  # fmt: skip
    assert mixed.b.mean["mrr"] == 0.5  # asked for 1: q2's answer at rank 2 is cut


# A Python retriever's hits as objects: a dataclass of its own, a named tuple, a client's
# model (Qdrant's ScoredPoint and LangChain's Document are pydantic models: model_dump()).
# Each was "a result must be an id, (id, score) or {id, score}".
@dataclasses.dataclass
class Hit:
    chunk_id: str
    score: float
    text: str = ""


Row = collections.namedtuple("Row", "doc_id score text")


class ScoredPoint:  # the shape of qdrant_client.models.ScoredPoint, with its model_dump()
    def __init__(self, id, score, payload):
        self.id, self.score, self.payload = id, score, payload

    def model_dump(self):
        return {"id": self.id, "version": 0, "score": self.score, "payload": self.payload}


@pytest.mark.parametrize(
    "make",
    [
        lambda doc, rank: Hit(doc, 1 / rank),
        lambda doc, rank: Row(doc, 1 / rank, "text"),
        lambda doc, rank: ScoredPoint(rank * 1000, 1 / rank, {"chunk_id": doc}),
    ],
)
def test_a_retriever_returning_hit_objects_is_read(text_gold, make) -> None:
    def search_objects(query, k):
        return [make(doc, rank) for rank, doc in enumerate(HITS[query][:k], start=1)]

    assert goldmine.evaluate(text_gold, search_objects, metrics="mrr").mean["mrr"] == 0.75


def test_a_gold_frame_with_the_query_text_serves_a_retriever() -> None:
    """A judgments frame with a ``query`` column (BEIR's queries joined to its qrels) kept no
    text, and a retriever was refused with "the gold set has no query text"."""
    gold = pd.DataFrame(
        {
            "query_id": ["q1", "q1", "q2"],
            "query": ["refund damaged item", "refund damaged item", "expense deadline"],
            "doc_id": ["policy-14", "policy-2", "finance-3"],
            "relevance": [1, 0, 1],
        }
    )
    assert goldmine.evaluate(gold, search, metrics="mrr").mean["mrr"] == 0.75
    by_text = {"refund damaged item": ["policy-14"], "expense deadline": ["x", "finance-3"]}
    assert goldmine.evaluate(gold, by_text, metrics="mrr").mean["mrr"] == 0.75


def test_a_retriever_answering_doc_to_score_is_ranked_by_score(text_gold) -> None:
    """``{doc: score}``, a pytrec_eval run's row, was "the response is an object without
    'results', 'hits', 'matches' or another list of results; pass --json-path"."""

    def scored(query, k):
        return {doc: float(len(HITS[query]) - rank) for rank, doc in enumerate(HITS[query][:k])}

    assert goldmine.evaluate(text_gold, scored, metrics="mrr").mean["mrr"] == 0.75

    def returns_none(query, k):
        return None

    with pytest.raises(goldmine.GoldmineError, match=r"returned None, not a list of ids"):
        goldmine.evaluate(text_gold, returns_none, metrics="mrr")
