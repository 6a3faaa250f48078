"""``goldmine eval runs``: the stored runs, grouped under the gold set they were scored on, which is
named once per group rather than on every row."""

from __future__ import annotations

import json
from pathlib import Path

from helpers import ROOT

SEED = ROOT / "data" / "seed"


def test_runs_name_each_gold_once(cli, db_path: Path, tmp_path: Path) -> None:
    gold, run = str(SEED / "gold.json"), str(SEED / "runs.json")
    other = tmp_path / "other-gold.json"
    other.write_text((SEED / "gold.json").read_text())

    def stored(*args: str) -> None:
        result = cli("--db", str(db_path), "eval", "run", "-r", run, "-m", "recall@1,mrr", *args)
        assert result.returncode == 0, result.stderr

    stored("-g", gold, "--label", "bm25")
    stored("-g", gold, "--label", "dense")
    stored("-g", gold, "--label", "hybrid", "-m", "recall@5,recall@10,ndcg@10,map@100,P@5")
    stored("-g", str(other), "--label", "elsewhere")
    listed = cli("--db", str(db_path), "eval", "runs")
    assert listed.returncode == 0, listed.stderr
    out = listed.stdout
    assert out.count(gold) == 1 and out.count(str(other)) == 1
    lines = out.splitlines()
    heading = next(i for i, line in enumerate(lines) if gold in line)
    assert "3 runs" in lines[heading] and "sha256" in lines[heading]
    # Each group lists its runs under it, newest first, with a column per metric.
    body = "\n".join(lines[heading:])
    assert body.index("hybrid") < body.index("dense") < body.index("bm25")
    assert "elsewhere" in "\n".join(lines[:heading])
    assert any(line.split()[:2] == ["id", "time"] and "MRR" in line for line in lines)
    data = json.loads(cli("--db", str(db_path), "eval", "runs", "--json").stdout)
    assert len({r["gold_hash"] for r in data["runs"]}) == 1 and len(data["runs"]) == 4
    # At 80 columns the metric columns do not fit: two lines a run, nothing cut short.
    narrow = cli("--db", str(db_path), "eval", "runs", env={"COLUMNS": "80"}).stdout
    assert narrow.count(gold) == 1 and "…" not in narrow
    assert all(len(line) <= 80 for line in narrow.splitlines() if not line.startswith("gold "))
    assert "recall@1 0.33  MRR 0.56" in narrow
