"""A run scored against a gold set whose query ids it does not share: none in common is an error,
under half a warning, each said before any metric or reading, with two ids from each side."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from goldmine.errors import InputError
from goldmine.eval.scoring import check_overlap, evaluate_files
from goldmine.metrics import parse_metrics
from goldmine.readers import read_gold

GOLD_IDS = [str(n) for n in range(1, 9)]


def write_gold(tmp_path: Path) -> Path:
    gold = tmp_path / "gold.qrels"
    gold.write_text("".join(f"{q} 0 d{q} 1\n" for q in GOLD_IDS))
    return gold


def write_run(tmp_path: Path, qids: list[str], name: str = "run.trec") -> Path:
    run = tmp_path / name
    run.write_text("".join(f"{q} Q0 d{q.lstrip('q')} 1 1.0 x\n" for q in qids))
    return run


def merged(*args: str) -> subprocess.CompletedProcess:
    """The CLI with stderr into stdout, as a terminal shows them: which line comes first."""
    return subprocess.run(
        [sys.executable, "-m", "goldmine", *args],
        env={**os.environ, "COLUMNS": "200"},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=300,
    )


def test_a_run_sharing_no_query_id_with_the_gold_is_an_error(cli, db_path, tmp_path) -> None:
    gold, run = write_gold(tmp_path), write_run(tmp_path, ["q12", "q7", "q3"])
    result = cli("--db", str(db_path), "eval", "run", "--gold", str(gold), "--run", str(run))
    assert result.returncode == 2
    assert "run ids look like q12, q7; gold ids look like 1, 2" in result.stderr
    assert "none" in result.stderr and "8" in result.stderr
    assert result.stdout == ""
    listed = cli("--db", str(db_path), "eval", "runs", "--json")
    assert listed.returncode == 2 or json.loads(listed.stdout)["runs"] == []


def test_a_run_with_under_half_the_gold_warns_before_any_metric(db_path, tmp_path) -> None:
    gold, run = write_gold(tmp_path), write_run(tmp_path, ["1", "2", "3", "q40", "q41"])
    result = merged("--db", str(db_path), "eval", "run", "--gold", str(gold), "--run", str(run),
                    "--metrics", "recall@1,mrr")  # fmt: skip
    assert result.returncode == 0, result.stdout
    lines = result.stdout.splitlines()
    first = next(i for i, line in enumerate(lines) if line.startswith("warning:"))
    assert "3 of the gold's 8" in lines[first]
    assert "run ids look like q40, q41; gold ids look like 4, 5" in result.stdout
    metric = next(i for i, line in enumerate(lines) if line.startswith(("recall@1", "reading")))
    assert first < metric and first == 0


def test_the_warning_is_in_the_json_too_and_half_is_enough(cli, db_path, tmp_path) -> None:
    gold = write_gold(tmp_path)
    few = write_run(tmp_path, ["1", "2", "3"])
    data = json.loads(
        cli("--db", str(db_path), "eval", "run", "-g", str(gold), "-r", str(few), "--json").stdout
    )
    assert len(data["warnings"]) == 1 and "3 of the gold's 8" in data["warnings"][0]
    assert "run ids look like 1, 2; gold ids look like 4, 5" in data["warnings"][0]
    half = write_run(tmp_path, GOLD_IDS[:4], "half.trec")
    result = cli("--db", str(db_path), "eval", "run", "-g", str(gold), "-r", str(half), "--json")
    assert result.returncode == 0 and "warning" not in result.stderr
    assert json.loads(result.stdout)["warnings"] == []


def test_compare_and_the_gate_refuse_a_run_file_that_matches_no_gold(cli, db_path, tmp_path):
    gold = write_gold(tmp_path)
    good = write_run(tmp_path, GOLD_IDS)
    other = write_run(tmp_path, ["q12", "q7"], "other.trec")
    compared = cli("--db", str(db_path), "eval", "compare", str(good), str(other),
                   "--gold", str(gold))  # fmt: skip
    assert compared.returncode == 2
    assert "run ids look like q12, q7; gold ids look like 1, 2" in compared.stderr
    gated = cli("--db", str(db_path), "eval", "run", "-g", str(gold), "-r", str(good),
                "--fail-if-worse-than", str(other))  # fmt: skip
    assert gated.returncode == 2
    assert "run ids look like q12, q7" in gated.stderr


@pytest.mark.parametrize("force", [False, True])
def test_both_engines_measure_the_overlap_alike(tmp_path, force: bool) -> None:
    gold = write_gold(tmp_path)
    none = write_run(tmp_path, ["q12", "q7"])
    metrics = parse_metrics(["recall@1"])
    with pytest.raises(InputError, match="run ids look like q12, q7; gold ids look like 1, 2"):
        check_overlap(evaluate_files(gold, none, metrics, force=force), read_gold(gold))
    some = write_run(tmp_path, ["1", "q9"], "some.trec")
    warning = check_overlap(evaluate_files(gold, some, metrics, force=force), read_gold(gold))
    assert warning is not None and "run ids look like q9, 1; gold ids look like 2, 3" in warning
