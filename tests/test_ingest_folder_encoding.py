"""A folder of exports in which a file is in Windows-1252, as a folder of a year's exports is.

A folder's files are those ``detect`` tells the format of, and ``detect`` refuses a file whose
first lines are not UTF-8: the refusal made the file one of unknown format, left out without a
word, with ``--encoding cp1252`` too (the folder's files were told without it). The import
reported the UTF-8 files alone, as if the folder held nothing else.
"""

from __future__ import annotations

import json
from pathlib import Path

import duckdb

UTF8 = "timestamp,query,session_id\n2024-03-01 10:00:00,reset password,s1\n"
CP1252 = (
    "timestamp,query,session_id\n2024-03-02 10:00:00,café crème,s2\n2024-03-02 10:01:00,menü,s3\n"
)


def _folder(tmp_path: Path) -> Path:
    folder = tmp_path / "exports"
    folder.mkdir()
    (folder / "a.csv").write_text(UTF8, encoding="utf-8")
    (folder / "b.csv").write_bytes(CP1252.encode("cp1252"))
    return folder


def test_a_folder_with_a_windows_1252_file_names_it(cli, tmp_path: Path) -> None:
    proc = cli("--db", str(tmp_path / "s.duckdb"), "ingest", "searchlog", str(_folder(tmp_path)))
    assert proc.returncode == 2, proc.stdout
    said = proc.stderr.strip().splitlines()[-1]
    assert "b.csv" in said and "--encoding cp1252" in said


def test_encoding_reads_a_folders_windows_1252_file(cli, tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    proc = cli("--db", str(db), "ingest", "searchlog", str(_folder(tmp_path)),
               "--encoding", "cp1252", "--json")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["total"]["stored"] == 3
    with duckdb.connect(str(db), read_only=True) as con:
        got = con.execute("SELECT query FROM search_events ORDER BY 1").fetchall()
    assert got == [("café crème",), ("menü",), ("reset password",)]
