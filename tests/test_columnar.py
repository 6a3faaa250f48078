"""The columnar engine gives the Python engine's numbers, on messy runs too."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from goldmine.eval.scoring import evaluate, evaluate_run_file
from goldmine.metrics import parse_metrics
from goldmine.readers import read_gold, read_run

METRICS = parse_metrics(
    "recall@1,recall@5,frac_recall@10,mrr,mrr@3,ndcg,ndcg@5,precision@5,map,map@10,r_precision"
)


def messy_files(tmp_path: Path, seed: int, sep: str = " ") -> tuple[Path, Path]:
    """Unsorted lines, score ties, repeated ids, queries without gold and gold without run."""
    rng = random.Random(seed)
    qrels, run = [], []
    for q in range(60):
        for d in rng.sample(range(40), 6):
            qrels.append(f"q{q} 0 d{d} {rng.choice((-1, 0, 1, 2, 3))}")
        if q % 7 == 0:
            continue  # gold query missing from the run
        for d in rng.choices(range(40), k=25):  # choices: repeats on purpose
            run.append(
                sep.join([f"q{q}", "Q0", f"d{d}", "0", f"{rng.choice((1, 2, 2.5, 3))}", "t"])
            )
    run += [sep.join(["extra", "Q0", "d1", "1", "1.0", "t"])]
    rng.shuffle(run)
    qrels_path = tmp_path / "qrels.txt"
    run_path = tmp_path / "run.trec"
    qrels_path.write_text("\n".join(qrels) + "\n")
    run_path.write_text("\n".join(run) + "\n")
    return qrels_path, run_path


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("sep", [" ", "\t"])
@pytest.mark.parametrize("rel_level", [1, 2])
def test_engines_agree(tmp_path: Path, seed: int, sep: str, rel_level: int) -> None:
    qrels, run_path = messy_files(tmp_path, seed, sep)
    gold = read_gold(qrels)
    python = evaluate(gold, read_run(run_path), METRICS, rel_level)
    columnar, fmt = evaluate_run_file(gold, run_path, METRICS, rel_level, force=True)
    assert fmt == "trec"
    assert columnar.n_queries == python.n_queries
    assert columnar.missing == python.missing
    assert columnar.ignored == python.ignored == ["extra"]
    assert columnar.n_duplicates == python.n_duplicates > 0
    assert [r.query_id for r in columnar.no_answer] == [r.query_id for r in python.no_answer]
    for qid, scores in python.per_query.items():
        for name, value in scores.items():
            assert columnar.per_query[qid][name] == pytest.approx(value, abs=1e-12), (qid, name)
    for name, value in python.summary.items():
        assert columnar.summary[name] == pytest.approx(value, abs=1e-12)


def test_sorted_file_skips_the_sort_and_agrees(tmp_path: Path) -> None:
    from goldmine import frames

    qrels, run_path = messy_files(tmp_path, 5)
    run = read_run(run_path)
    lines = [
        f"{q} Q0 {d} {i} {s!r} t"
        for q, docs in run.results.items()
        for i, (d, s) in enumerate(zip(docs, run.scores[q], strict=True), start=1)
    ]
    sorted_path = tmp_path / "sorted.trec"
    sorted_path.write_text("\n".join(lines) + "\n")
    frame = frames._read_trec_frame(sorted_path)
    assert frame is not None and frames._order(frame) is frame  # no sort: the same frame
    gold = read_gold(qrels)
    a = evaluate(gold, run, METRICS)
    b, _ = evaluate_run_file(gold, sorted_path, METRICS, force=True)
    assert b.summary == pytest.approx(a.summary)


def test_contiguous_file_with_one_query_out_of_order(tmp_path: Path) -> None:
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("a 0 x 1\nb 0 y 1\nc 0 z 1\n")
    run = tmp_path / "run.trec"
    # Query b's lines are in ascending score order; a and c are already in order.
    run.write_text(
        "a Q0 x 1 3 t\na Q0 w 2 2 t\n"
        "b Q0 w 1 1 t\nb Q0 v 2 2 t\nb Q0 y 3 3 t\n"
        "c Q0 w 1 5 t\nc Q0 z 2 5 t\n"
    )
    gold = read_gold(qrels)
    result, _ = evaluate_run_file(gold, run, parse_metrics("mrr"), force=True)
    assert result.per_query == {"a": {"mrr": 1.0}, "b": {"mrr": 1.0}, "c": {"mrr": 1.0}}
    assert result.summary == evaluate(gold, read_run(run), parse_metrics("mrr")).summary


def test_large_qrels_read_column_wise_equal_the_python_reader(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from goldmine import readers

    qrels, run_path = messy_files(tmp_path, 4)
    small = read_gold(qrels)
    monkeypatch.setattr(readers, "LARGE_FILE_BYTES", 1)
    large = read_gold(qrels)
    assert large.frame is not None and small.frame is None
    assert {q: g.judged for q, g in large.queries.items()} == {
        q: g.judged for q, g in small.queries.items()
    }
    assert large.hash == small.hash
    a, _ = evaluate_run_file(small, run_path, METRICS, force=True)
    b, _ = evaluate_run_file(large, run_path, METRICS, force=True)
    assert a.summary == b.summary
