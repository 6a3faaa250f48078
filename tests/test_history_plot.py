"""``goldmine eval history``: the table of runs and the trend plot, on a grown gold set."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from goldmine.eval.plot import delta_bars_svg, intervals_svg, line_chart_svg, nice_ticks

from helpers import eval_run, write_gold, write_run


@pytest.fixture
def grown_history(cli, tmp_path: Path, db_path: Path) -> Path:
    """Three runs: two on a 40-query gold set, then one after it grew to 50."""
    history = tmp_path / "history.csv"
    g40 = write_gold(tmp_path / "g40.jsonl", 40)
    g50 = write_gold(tmp_path / "g50.jsonl", 50)
    eval_run(cli, g40, write_run(tmp_path / "r1.trec", 50, default=3), db_path, "bm25", history)
    eval_run(cli, g40, write_run(tmp_path / "r2.trec", 50, default=1), db_path, "hybrid", history)
    eval_run(cli, g50, write_run(tmp_path / "r3.trec", 50, default=2), db_path, "rerank", history)
    return history


def test_history_table_marks_the_gold_change(cli, grown_history: Path) -> None:
    result = cli("eval", "history", "--file", str(grown_history))
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].split() == [
        "#",
        "time",
        "run",
        "gold",
        "queries",
        "recall@1",
        "recall@5",
        "mrr",
    ]
    rows = [line.split() for line in lines[1:4]]
    assert [r[3] for r in rows] == ["bm25", "hybrid", "rerank"]
    assert [r[6] for r in rows] == ["0.0000", "1.0000", "0.0000"]  # recall@1
    assert [r[5] for r in rows] == ["40", "40", "50"]
    assert rows[2][4].endswith("*") and not rows[1][4].endswith("*")
    assert "3 runs in" in result.stdout
    assert "the gold set changed" in result.stdout


def test_history_json_and_metric_choice(cli, grown_history: Path) -> None:
    result = cli("eval", "history", "--file", str(grown_history), "--json", "-m", "mrr")
    data = json.loads(result.stdout)
    assert data["metrics"] == ["mrr"] and data["n_runs"] == 3
    assert [r["metrics"]["mrr"] for r in data["runs"]] == pytest.approx([1 / 3, 1.0, 0.5])
    assert [r["name"] for r in data["runs"]] == ["bm25", "hybrid", "rerank"]
    assert data["gold_changes"] == [{"row": 3, "note": "gold changed (50 queries)"}]
    # counts and ids are numbers, as in eval run --json (they were the CSV's strings)
    first = data["runs"][0]
    assert all(isinstance(first[k], int) for k in ("rel_level", "n_queries") if first.get(k))
    assert not any(isinstance(first.get(k), str) for k in ("run_id", "n_missing", "n_no_answer"))
    bad = cli("eval", "history", "--file", str(grown_history), "-m", "ndcg@10")
    assert bad.returncode == 2 and "no ndcg@10 in the history" in bad.stderr


def test_history_plot_html(cli, tmp_path: Path, grown_history: Path) -> None:
    out = tmp_path / "trend.html"
    result = cli("eval", "history", "--file", str(grown_history), "--plot", str(out))
    assert result.returncode == 0, result.stderr
    page = out.read_text()
    assert page.startswith("<!doctype html>")
    assert "<script" not in page and "<link" not in page
    parts = page.split("<svg")[1:]
    assert len(parts) == 3  # one trend per metric
    ns = "{http://www.w3.org/2000/svg}"
    for part in parts:
        svg = ET.fromstring("<svg" + part.split("</svg>")[0] + "</svg>")
        assert len(svg.findall(f"{ns}circle")) == 3
        labels = [t.text for t in svg.findall(f"{ns}text")]
        assert {"bm25", "hybrid", "rerank"} <= set(labels)
        assert "gold changed (50 queries)" in labels


def test_history_errors(cli, tmp_path: Path) -> None:
    missing = cli("eval", "history", "--file", str(tmp_path / "nope.csv"))
    assert missing.returncode == 2 and "no such history file" in missing.stderr
    none = cli("eval", "history")
    assert none.returncode == 2 and "give --file HISTORY.csv" in none.stderr
    (tmp_path / "goldmine.toml").write_text('[eval]\nhistory = "h.csv"\n')
    (tmp_path / "h.csv").write_text("")
    empty = cli("eval", "history", cwd=tmp_path)
    assert empty.returncode == 0 and "no runs yet" in empty.stdout


def test_history_in_the_toml_may_start_with_a_tilde(cli, tmp_path: Path) -> None:
    """[eval] history = "~/h.csv" was read as a folder named ~ beside goldmine.toml ('no such
    history file'), where [store] db = "~/..." is the home folder's."""
    home, project = tmp_path / "home", tmp_path / "project"
    home.mkdir(), project.mkdir()
    (home / "h.csv").write_text("")
    (project / "goldmine.toml").write_text('[eval]\nhistory = "~/h.csv"\n')
    result = cli("eval", "history", cwd=project, env={"HOME": str(home)})
    assert result.returncode == 0 and "no runs yet" in result.stdout, result.stderr


def test_svg_pieces_are_well_formed() -> None:
    assert nice_ticks(0.62, 0.71) == pytest.approx([0.62, 0.64, 0.66, 0.68, 0.7, 0.72])
    assert nice_ticks(0.5, 0.5)[0] <= 0.5 <= nice_ticks(0.5, 0.5)[-1]
    for svg in (
        line_chart_svg("m <&>", ["a", "b & c", "d"], [0.5, None, 0.7], marks=[(1, "x")]),
        line_chart_svg("one", ["only"], [0.5]),
        delta_bars_svg("d", [("q1", 0.5, "q1 <x>"), ("q2", -0.25, "q2"), ("q3", 0.0, "")]),
        delta_bars_svg("none", [("q1", 0.0, "")]),
        intervals_svg(
            "i", [("mrr", 0.1, 0.05, 0.15, "better"), ("x", 0.0, 0.0, 0.0, "inside the noise")]
        ),
    ):
        ET.fromstring(svg)


def test_png_plots_when_matplotlib_is_installed(cli, tmp_path: Path, grown_history: Path) -> None:
    pytest.importorskip("matplotlib", reason="matplotlib is optional; PNG plots need it")
    out = tmp_path / "trend.png"
    result = cli("eval", "history", "--file", str(grown_history), "--plot", str(out))
    assert result.returncode == 0, result.stderr
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    out = tmp_path / "compare.png"
    result = cli(
        "eval",
        "compare",
        "history:" + str(grown_history) + ":bm25",
        "history:" + str(grown_history) + ":hybrid",
        "--db",
        str(tmp_path / "store.duckdb"),
        "--plot",
        str(out),
    )
    assert result.returncode == 0, result.stderr
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
