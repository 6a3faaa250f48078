"""The history CSV lives in the user's repository, where Excel (or an editor) saves it back: a
byte-order mark, CRLF, no newline after the last row. ``eval history``, ``eval run --history``
and ``history:FILE:LABEL`` read it as written by goldmine, and a row appended stays a row."""

from __future__ import annotations

import csv
import json
from pathlib import Path

from helpers import eval_run, write_gold, write_run


def history_of(cli, tmp_path: Path) -> Path:
    gold, db = write_gold(tmp_path / "gold.jsonl", 6), tmp_path / "s.duckdb"
    history = tmp_path / "eval-history.csv"
    eval_run(cli, gold, write_run(tmp_path / "a.trec", 6), db, "bm25", history)
    return history


def rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="", encoding="utf-8-sig") as handle:
        return list(csv.DictReader(handle))


def test_a_history_saved_by_excel_with_a_bom_reads_and_takes_a_row(cli, tmp_path) -> None:
    history = history_of(cli, tmp_path)
    text = history.read_text()
    history.write_bytes(b"\xef\xbb\xbf" + text.replace("\n", "\r\n").encode())
    shown = cli("eval", "history", str(history), "--json")
    assert shown.returncode == 0, shown.stderr
    assert json.loads(shown.stdout)["runs"][0]["time"], shown.stdout
    gold, db = tmp_path / "gold.jsonl", tmp_path / "s.duckdb"
    eval_run(cli, gold, write_run(tmp_path / "b.trec", 6, default=2), db, "hybrid", history)
    assert [r["label"] for r in rows(history)] == ["bm25", "hybrid"]
    compared = cli("eval", "compare", f"history:{history}:bm25", f"history:{history}:hybrid",
                   "--db", str(db))  # fmt: skip
    assert compared.returncode == 0, compared.stderr


def test_a_row_appended_after_a_last_line_without_newline_stays_a_row(cli, tmp_path) -> None:
    history = history_of(cli, tmp_path)
    history.write_text(history.read_text().rstrip("\n"))
    gold, db = tmp_path / "gold.jsonl", tmp_path / "s.duckdb"
    eval_run(cli, gold, write_run(tmp_path / "b.trec", 6, default=2), db, "hybrid", history)
    assert [r["label"] for r in rows(history)] == ["bm25", "hybrid"]
