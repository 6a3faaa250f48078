"""``eval power``: the paired t-test figures checked against the textbook formula worked by hand,
the randomization test's simulation on cases whose answer is known, then the command."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("statsmodels")
from scipy import stats  # noqa: E402

from goldmine.errors import InputError  # noqa: E402
from goldmine.eval.power import (  # noqa: E402
    power_for,
    randomization_power,
    ttest_detectable,
    ttest_queries_needed,
)

# Eight paired deltas worked by hand: mean 0.1; deviations 0.1 -0.2 0.2 -0.1 0 0.1 -0.3 0.2;
# squares sum to 0.24, so var = 0.24 / 7 and sd = 0.185164.
DELTAS = [0.2, -0.1, 0.3, 0.0, 0.1, 0.2, -0.2, 0.3]
SD = math.sqrt(0.24 / 7)


def test_the_hand_worked_deltas_sd() -> None:
    assert abs(SD - 0.185164) < 1e-6
    assert np.std(DELTAS, ddof=1) == pytest.approx(SD)


def test_detectable_effect_matches_the_textbook_formula() -> None:
    # Textbook (e.g. Sakai's topic-set-size design): delta = (t[1-a/2, n-1] + t[power, n-1]) *
    # sd / sqrt(n). From the t table, t[.975, 7] = 2.3646 and t[.80, 7] = 0.8960, so
    # delta = 3.2606 * 0.185164 / 2.828427 = 0.21346. statsmodels solves the noncentral t
    # exactly; the two agree within half a percent.
    by_hand = (2.3646 + 0.8960) * 0.185164 / math.sqrt(8)
    assert by_hand == pytest.approx(0.21346, abs=1e-4)
    mde = ttest_detectable(SD, 8, alpha=0.05, power=0.8)
    assert mde == pytest.approx(by_hand, rel=0.005)
    # and at that effect the exact power (noncentral t, both tails) is 0.80
    ncp = mde / SD * math.sqrt(8)
    crit = stats.t.ppf(0.975, 7)
    assert stats.nct.sf(crit, 7, ncp) + stats.nct.cdf(-crit, 7, ncp) == pytest.approx(0.8, abs=1e-4)


def test_queries_needed_matches_guenthers_formula() -> None:
    # n = ((z[.975] + z[.80]) * sd / effect)^2 + z[.975]^2 / 2 (Guenther's t correction):
    # (2.8016 * 0.185164 / 0.1)^2 + 1.9600^2 / 2 = 26.910 + 1.921 = 28.83 -> 29 queries.
    by_hand = (2.8016 * 0.185164 / 0.1) ** 2 + 1.96**2 / 2
    assert by_hand == pytest.approx(28.83, abs=0.01)
    assert ttest_queries_needed(SD, 0.1, alpha=0.05, power=0.8) == 29
    # a smaller effect needs many more: 0.02 -> 675 (n grows with 1 / effect^2)
    assert ttest_queries_needed(SD, 0.02) == 675


def test_no_spread_means_nothing_to_solve() -> None:
    assert ttest_detectable(0.0, 50) is None
    assert ttest_queries_needed(0.0, 0.02) is None
    assert ttest_detectable(0.2, 1) is None


def test_randomization_power_on_constant_deltas_is_exact() -> None:
    # Centred deltas all 0, shifted by 0.05: every simulated sample is n copies of 0.05, and only
    # the all-plus and all-minus sign patterns reach |sum|. At n = 8 that is 2 / 256 = 0.0078 of
    # the flips, p < 0.05, so every trial rejects; at n = 4 it is 2 / 16 = 0.125, none does.
    d = np.full(10, 0.3)
    assert randomization_power(d, 0.05, 8, trials=200, flips=2000, seed=1) == 1.0
    assert randomization_power(d, 0.05, 4, trials=200, flips=2000, seed=1) == 0.0


def test_randomization_size_is_alpha_under_no_effect() -> None:
    rng = np.random.default_rng(3)
    d = rng.normal(0, 0.2, 60)
    # no effect: the test rejects about alpha of the time (1000 trials: 0.05 +- 0.02)
    p = randomization_power(d, 0.0, 60, trials=1000, flips=500, seed=2)
    assert 0.025 <= p <= 0.08


def test_randomization_and_t_test_agree_on_normal_deltas() -> None:
    rng = np.random.default_rng(7)
    d = rng.normal(0.0, 0.25, 50)
    sd = float(np.std(d, ddof=1))
    scores_a = {f"q{i}": {"ndcg@10": 0.5} for i in range(50)}
    scores_b = {f"q{i}": {"ndcg@10": 0.5 + float(x)} for i, x in enumerate(d)}
    (m,) = power_for(scores_a, scores_b, effect=0.08, trials=600, flips=400, seed=0)
    assert m.metric == "ndcg@10" and m.n_queries == 50
    assert m.sd_delta == pytest.approx(sd)
    assert m.detectable_effect == pytest.approx(ttest_detectable(sd, 50))
    assert m.queries_needed == ttest_queries_needed(sd, 0.08)
    # the randomization test by simulation lands near the t-test (within 15%)
    assert m.randomization["detectable_effect"] == pytest.approx(m.detectable_effect, rel=0.15)
    assert m.randomization["queries_needed"] == pytest.approx(m.queries_needed, rel=0.2)


def test_one_run_uses_twice_its_variance() -> None:
    # One run: the deltas of two uncorrelated systems with its spread, var(delta) = 2 var(s).
    scores = {f"q{i}": {"recall@5": float(i % 2)} for i in range(20)}
    (m,) = power_for(scores, None, trials=100, flips=100)
    var = np.var([i % 2 for i in range(20)], ddof=1)
    assert m.sd_delta == pytest.approx(math.sqrt(2 * var))
    assert "one run" in m.basis
    assert m.queries_needed is None


def test_identical_runs_fall_back_to_the_spread() -> None:
    scores = {f"q{i}": {"mrr": 1 / (1 + i % 4)} for i in range(40)}
    (m,) = power_for(scores, scores, trials=100, flips=100)
    spread = math.sqrt(2 * np.var([1 / (1 + i % 4) for i in range(40)], ddof=1))
    assert m.sd_delta == pytest.approx(spread)
    assert "spread" in m.basis


def test_bad_settings_are_refused() -> None:
    scores = {"q1": {"mrr": 1.0}, "q2": {"mrr": 0.0}}
    with pytest.raises(InputError):
        power_for(scores, scores, alpha=1.5)
    with pytest.raises(InputError):
        power_for(scores, scores, power=0.0)
    with pytest.raises(InputError):
        power_for(scores, scores, effect=-0.1)


# --- the command --------------------------------------------------------------------------------


def write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def _files(tmp_path: Path) -> tuple[Path, Path, Path]:
    # 8 queries, each with one relevant chunk r<i>. Run A finds it at rank 1 on q0-q3 and misses
    # it on q4-q7; run B also finds it on q4 and q5, and loses it on q0.
    gold = write(tmp_path / "qrels.txt", "".join(f"q{i} 0 r{i} 1\n" for i in range(8)))
    a_lines, b_lines = [], []
    for i in range(8):
        a_hit = i < 4
        b_hit = (i < 4 and i != 0) or i in (4, 5)
        a_lines.append(f"q{i} Q0 {'r' if a_hit else 'x'}{i} 1 1.0 a\n")
        b_lines.append(f"q{i} Q0 {'r' if b_hit else 'x'}{i} 1 1.0 b\n")
    return (
        gold,
        write(tmp_path / "a.trec", "".join(a_lines)),
        write(tmp_path / "b.trec", "".join(b_lines)),
    )


def test_power_command_json(cli, tmp_path: Path) -> None:
    gold, a, b = _files(tmp_path)
    result = cli(
        "eval", "power", "--gold", str(gold), "--runs", str(a), str(b),
        "--metrics", "recall@1,mrr", "--effect", "0.25", "--trials", "200", "--json",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert list(data) == ["recall@1", "mrr"]
    m = data["recall@1"]
    # deltas: -1 (q0), +1 (q4, q5), 0 elsewhere: mean 1/8, sd = sqrt((3 - 8/64) / 7) = 0.64087
    assert m["n_queries"] == 8
    assert m["sd_delta"] == pytest.approx(math.sqrt((3 - 8 / 64) / 7))
    assert m["mean_delta"] == pytest.approx(0.125)
    assert m["detectable_effect"] == pytest.approx(ttest_detectable(m["sd_delta"], 8))
    assert m["queries_needed"] == ttest_queries_needed(m["sd_delta"], 0.25)
    assert m["method"].startswith("paired t-test")
    assert {"detectable_effect", "queries_needed", "method"} <= set(m["randomization"])
    assert m["alpha"] == 0.05 and m["power"] == 0.8


def test_power_command_text_and_one_run(cli, tmp_path: Path) -> None:
    gold, a, b = _files(tmp_path)
    result = cli(
        "eval", "power", "--gold", str(gold), "--runs", str(a), str(b), "-m", "recall@1",
        "--trials", "100",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "paired t-test" in result.stdout and "randomization" in result.stdout
    assert "recall@1" in result.stdout and "8 queries" in result.stdout
    one = cli("eval", "power", "--gold", str(gold), "--runs", str(a), "-m", "recall@1", "--json")
    assert one.returncode == 0, one.stderr
    assert "one run" in json.loads(one.stdout)["recall@1"]["basis"]
    three = cli("eval", "power", "--gold", str(gold), "--runs", str(a), str(b), str(a))
    assert three.returncode == 2 and "one or two runs" in three.stderr


def test_compare_says_what_inside_the_noise_means(cli, tmp_path: Path) -> None:
    gold, a, b = _files(tmp_path)
    result = cli("eval", "compare", str(a), str(b), "--gold", str(gold), "-m", "recall@1")
    assert result.returncode == 0, result.stderr
    assert "inside the noise: at 8 queries a change under" in result.stdout
    assert "recall@1 cannot be seen" in result.stdout
