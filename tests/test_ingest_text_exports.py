"""Tab-separated exports saved as ``.txt`` (Excel's "Unicode Text", "Text (Tab delimited)") read
by the searchlog, tickets and chat imports with their header.

Such a file has no telling suffix, so a tab in its first line made it a TSV collection, whose
header is told by names collections use or by ids: a sheet's header ("Search Query", "Ticket ID",
"Subject") is neither, so it became a row and the columns were named id, text, title. The search
log stopped 'no query field (... found id, text, title)', and tickets stored the header as a
ticket with every field under another's name.
"""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pytest


def _unicode_text(path: Path, rows: list[list[str]]) -> Path:
    """What Excel's Save As "Unicode Text (*.txt)" writes: UTF-16 LE with its BOM, tabs, CRLF."""
    text = "".join("\t".join(row) + "\r\n" for row in rows)
    path.write_bytes(b"\xff\xfe" + text.encode("utf-16-le"))
    return path


def _imported(cli, tmp_path: Path, kind: str, path: Path) -> Path:
    db = tmp_path / "s.duckdb"
    proc = cli("--db", str(db), "ingest", kind, str(path), "--json")
    assert proc.returncode == 0, proc.stderr
    total = json.loads(proc.stdout)["total"]
    assert (total["stored"], total["rejected"]) == (2, 0)
    return db


def _read(db: Path, sql: str) -> list[tuple]:
    with duckdb.connect(str(db), read_only=True) as con:
        return con.execute(sql).fetchall()


@pytest.mark.parametrize("name", ["searches.txt", "searches.tsv"])
def test_a_search_log_saved_as_unicode_text_reads_its_header(cli, tmp_path, name):
    path = _unicode_text(tmp_path / name, [
        ["Search Query", "Timestamp", "Session ID"],
        ["reset password", "2024-03-01 10:00:00", "s1"],
        ["vpn linux", "2024-03-01 10:01:00", "s2"],
    ])  # fmt: skip
    db = _imported(cli, tmp_path, "searchlog", path)
    got = _read(db, "SELECT query, session_id FROM search_events ORDER BY 1")
    assert got == [("reset password", "s1"), ("vpn linux", "s2")]


def test_tickets_saved_as_unicode_text_read_their_header(cli, tmp_path):
    path = _unicode_text(tmp_path / "tickets.txt", [
        ["Subject", "Body", "Created At"],
        ["Login broken", "I cannot log in since Monday", "2024-03-01"],
        ["Rechnung", "Wo ist meine Rechnung für März", "2024-03-02"],
    ])  # fmt: skip
    db = _imported(cli, tmp_path, "tickets", path)
    got = _read(db, "SELECT subject, body FROM tickets ORDER BY 1")
    assert got == [
        ("Login broken", "I cannot log in since Monday"),
        ("Rechnung", "Wo ist meine Rechnung für März"),
    ]
