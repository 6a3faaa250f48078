"""``compare``: the paired statistics, checked against scipy and on runs whose verdict is known,
then the command as a user runs it on real stored runs."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from goldmine.errors import InputError
from goldmine.eval.compare import compare_runs
from goldmine.eval.gate import check_fail_under, parse_fail_under, worse_than
from goldmine.eval.sides import ScoreTable, resolve_side
from goldmine.eval.stats import bootstrap_ci, holm, min_detectable_effect, sign_flip_test
from goldmine.store import open_store

from helpers import eval_run, write_gold, write_run

scipy_stats = pytest.importorskip("scipy.stats")


def table(values: dict[str, float], metric: str = "recall@5") -> dict[str, dict[str, float]]:
    return {q: {metric: v} for q, v in values.items()}


# --- the statistics -----------------------------------------------------------------------------


def test_identical_runs_give_p_one_and_inside_the_noise() -> None:
    rng = np.random.default_rng(5)
    scores = {
        f"q{i}": {"mrr": float(v), "recall@5": float(v > 0.5)} for i, v in enumerate(rng.random(50))
    }
    c = compare_runs(scores, scores)
    for m in c.metrics:
        assert m.p_raw == 1.0 and m.p_value == 1.0
        assert m.verdict == "inside the noise"
        assert m.delta == 0.0 and m.ci == (0.0, 0.0)
        assert (m.wins, m.losses, m.ties) == (0, 0, 50)
        assert m.won == [] and m.lost == []
        # No query changed: the detectable change comes from the scores' spread, not zero.
        assert m.mde is not None and m.mde > 0 and "spread" in m.mde_basis


def test_a_run_that_wins_45_of_50_queries_is_better() -> None:
    a = table({f"q{i}": 0.0 if i < 45 else 1.0 for i in range(50)})
    b = table({f"q{i}": 1.0 if i < 45 else 0.0 for i in range(50)})
    c = compare_runs(a, b)
    m = c.metric("recall@5")
    assert (m.wins, m.losses, m.ties) == (45, 5, 0)
    assert m.delta == pytest.approx(0.8)
    assert m.p_value < 0.001 and m.verdict == "better"
    assert m.ci[0] > 0.6 and m.ci[1] <= 1.0
    assert len(m.won) == 10 and len(m.lost) == 5
    assert compare_runs(b, a).metric("recall@5").verdict == "worse"


@pytest.mark.parametrize(("seed", "shift"), [(1, 0.02), (2, 0.05), (3, 0.0), (4, 0.08)])
def test_randomization_p_matches_scipy_permutation_test(seed: int, shift: float) -> None:
    rng = np.random.default_rng(seed)
    a = rng.random(60)
    b = np.clip(a + rng.normal(shift, 0.25, 60), 0, 1)
    ours, exact = sign_flip_test(b - a, 10_000, seed=0)
    theirs = scipy_stats.permutation_test(
        (b, a),
        lambda x, y, axis: np.mean(x - y, axis=axis),
        permutation_type="samples",
        n_resamples=10_000,
        vectorized=True,
        random_state=seed,
    ).pvalue
    assert not exact
    # Both are Monte-Carlo estimates of the same p: allow 4 standard errors of their difference.
    p = (ours + theirs) / 2
    tolerance = 4 * math.sqrt(2 * p * (1 - p) / 10_000) + 2e-4
    assert abs(ours - theirs) < tolerance, (ours, theirs)


def test_few_changed_queries_are_enumerated_exactly_like_scipy() -> None:
    a = np.array([0.1, 0.5, 0.3, 0.9, 0.2, 0.4, 0.0, 0.7, 0.6, 0.6])
    b = np.array([0.3, 0.4, 0.8, 1.0, 0.6, 0.9, 0.5, 0.9, 0.6, 0.6])  # two ties
    ours, exact = sign_flip_test(b - a)
    theirs = scipy_stats.permutation_test(
        (b, a),
        lambda x, y, axis: np.mean(x - y, axis=axis),
        permutation_type="samples",
        vectorized=True,
    ).pvalue
    assert exact
    assert ours == pytest.approx(theirs)


def test_p_is_count_plus_one_over_permutations_plus_one() -> None:
    # 20 deltas of +1: only the observed pattern reaches |sum| = 20 (and its mirror, -20), each
    # with chance 2^-20, so count is almost surely 0 and p = 1 / 10,001.
    p, exact = sign_flip_test(np.ones(20), 10_000)
    assert not exact and p == pytest.approx(1 / 10_001)
    assert sign_flip_test(np.ones(20), 10_000, seed=3) == sign_flip_test(np.ones(20), 10_000, 3)


def test_bootstrap_is_seeded_and_both_engines_agree() -> None:
    rng = np.random.default_rng(0)
    discrete = rng.choice([-1.0, 0.0, 1.0], size=400, p=[0.2, 0.5, 0.3])
    continuous = discrete + rng.normal(0, 1e-6, 400)  # many distinct values: index resampling
    low, high = bootstrap_ci(discrete, 10_000, seed=1)
    assert (low, high) == bootstrap_ci(discrete, 10_000, seed=1)
    assert low < discrete.mean() < high
    low2, high2 = bootstrap_ci(continuous, 10_000, seed=1)
    assert low2 == pytest.approx(low, abs=0.01) and high2 == pytest.approx(high, abs=0.01)
    # Normal theory for comparison: mean ± 1.96 sd / sqrt(n).
    half = 1.96 * discrete.std(ddof=1) / math.sqrt(discrete.size)
    assert high - low == pytest.approx(2 * half, rel=0.08)


def test_holm_adjustment() -> None:
    assert holm([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])
    assert holm([0.5, 0.001]) == pytest.approx([0.5, 0.002])
    assert holm([0.9, 0.8, 0.7]) == pytest.approx([1.0, 1.0, 1.0])
    assert holm([0.2, 0.3, 0.01]) == pytest.approx([0.4, 0.4, 0.03])


def test_several_metrics_are_holm_corrected_one_is_not() -> None:
    rng = np.random.default_rng(7)
    a = {
        f"q{i}": {"m1": float(x), "m2": float(y), "m3": float(z)}
        for i, (x, y, z) in enumerate(rng.random((80, 3)))
    }
    b = {
        q: {"m1": v["m1"] + 0.1, "m2": v["m2"] + rng.normal(0.02, 0.2), "m3": v["m3"]}
        for q, v in a.items()
    }
    several = compare_runs(a, b)
    assert several.correction == "holm"
    raw = [m.p_raw for m in several.metrics]
    assert [m.p_value for m in several.metrics] == pytest.approx(holm(raw))
    assert several.metric("m1").verdict == "better"
    assert several.metric("m3").p_value == 1.0
    one = compare_runs(a, b, ["m2"])
    assert one.correction is None
    assert one.metric("m2").p_value == one.metric("m2").p_raw == several.metric("m2").p_raw
    # A metric's test and interval do not depend on which other metrics are compared with it.
    assert one.metric("m2").ci == several.metric("m2").ci


def test_a_grown_gold_set_is_compared_on_the_common_queries() -> None:
    old = table({f"q{i}": float(i % 2) for i in range(40)})
    grown = table({f"q{i}": float(i % 2) for i in range(50)})
    c = compare_runs(old, grown)
    assert c.n_queries == 40
    assert (len(c.only_a), len(c.only_b)) == (0, 10)
    assert c.only_b == [f"q{i}" for i in range(40, 50)]
    assert c.metric("recall@5").p_value == 1.0


def test_minimum_detectable_effect_formula() -> None:
    # (z_0.975 + z_0.80) = 1.95996 + 0.84162 = 2.80158
    assert min_detectable_effect(0.5, 100) == pytest.approx(2.80158 * 0.05, rel=1e-4)
    d = np.array([1.0, 0.0, -1.0, 1.0, 0.0, 1.0, 0.0, 0.0])
    a = table({f"q{i}": 0.5 for i in range(8)})
    b = table({f"q{i}": 0.5 + x for i, x in enumerate(d)})
    m = compare_runs(a, b).metric("recall@5")
    assert m.mde == pytest.approx(2.80158 * d.std(ddof=1) / math.sqrt(8), rel=1e-4)
    assert m.mde_basis == "paired deltas"


def test_no_common_query_or_metric_is_a_clear_error() -> None:
    with pytest.raises(InputError, match="no query in common"):
        compare_runs(table({"q1": 1.0}), table({"q2": 1.0}))
    with pytest.raises(InputError, match="not scored on both sides"):
        compare_runs(table({"q1": 1.0}), table({"q1": 1.0}), ["ndcg@10"])


def test_labels_and_texts_carry_into_the_queries_won() -> None:
    a = ScoreTable(table({"q1": 0.0, "q2": 1.0}), label="old", texts={"q1": "reset password"})
    b = ScoreTable(table({"q1": 1.0, "q2": 1.0}), label="new")
    c = compare_runs(a, b)
    assert (c.label_a, c.label_b) == ("old", "new")
    won = c.metric("recall@5").won
    assert [(q.query_id, q.query, q.delta) for q in won] == [("q1", "reset password", 1.0)]
    assert compare_runs(a, b, label_a="x").label_a == "x" and a.label == "old"


# --- the gate -----------------------------------------------------------------------------------


def test_parse_and_check_fail_under() -> None:
    floors = parse_fail_under(["recall@5=0.70", "P_10=0.2,mrr=0.5"])
    assert floors == {"recall@5": 0.7, "precision@10": 0.2, "mrr": 0.5}
    failures = check_fail_under({"recall@5": 0.64, "precision@10": 0.3}, floors)
    assert failures == [
        "recall@5 0.6400 is under the --fail-under floor 0.7",
        "--fail-under mrr=0.5: mrr was not computed (add it to --metrics)",
    ]
    assert check_fail_under({"recall@5": 0.7}, {"recall@5": 0.7}) == []
    for bad in ("recall@5", "recall@5=", "recall@5=high", "bogus@5=0.1"):
        with pytest.raises(InputError):
            parse_fail_under([bad])


# --- real stored runs ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def stored(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Two stored runs on 50 queries: 'base' finds every answer at rank 3, 'better' at rank 1 on
    45 of them (and at rank 5 on the other five); 'base-again' is 'base' once more. Shared by the
    tests of this module, which only read it."""
    from helpers import run_cli

    tmp_path = tmp_path_factory.mktemp("stored")
    db = tmp_path / "store.duckdb"
    gold = write_gold(tmp_path / "gold.jsonl", 50)
    base = write_run(tmp_path / "base.trec", 50, default=3)
    better = write_run(tmp_path / "better.trec", 50, {i: 5 for i in range(45, 50)}, default=1)
    history = tmp_path / "history.csv"
    eval_run(run_cli, gold, base, db, "base", history)
    eval_run(run_cli, gold, better, db, "better", history)
    eval_run(run_cli, gold, base, db, "base-again", history)
    return {"gold": gold, "base": base, "better": better, "history": history, "db": db}


def compare_json(cli, *args: str) -> dict:
    result = cli("eval", "compare", *args, "--json")
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_cli_compare_stored_runs_json_contract(cli, stored) -> None:
    data = compare_json(cli, "base", "better", "--db", str(stored["db"]))
    assert data["n_queries"] == 50
    assert data["correction"] == "holm"
    assert set(data["metrics"]) == {"recall@1", "recall@5", "mrr"}
    for m in data["metrics"].values():
        assert {"delta", "p_value", "ci", "verdict"} <= set(m)
        assert len(m["ci"]) == 2 and m["ci"][0] <= m["delta"] <= m["ci"][1]
        assert m["verdict"] in ("better", "worse", "inside the noise")
    r1 = data["metrics"]["recall@1"]
    assert r1["delta"] == pytest.approx(0.9) and r1["verdict"] == "better"
    assert data["metrics"]["recall@5"]["verdict"] == "inside the noise"  # all found by 5
    assert data["metrics"]["recall@5"]["p_value"] == 1.0
    mrr = data["metrics"]["mrr"]
    assert (mrr["wins"], mrr["losses"]) == (45, 5)
    assert mrr["won"][0]["query"] == "question 0"

    same = compare_json(cli, "base", "base-again", "--db", str(stored["db"]), "-m", "mrr")
    assert same["correction"] is None
    assert same["metrics"]["mrr"] | {} == same["metrics"]["mrr"]
    assert same["metrics"]["mrr"]["p_value"] == 1.0
    assert same["metrics"]["mrr"]["verdict"] == "inside the noise"


def test_cli_compare_text_output(cli, stored) -> None:
    result = cli("eval", "compare", "1", "#2", "--db", str(stored["db"]))
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "paired on 50 common queries" in out
    assert "p-values Holm-corrected" in out
    lines = {line.split()[0]: line for line in out.splitlines() if line.startswith("recall@1 ")}
    assert "better" in lines["recall@1"]
    assert "won   q0  0.000 -> 1.000 (+1.000)  question 0" in out


def test_cli_compare_run_file_against_stored_run(cli, stored) -> None:
    data = compare_json(
        cli, str(stored["base"]), "better", "--gold", str(stored["gold"]), "--db", str(stored["db"])
    )
    assert set(data["metrics"]) == {"recall@1", "recall@5", "mrr"}  # the stored run's metrics
    assert data["metrics"]["recall@1"]["verdict"] == "better"
    result = cli("eval", "compare", str(stored["base"]), "better", "--db", str(stored["db"]))
    assert result.returncode == 2
    assert (
        result.stderr.strip()
        .splitlines()[-1]
        .endswith("give --gold to score it (a gold file or a version, e.g. v3)")
    )


def test_cli_compare_history_rows(cli, tmp_path: Path, stored) -> None:
    h = tmp_path / "history.csv"
    h.write_text(stored["history"].read_text())
    data = compare_json(cli, f"history:{h}:base", f"history:{h}:2", "--db", str(stored["db"]))
    assert data["metrics"]["recall@1"]["verdict"] == "better"
    assert data["a"]["label"] == "base (history, run 1)"
    # A history row whose run was not stored: only means, no pairing.
    lines = h.read_text().splitlines()
    header = lines[0].split(",")
    row = lines[1].split(",")
    row[header.index("run_id")] = ""
    row[header.index("label")] = "unstored"
    h.write_text("\n".join([*lines, ",".join(row)]) + "\n")
    result = cli("eval", "compare", f"history:{h}:unstored", "better", "--db", str(stored["db"]))
    assert result.returncode == 2
    assert "holds only the means; pairing per query needs the stored run" in result.stderr
    result = cli("eval", "compare", f"history:{h}:9", "better", "--db", str(stored["db"]))
    assert result.returncode == 2 and "rows are numbered 1 to 4" in result.stderr


def test_cli_compare_grown_gold_set(cli, tmp_path: Path, db_path: Path) -> None:
    small = write_gold(tmp_path / "g40.jsonl", 40)
    grown = write_gold(tmp_path / "g50.jsonl", 50)
    run = write_run(tmp_path / "r.trec", 50, default=2)
    eval_run(cli, small, run, db_path, "old")
    eval_run(cli, grown, run, db_path, "new")
    data = compare_json(cli, "old", "new", "--db", str(db_path))
    assert data["n_queries"] == 40 and data["n_only_b"] == 10 and data["n_only_a"] == 0
    assert any("different gold sets" in note for note in data["notes"])
    assert all(m["verdict"] == "inside the noise" for m in data["metrics"].values())
    text = cli("eval", "compare", "old", "new", "--db", str(db_path)).stdout
    assert (
        "paired on 40 common queries; left out: 0 queries only A was scored on, 10 only B" in text
    )


def test_cli_compare_plot_html_is_self_contained(cli, tmp_path: Path, stored) -> None:
    out = tmp_path / "plots" / "compare.html"
    result = cli("eval", "compare", "base", "better", "--db", str(stored["db"]), "--plot", str(out))
    assert result.returncode == 0, result.stderr
    page = out.read_text()
    assert page.count("<svg") == 4  # the intervals, then one win/loss chart per metric
    assert "<script" not in page and "http://" not in page.replace("http://www.w3.org", "")
    assert "q0: +1.0000  question 0" in page


def test_cli_png_without_matplotlib_is_one_clear_line(cli, tmp_path: Path, stored) -> None:
    # Hide matplotlib whether or not it is installed: a package of that name that fails to import
    # comes first on the path.
    blocker = tmp_path / "hide" / "matplotlib"
    blocker.mkdir(parents=True)
    (blocker / "__init__.py").write_text("raise ImportError('hidden for the test')\n")
    env = {"PYTHONPATH": str(blocker.parent)}
    result = cli(
        "eval", "compare", "base", "better", "--db", str(stored["db"]), "--plot", "x.png", env=env
    )
    assert result.returncode == 2
    assert result.stderr.strip() == (
        "error: x.png: PNG plots need matplotlib, which is not installed; write the plot as "
        ".html instead, or pip install matplotlib"
    )
    assert not (tmp_path / "x.png").exists()


def test_worse_than_uses_the_verdict_not_any_drop(cli, tmp_path: Path, stored) -> None:
    with open_store(stored["db"]) as con:
        better = resolve_side("better", con)
        base = resolve_side("base", con)
        assert worse_than(better.scores, "better", con) is None  # identical: inside the noise
        line = worse_than(base.scores, "better", con)
        assert line is not None and line.startswith(
            "worse than run 2 (better) on 50 common queries"
        )
        assert "recall@1 0.0000 vs 0.9000" in line
        # A small drop: one query of fifty loses its first-rank answer. A drop, not a regression.
        slipped = {q: dict(v) for q, v in better.scores.items()}
        slipped["q0"] = {"recall@1": 0.0, "recall@5": 1.0, "mrr": 0.5}
        assert worse_than(slipped, "better", con) is None


def test_worse_than_its_own_label_means_the_run_before(cli, tmp_path: Path, db_path: Path) -> None:
    gold = write_gold(tmp_path / "gold.jsonl", 40)
    eval_run(cli, gold, write_run(tmp_path / "good.trec", 40, default=1), db_path, "main")
    with open_store(db_path) as con:
        only = resolve_side("main", con)
        with pytest.raises(InputError, match="that is this run itself"):
            worse_than(only, "main", con)
    eval_run(cli, gold, write_run(tmp_path / "bad.trec", 40, default=4), db_path, "main")
    with open_store(db_path) as con:
        latest = resolve_side("main", con)
        assert latest.run_id == 2
        line = worse_than(latest, "main", con)
    assert line is not None and line.startswith("worse than run 1 (main) on 40 common queries")


def test_one_query_won_is_one_query() -> None:
    """The report said "B won 1 queries"."""
    import goldmine

    gold = {"q1": {"d1": 1}, "q2": {"d2": 1}}
    better = goldmine.compare(gold, {"q1": ["x", "d1"], "q2": ["d2"]}, {"q1": ["d1"], "q2": ["d2"]},
                              metrics="mrr")  # fmt: skip
    assert "mrr: B won 1 query, lost 0, tied 1" in str(better)
