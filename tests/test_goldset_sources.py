"""Any two judgment sources compared: ``gold agreement --between A B`` on a real store.

The sources' grades are written straight into their tables (gold_ratings, gold_labels,
gold_model_labels, gold_source_grades) the way the commands that own them write them; every
figure is held to scikit-learn's ``cohen_kappa_score`` or scipy's ``kendalltau`` on the same units.
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

import numpy as np
import pytest
import test_clickdraft
from scipy.stats import kendalltau
from sklearn.metrics import cohen_kappa_score

from goldmine.goldset import kappa
from goldmine.store import open_store, transaction

from helpers import build, gold, qid

AT = datetime(2026, 12, 1, 9, 0)
store = test_clickdraft.store  # the fixture: two items and the click sessions of one


def _items(db: Path, n: int, per_query: int = 2) -> list[tuple[str, str]]:
    """``n`` items q0.. with ``per_query`` candidates each (c<q>_<j>, drafted by bm25)."""
    build(db)
    units = [(f"q{q}", f"c{q}_{j}") for q in range(n) for j in range(per_query)]
    with open_store(db) as con, transaction(con):
        con.execute(
            "INSERT INTO gold_items (query_id, position, query, norm_query, status, origin,"
            " created_at, updated_at) SELECT 'q' || i, i, 'query ' || i, 'query ' || i,"
            " 'drafted', 'test', ?, ? FROM range(?) t(i)",
            [AT, AT, n],
        )
        con.executemany(
            "INSERT INTO gold_labels (query_id, chunk_id, kind, rank, source, ts)"
            " VALUES (?, ?, 'draft', ?, 'bm25', ?)",
            [(q, c, int(c.rsplit("_", 1)[1]) + 1, AT) for q, c in units],
        )
    return units


def _rate(db: Path, rater: str, grades: dict[tuple[str, str], int], no_answer=()) -> None:
    with open_store(db) as con, transaction(con):
        con.executemany(
            "INSERT INTO gold_ratings VALUES (?, ?, ?, ?, false, ?)",
            [(q, c, rater, g, AT) for (q, c), g in grades.items()],
        )
        if no_answer:
            con.executemany(
                "INSERT INTO gold_ratings VALUES (?, NULL, ?, 0, true, ?)",
                [(q, rater, AT) for q in no_answer],
            )


def _label(db: Path, who: str, grades: dict[tuple[str, str], int]) -> None:
    with open_store(db) as con, transaction(con):
        con.executemany("DELETE FROM gold_labels WHERE query_id = ? AND chunk_id = ?", list(grades))
        con.executemany(
            "INSERT INTO gold_labels (query_id, chunk_id, kind, grade, source, who, ts)"
            " VALUES (?, ?, 'label', ?, 'review', ?, ?)",
            [(q, c, g, who, AT) for (q, c), g in grades.items()],
        )


def _import(db: Path, source: str, grades: dict[tuple[str, str], int], raw=None) -> None:
    """Rows as ``gold import --as-source`` stores them: the grade after the grade map, and the
    file's own grade beside it."""
    raw = raw or {k: str(g) for k, g in grades.items()}
    with open_store(db) as con, transaction(con):
        con.executemany(
            "INSERT INTO gold_source_grades VALUES (?, ?, ?, ?, ?, true, 'qrels.txt', ?, ?)",
            [(source, q, c, g, raw[(q, c)], i + 1, AT)
             for i, ((q, c), g) in enumerate(grades.items())],
        )  # fmt: skip


def _judge(db: Path, model: str, grades: dict[tuple[str, str], int]) -> None:
    with open_store(db) as con, transaction(con):
        con.executemany(
            "INSERT INTO gold_model_labels VALUES (?, ?, ?, 'why', 'http://127.0.0.1', ?, 'v1',"
            " 'qh', 'th', NULL, ?)",
            [(q, c, g, model, AT) for (q, c), g in grades.items()],
        )


def _between(cli, db: Path, *args: str, ok: bool = True):
    return gold(cli, db, "agreement", "--between", *args, ok=ok)


def _grades(units, values) -> dict[tuple[str, str], int]:
    return dict(zip(units, values, strict=True))


# --- issue 27 item 3: no-answer agreement counts ------------------------------------------------


def test_two_raters_who_both_said_no_answer_agree_on_every_shown_candidate(cli, db_path) -> None:
    units = _items(db_path, 6)
    # Both said "no answer" on q0..q4; on q5 ana graded 2, 0 and ben 1, 0.
    five = [f"q{i}" for i in range(5)]
    _rate(db_path, "ana", {("q5", "c5_0"): 2, ("q5", "c5_1"): 0}, no_answer=five)
    _rate(db_path, "ben", {("q5", "c5_0"): 1, ("q5", "c5_1"): 0}, no_answer=five)
    a = [2 if u == ("q5", "c5_0") else 0 for u in units]
    b = [1 if u == ("q5", "c5_0") else 0 for u in units]

    (pair,) = json.loads(gold(cli, db_path, "agreement", "--json").stdout)["pairs"]
    assert pair["n_items"] == 6 and pair["n_pairs"] == 12
    assert pair["observed_agreement"] == pytest.approx(11 / 12)
    assert pair["kappa_weighted"] == pytest.approx(cohen_kappa_score(a, b, weights="linear"))
    assert pair["kappa_relevant"] == pytest.approx(1.0)
    # The query-level decision: five "no answer" on both sides, one answerable on both.
    assert pair["answerable"]["n"] == 6 and pair["answerable"]["kappa"] == pytest.approx(1.0)
    text = gold(cli, db_path, "agreement").stdout
    assert "6 items, 12 judged chunks" in text
    assert "answerable or not: 6 queries" in text and "n=6: too few to say" in text
    assert "0.00" not in text.split("answerable")[1]


def test_a_figure_on_a_handful_of_units_says_so(cli, db_path) -> None:
    _items(db_path, 2)
    _rate(db_path, "ana", {("q0", "c0_0"): 2, ("q0", "c0_1"): 0, ("q1", "c1_0"): 1})
    _rate(db_path, "ben", {("q0", "c0_0"): 2, ("q0", "c0_1"): 1, ("q1", "c1_0"): 1})
    text = gold(cli, db_path, "agreement").stdout
    assert "n=3: too few to say" in text
    (pair,) = json.loads(gold(cli, db_path, "agreement", "--json").stdout)["pairs"]
    assert pair["n_pairs"] == 3


# --- the figures, against the reference implementations ------------------------------------------


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_the_confusion_figures_equal_scikit_learn(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = 200
    q = rng.integers(0, 40, n)
    a = rng.integers(0, 3, n)
    b = np.clip(a + rng.integers(-1, 2, n), 0, 2)
    out = kappa.figures(kappa.confusions(q, a, b, 40), relevant_from=2)
    assert out["kappa_weighted"] == pytest.approx(
        cohen_kappa_score(a, b, weights="linear", labels=[0, 1, 2])
    )
    assert out["kappa_relevant"] == pytest.approx(cohen_kappa_score(a >= 2, b >= 2))
    assert out["observed_agreement"] == pytest.approx(float(np.mean(a == b)))
    low, high = out["kappa_weighted_ci95"]
    assert low < out["kappa_weighted"] < high


def test_one_category_on_both_sides_is_undefined_not_zero() -> None:
    zeros = np.zeros(12, dtype=np.int64)
    out = kappa.figures(kappa.confusions(np.arange(12) % 4, zeros, zeros, 4))
    assert out["kappa_weighted"] is None and out["observed_agreement"] == 1.0
    assert "undefined" in kappa.reading(out["kappa_weighted"], None, 12)


def _twenty(db_path: Path):
    """20 queries x 2 candidates; two hand-picked grade lists over them."""
    units = _items(db_path, 20)
    a = [2, 0, 1, 1, 0, 0, 2, 2, 1, 0] * 4
    b = [2, 0, 1, 0, 0, 1, 2, 1, 1, 0] * 4
    return units, a, b


def test_an_import_against_a_rater_equals_scikit_learn(cli, db_path) -> None:
    units, nist, ana = _twenty(db_path)
    _import(db_path, "import:nist", _grades(units, nist))
    _label(db_path, "ana", _grades(units, ana))
    out = json.loads(_between(cli, db_path, "import:nist", "rater:ana", "--json").stdout)
    assert set(out) == {
        "sources", "n_units", "n_queries", "kappa_weighted", "kappa_weighted_ci95",
        "kappa_relevant", "kappa_relevant_ci95", "observed_agreement", "confusion", "answerable",
    }  # fmt: skip
    assert out["sources"] == ["import:nist", "rater:ana"]
    assert out["n_units"] == 40 and out["n_queries"] == 20
    assert out["kappa_weighted"] == pytest.approx(
        cohen_kappa_score(nist, ana, weights="linear", labels=[0, 1, 2])
    )
    # Relevant (grade 1 or more) or not, by hand: 32 of 40 agree; nist says relevant on 24,
    # ana on 24: chance (24/40)^2 + (16/40)^2 = 0.52.
    assert out["kappa_relevant"] == pytest.approx((32 / 40 - 0.52) / (1 - 0.52))
    assert out["kappa_relevant"] == pytest.approx(
        cohen_kappa_score([g > 0 for g in nist], [g > 0 for g in ana])
    )
    assert out["observed_agreement"] == pytest.approx(28 / 40)
    assert out["confusion"]["counts"] == [[12, 4, 0], [4, 8, 0], [0, 4, 8]]
    low, high = out["kappa_weighted_ci95"]
    assert low < out["kappa_weighted"] < high
    strict = json.loads(
        _between(cli, db_path, "import:nist", "rater:ana", "--relevant-from", "2", "--json").stdout
    )
    assert strict["kappa_relevant"] == pytest.approx(
        cohen_kappa_score([g > 1 for g in nist], [g > 1 for g in ana])
    )
    text = _between(cli, db_path, "import:nist", "rater:ana").stdout
    assert "import:nist (rows) / rater:ana (columns)" in text
    assert "import:nist is the more lenient" in text  # grade 2 on 12 units, ana on 8
    assert "no better than chance" not in text.split("answerable")[0]


def test_the_judge_against_an_import(cli, db_path) -> None:
    units, model, umbrela = _twenty(db_path)
    _judge(db_path, "judge-1", _grades(units, model))
    _import(db_path, "import:umbrela", _grades(units, umbrela))
    (out,) = json.loads(_between(cli, db_path, "judge:*", "import:umbrela", "--json").stdout)
    assert out["sources"] == ["judge:judge-1", "import:umbrela"]
    assert out["kappa_weighted"] == pytest.approx(
        cohen_kappa_score(model, umbrela, weights="linear", labels=[0, 1, 2])
    )
    assert out["answerable"]["n"] == 20


def test_different_scales_are_compared_after_the_grade_map(cli, db_path) -> None:
    """One file graded 0-3 (mapped 0,1 -> 0, 2 -> 1, 3 -> 2), the other 0-1 (1 -> 2)."""
    units = _items(db_path, 10)
    raw_a = [3, 2, 1, 0, 3, 3, 2, 0, 1, 3] * 2
    raw_b = [1, 0, 0, 0, 1, 1, 1, 0, 0, 0] * 2
    map_a, map_b = {0: 0, 1: 0, 2: 1, 3: 2}, {0: 0, 1: 2}
    a = [map_a[g] for g in raw_a]
    b = [map_b[g] for g in raw_b]
    _import(db_path, "import:robust", _grades(units, a), _grades(units, [str(g) for g in raw_a]))
    _import(db_path, "import:beir", _grades(units, b), _grades(units, [str(g) for g in raw_b]))
    out = json.loads(_between(cli, db_path, "import:robust", "import:beir", "--json").stdout)
    assert out["kappa_weighted"] == pytest.approx(
        cohen_kappa_score(a, b, weights="linear", labels=[0, 1, 2])
    )
    assert out["confusion"]["counts"] == [
        [sum(x == i and y == j for x, y in zip(a, b, strict=True)) for j in range(3)]
        for i in range(3)
    ]


def test_independent_sources_are_called_no_better_than_chance(cli, db_path) -> None:
    rng = np.random.default_rng(7)
    units = _items(db_path, 30)
    _import(db_path, "import:a", _grades(units, rng.integers(0, 3, 60).tolist()))
    _import(db_path, "import:b", _grades(units, rng.integers(0, 3, 60).tolist()))
    out = json.loads(_between(cli, db_path, "import:a", "import:b", "--json").stdout)
    low, high = out["kappa_weighted_ci95"]
    assert low <= 0 <= high
    assert "no better than chance" in _between(cli, db_path, "import:a", "import:b").stdout


def test_an_unknown_source_names_the_sources_the_store_has(cli, db_path) -> None:
    units, a, b = _twenty(db_path)
    _import(db_path, "import:nist", _grades(units, a))
    _rate(db_path, "ana", _grades(units, b))
    bad = _between(cli, db_path, "import:trec", "rater:ana", ok=False)
    assert bad.returncode == 2
    (line,) = bad.stderr.strip().splitlines()
    assert line.startswith("error: no source import:trec") and "import:nist, rater:ana" in line
    odd = _between(cli, db_path, "bogus", "rater:ana", ok=False)
    assert odd.returncode == 2 and "rater:NAME" in odd.stderr


# --- system level -------------------------------------------------------------------------------


def test_runs_are_ranked_under_each_source_and_kendall_tau_equals_scipy(
    cli, db_path, tmp_path
) -> None:
    units, a, b = _twenty(db_path)
    _import(db_path, "import:nist", _grades(units, a))
    _label(db_path, "ana", _grades(units, b))
    runs = []
    for name, pick in (("first", 0), ("second", 1), ("none", None)):
        path = tmp_path / f"{name}.trec"
        lines = []
        for q in range(20):
            order = [f"c{q}_0", f"c{q}_1"] if pick == 0 else [f"c{q}_1", f"c{q}_0"]
            order = order if pick is not None else ["zz"]
            lines += [f"q{q} Q0 {c} {r} {10 - r} {name}" for r, c in enumerate(order, 1)]
        path.write_text("\n".join(lines) + "\n")
        runs += ["--runs", str(path)]
    out = json.loads(
        _between(cli, db_path, "import:nist", "rater:ana", *runs, "--metric", "ndcg@10",
                 "--json").stdout
    )  # fmt: skip
    systems = out["systems"]
    assert systems["n_runs"] == 3
    by_run = {Path(r["run"]).stem: r for r in systems["runs"]}
    assert by_run["none"]["a"] == 0 and by_run["none"]["b"] == 0
    expected = kendalltau(
        [r["a"] for r in systems["runs"]], [r["b"] for r in systems["runs"]]
    ).statistic
    assert systems["kendall_tau"] == pytest.approx(expected)
    assert systems["largest_swap"]["positions"] == 0  # nist and ana order the runs alike
    text = _between(cli, db_path, "import:nist", "rater:ana", *runs).stdout
    assert "3 runs: Kendall's tau 1.00; no run changes place" in text


# --- click drafts and the wildcard ---------------------------------------------------------------


def test_click_drafts_are_a_source_after_a_person_grades_the_chunks(cli, store) -> None:
    """A person's grade replaces the click draft's row; the draft history still holds it."""
    db_path, (X, Y) = store, (test_clickdraft.X, test_clickdraft.Y)  # noqa: N806
    drafted = cli("--db", str(db_path), "gold", "draft", "--from", "clicks")
    assert drafted.returncode == 0, drafted.stderr
    _label(db_path, "ana", {("q_reset", X): 2, ("q_reset", Y): 0})
    with open_store(db_path) as con:
        assert con.execute(
            "SELECT count(*) FROM gold_labels WHERE kind = 'draft' AND query_id = 'q_reset'"
        ).fetchall() == [(0,)]
    (out,) = json.loads(_between(cli, db_path, "clicks:*", "rater:ana", "--json").stdout)
    assert out["sources"] == ["clicks:pbm", "rater:ana"]
    # The clicks graded X 2 and Y 1; ana X 2 and Y 0.
    assert out["n_units"] == 2 and out["confusion"]["counts"] == [[0, 0, 0], [1, 0, 0], [0, 0, 1]]
    assert out["confusion"]["more_lenient"] == "clicks:pbm"
    text = _between(cli, db_path, "clicks:pbm", "rater:ana").stdout
    assert "n=2: too few to say" in text


def test_a_wildcard_compares_every_source_it_names(cli, db_path) -> None:
    units, a, b = _twenty(db_path)
    _judge(db_path, "judge-1", _grades(units, a))
    _judge(db_path, "judge-2", _grades(units, b))
    _label(db_path, "ana", _grades(units, b))
    out = json.loads(_between(cli, db_path, "judge:*", "rater:*", "--json").stdout)
    assert [r["sources"] for r in out] == [["judge:judge-1", "rater:ana"],
                                           ["judge:judge-2", "rater:ana"]]  # fmt: skip
    assert out[1]["kappa_weighted"] == pytest.approx(1.0)
    (same,) = json.loads(_between(cli, db_path, "judge:judge-1", "judge:*", "--json").stdout)
    assert same["sources"] == ["judge:judge-1", "judge:judge-2"]  # never itself


# --- after the judge runs (issue 28: "gold draft --judge llm prints ...") ------------------------


def test_the_judge_run_ends_with_its_agreement_with_people(cli, db_path) -> None:
    from fake_llm import serve

    build(db_path)
    gold(cli, db_path, "add-query", "reset password", "vpn setup", "download invoice")
    with serve() as server:
        judge = ("draft", "-k", "2", "--judge", "llm", "--base-url", server.base_url,
                 "--model", "judge-1")  # fmt: skip
        first = gold(cli, db_path, *judge)
        # Nobody has graded: what a useful measurement needs (246 candidates at kappa 0.6 and
        # chance 0.5, from Cohen's standard error; two candidates an item here).
        assert "no candidate has both the judge's grade and a person's yet" in first.stderr
        assert "at least 246 double-graded candidates (about 123 items)" in first.stderr
        with open_store(db_path) as con:
            graded = con.execute(
                "SELECT query_id, chunk_id, grade FROM gold_model_labels ORDER BY ALL"
            ).fetchall()
        _label(db_path, "ana", {(q, c): 2 - g for q, c, g in graded})
        second = gold(cli, db_path, *judge)
    assert f"the judge against rater:ana on {len(graded)} candidates both graded" in second.stderr
    assert f"(n={len(graded)}: too few to say); an interval narrower than 0.2 needs" in (
        second.stderr
    )


def test_suggestions_count_only_grades_given_where_review_showed_them(cli, db_path) -> None:
    """``gold label`` shows no suggestion: its grades are no accepted or overridden suggestion."""
    units, a, b = _twenty(db_path)
    _judge(db_path, "judge-1", _grades(units, a))
    later = datetime(2026, 12, 2, 9, 0)
    with open_store(db_path) as con, transaction(con):
        con.executemany(
            "INSERT INTO gold_labels (query_id, chunk_id, kind, grade, source, who, ts)"
            " VALUES (?, ?, 'label', ?, ?, 'ana', ?)",
            [(q, c, g, "review" if i < 10 else "label", later)
             for i, ((q, c), g) in enumerate(_grades(units, b).items())],
        )  # fmt: skip
    out = json.loads(gold(cli, db_path, "agreement", "--judge", "llm", "--json").stdout)
    shown_first = sum(x == y for x, y in zip(a[:10], b[:10], strict=True))
    assert out["suggestions"]["n"] == 10 and out["suggestions"]["accepted"] == shown_first
    text = gold(cli, db_path, "agreement", "--judge", "llm").stdout
    assert "suggestions: 10 candidates graded in review with the model's grade shown" in text
    assert "judge-1 (rows) / ana (columns)" not in text  # today's first line stays
    assert "judge-1 / ana: 20 items, 40 judged chunks; weighted kappa" in text
    # The matrix names its grades and sides, and says which side is the more lenient.
    assert "    judge-1     0     1     2" in text and "judge-1 is the more lenient" in text


def test_gold_is_the_verified_labels_and_a_stored_run_is_named_not_scored(cli, db_path) -> None:
    units, a, b = _twenty(db_path)
    _import(db_path, "import:nist", _grades(units, a))
    _label(db_path, "ana", _grades(units, b))
    with open_store(db_path) as con, transaction(con):
        # ana's items 0-9 verified; q10 verified "no answer", whose chunks are then 0 in gold.
        con.execute("DELETE FROM gold_labels WHERE query_id = 'q10'")
        con.execute(
            "UPDATE gold_items SET status = 'verified', verified_by = 'ana', verified_at = ?,"
            " no_answer = (query_id = 'q10')"
            " WHERE query_id IN (SELECT 'q' || i FROM range(11) t(i))",
            [AT],
        )
        con.execute(
            "INSERT INTO gold_labels (query_id, chunk_id, kind, rank, source, ts)"
            " SELECT 'q10', 'c10_' || i, 'draft', i + 1, 'bm25', ? FROM range(2) t(i)",
            [AT],
        )
        con.execute(
            "INSERT INTO eval_runs (run_id, created_at, label, gold_source, gold_hash,"
            " run_source, rel_level, n_queries, n_missing, n_ignored, n_no_answer, metrics)"
            " VALUES (1, ?, 'bm25-v1', 'v1', 'h', 'run.trec', 1, 1, 0, 0, 0, '{}')",
            [AT],
        )
    out = json.loads(_between(cli, db_path, "import:nist", "gold", "--json").stdout)
    assert out["n_queries"] == 11 and out["n_units"] == 22
    gold_grades = b[:20] + [0, 0]
    assert out["kappa_weighted"] == pytest.approx(
        cohen_kappa_score(a[:22], gold_grades, weights="linear", labels=[0, 1, 2])
    )
    assert out["answerable"]["both_no_answer"] == (1 if a[20] + a[21] == 0 else 0)
    stored = _between(cli, db_path, "import:nist", "gold", "--runs", "bm25-v1", ok=False)
    assert stored.returncode == 2 and "keeps only its scores" in stored.stderr


def test_sources_with_no_unit_in_common_say_so(cli, db_path) -> None:
    units = _items(db_path, 2)
    _import(db_path, "import:a", {units[0]: 2})
    _import(db_path, "import:b", {units[3]: 1})
    out = json.loads(_between(cli, db_path, "import:a", "import:b", "--json").stdout)
    assert out["n_units"] == 0 and out["kappa_weighted"] is None
    text = _between(cli, db_path, "import:a", "import:b").stdout
    assert text == "import:a / import:b: no (query, chunk) graded by both, nothing to compare\n"


def test_the_largest_swap_is_the_run_that_moves_most_places() -> None:
    from goldmine.goldset.sources import largest_swap

    rows = [{"run": "r1", "a": 0.9, "b": 0.2}, {"run": "r2", "a": 0.5, "b": 0.1},
            {"run": "r3", "a": 0.1, "b": 0.3}]  # fmt: skip
    # Under a: r1, r2, r3; under b: r3, r1, r2. r3 moves from 3rd to 1st.
    assert largest_swap(rows) == {"run": "r3", "place_a": 3, "place_b": 1, "positions": 2}
    tau = kendalltau([r["a"] for r in rows], [r["b"] for r in rows]).statistic
    assert tau == pytest.approx(-1 / 3)


def test_two_qrels_files_on_different_scales_imported_and_compared(cli, db_path, tmp_path) -> None:
    """Through the commands: ``gold import --as-source`` of a 0-3 file (Q0) and a 0-1 file (0),
    each with its --grade-map, then ``--between``; equal to scikit-learn on the mapped grades."""
    build(db_path)
    texts = ["reset password", "vpn setup", "download invoice"]
    gold(cli, db_path, "add-query", *texts)
    ids = [qid(t) for t in texts]
    chunks = ["kb-reset-1", "kb-reset-2", "kb-vpn-1", "kb-vpn-2", "kb-invoice-1", "kb-sso-1"]
    pairs = [(q, c) for q in ids for c in chunks]
    raw_a = [3, 1, 0, 0, 0, 0, 0, 0, 3, 2, 0, 1, 0, 0, 0, 0, 2, 0]
    raw_b = [1, 0, 0, 0, 0, 0, 0, 0, 1, 1, 0, 0, 0, 0, 0, 0, 1, 1]
    nist, team = tmp_path / "nist.qrels", tmp_path / "team.qrels"
    nist.write_text("".join(f"{q} Q0 {c} {g}\n" for (q, c), g in zip(pairs, raw_a, strict=True)))
    team.write_text("".join(f"{q} 0 {c} {g}\n" for (q, c), g in zip(pairs, raw_b, strict=True)))
    topics = tmp_path / "topics.tsv"  # the queries by id, matched to the items by id
    topics.write_text("".join(f"{q}\t{t}\n" for q, t in zip(ids, texts, strict=True)))
    for path, name, grade_map in ((nist, "nist", "0=0,1=0,2=1,3=2"), (team, "team", "0=0,1=2")):
        gold(cli, db_path, "import", str(path), "--as-source", name, "--topics", str(topics),
             "--grade-map", grade_map)  # fmt: skip
    a = [{0: 0, 1: 0, 2: 1, 3: 2}[g] for g in raw_a]
    b = [{0: 0, 1: 2}[g] for g in raw_b]

    out = json.loads(_between(cli, db_path, "import:nist", "import:team", "--json").stdout)
    assert out["n_units"] == 18 and out["n_queries"] == 3
    assert out["kappa_weighted"] == pytest.approx(
        cohen_kappa_score(a, b, weights="linear", labels=[0, 1, 2])
    )
    assert out["kappa_relevant"] == pytest.approx(
        cohen_kappa_score([g > 0 for g in a], [g > 0 for g in b])
    )
    assert out["confusion"]["more_lenient"] == "import:team"  # 0-1's 1 maps to 2


def test_a_bare_name_between_is_a_rater(cli, db_path) -> None:
    """``--between ana ben`` was refused: a source had to be written rater:ana."""
    _items(db_path, 2)
    _rate(db_path, "ana", {("q0", "c0_0"): 2, ("q1", "c1_0"): 0})
    _rate(db_path, "ben", {("q0", "c0_0"): 2, ("q1", "c1_0"): 1})
    bare = json.loads(gold(cli, db_path, "agreement", "--between", "ana", "ben", "--json").stdout)
    full = json.loads(
        gold(cli, db_path, "agreement", "--between", "rater:ana", "rater:ben", "--json").stdout
    )
    assert bare == full


def test_the_answerable_kappa_of_one_sided_answers_is_not_a_number(cli, db_path) -> None:
    """One side calls every query answerable: kappa is 0 by its formula (scikit-learn's too),
    which says nothing; the report says the decision's agreement cannot be measured, at any
    number of queries, not 0.00 [0.00, 0.00]."""
    _items(db_path, 4)
    _rate(db_path, "ana", {(f"q{i}", f"c{i}_0"): 2 for i in range(4)})
    _rate(db_path, "ben", {(f"q{i}", f"c{i}_0"): 2 for i in range(3)}, no_answer=["q3"])
    (pair,) = json.loads(gold(cli, db_path, "agreement", "--json").stdout)["pairs"]
    assert pair["answerable"]["kappa"] == pytest.approx(0.0)
    text = gold(cli, db_path, "agreement").stdout.split("answerable or not")[1].splitlines()[0]
    assert "one side takes every query alike" in text and "[0.00, 0.00]" not in text
    assert "kappa n/a (" in text and "0.00" not in text  # the docs' example: no number at all


def test_a_side_is_more_lenient_only_by_a_twentieth_of_a_grade() -> None:
    """Identical shares but one unit apart in 150 was called "the more lenient": a side is
    only when its mean grade is a twentieth of a grade higher or more."""
    per_query = np.zeros((1, 3, 3), dtype=np.int64)
    per_query[0] = [[130, 0, 0], [1, 10, 0], [0, 0, 9]]  # one unit: rows 1, columns 0
    assert kappa.confusion(per_query, "rater:ana", "rater:ben")["more_lenient"] is None
    per_query[0] = [[100, 0, 0], [12, 20, 0], [3, 0, 15]]  # 15 units higher on the rows' side
    assert kappa.confusion(per_query, "rater:ana", "rater:ben")["more_lenient"] == "rater:ana"
