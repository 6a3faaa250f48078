"""Algolia's search analytics, as its dashboard exports and its Analytics API returns them.

Its top searches are ``search, count, nbHits`` (a CSV from the dashboard, or the API's
``{"searches": [...]}``): the query column is called ``search``, which no alias had, and the API's
object wrapping the rows was no wrapper the JSON reader knew, so both were refused "no query
field". A search with ``nbHits`` 0 found nothing every time it was typed: its count is its
searches with no results.
"""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import duckdb
import pytest

ROWS = [("reset password", 120, 14), ("vpn linux", 40, 0), ("invoice", 7, 3)]


def write(tmp_path: Path, kind: str) -> Path:
    if kind == "csv":
        path = tmp_path / "top_searches.csv"
        path.write_text("search,count,nbHits\n" + "".join(f"{q},{n},{h}\n" for q, n, h in ROWS))
    else:
        path = tmp_path / "searches.json"
        path.write_text(json.dumps({"searches": [
            {"search": q, "count": n, "nbHits": h} for q, n, h in ROWS]}))  # fmt: skip
    return path


@pytest.mark.parametrize("kind", ["csv", "json"])
def test_algolia_top_searches_are_an_aggregated_export(cli, tmp_path: Path, kind: str) -> None:
    db = tmp_path / "a.duckdb"
    proc = cli("--db", str(db), "ingest", "searchlog", str(write(tmp_path, kind)), "--json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["files"][0]["format"] == ("analytics" if kind == "csv" else kind)
    with duckdb.connect(str(db), read_only=True) as con:
        stored = con.execute(
            "SELECT norm_query, n_events, n_zero_results FROM search_summaries ORDER BY 1"
        ).fetchall()
        batches = con.execute("SELECT count(*) FROM import_batches").fetchall()[0][0]
    assert stored == [("invoice", 7, 0), ("reset password", 120, 0), ("vpn linux", 40, 40)]
    assert batches == 1
    again = cli("--db", str(db), "ingest", "searchlog", str(write(tmp_path, kind)), "--json")
    assert json.loads(again.stdout)["total"]["stored"] == 0  # the same export adds nothing


def test_a_bad_nbhits_is_a_reject_naming_it(cli, tmp_path: Path) -> None:
    path = tmp_path / "top.csv"
    path.write_text("search,count,nbHits\nreset password,12,many\nvpn,3,0\n")
    db = tmp_path / "a.duckdb"
    proc = cli("--db", str(db), "ingest", "searchlog", str(path), "--json")
    assert proc.returncode == 0, proc.stderr
    with duckdb.connect(str(db), read_only=True) as con:
        rejects = con.execute("SELECT reason FROM rejects").fetchall()
    assert rejects == [("wrong type: nbHits is not a number: many",)]


@pytest.mark.parametrize("kind", ["zip", "ctrl-z"])
def test_algolia_records_read_from_a_copy_are_an_aggregated_export(
    cli, tmp_path: Path, kind: str
) -> None:
    """A file DuckDB reads from goldmine's plain copy (a zip archive, a DOS Ctrl-Z at the end)
    had its 'these are an aggregated export's rows' turned into an error line by the copy's
    error handling, so Algolia's records were refused instead of read."""
    rows = "".join(json.dumps({"search": q, "count": n, "nbHits": h}) + "\n" for q, n, h in ROWS)
    path = tmp_path / "searches.jsonl"
    if kind == "zip":
        path.write_text(rows)
        with zipfile.ZipFile(tmp_path / "searches.zip", "w") as archive:
            archive.write(path, "searches.jsonl")
        path.unlink()
        path = tmp_path / "searches.zip"
    else:
        path.write_text(rows + "\x1a")
    db = tmp_path / "a.duckdb"
    proc = cli("--db", str(db), "ingest", "searchlog", str(path), "--json")
    assert proc.returncode == 0, proc.stderr
    with duckdb.connect(str(db), read_only=True) as con:
        stored = con.execute(
            "SELECT norm_query, n_events, n_zero_results FROM search_summaries ORDER BY 1"
        ).fetchall()
    assert stored == [("invoice", 7, 0), ("reset password", 120, 0), ("vpn linux", 40, 40)]
