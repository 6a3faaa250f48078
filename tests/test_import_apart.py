"""An import lets go of the store while it stages a file, so readers get an answer meanwhile.

Before, ``goldmine status`` during a 1M-event ingest waited its 2 s and exited 3: the import held
the store from the first line read to the last row written. Now the store is attached to an
in-memory connection and detached while the file is parsed, checked and redacted; the rows
already stored are known from a copy of their keys taken first, and an import that another
process finished meanwhile is detected and the file staged again with the store held.
"""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pytest

from goldmine.ingest import api, batch
from goldmine.store import is_released, open_store

from helpers import run_cli, write_jsonl

NO_WAIT = {"GOLDMINE_BUSY_WAIT": "0"}


def _events(ids: range) -> list[dict]:
    return [{"event_id": f"e{i}", "query": f"query {i}", "ts": "2026-11-30T10:00:00Z"} for i in ids]


def _during_staging(monkeypatch: pytest.MonkeyPatch, action) -> list:
    """Run ``action`` once, inside the first staging of a file (the real one), and keep what
    it returns together with whether the store was let go then."""
    seen: list = []
    real = batch._stage_checked

    def staging(con, *args, **kwargs):
        if not seen:
            seen.append((is_released(con), action()))
        return real(con, *args, **kwargs)

    monkeypatch.setattr(batch, "_stage_checked", staging)
    return seen


def test_a_reader_gets_an_answer_while_an_import_stages(tmp_path: Path, monkeypatch) -> None:
    db = tmp_path / "store.duckdb"
    first = write_jsonl(tmp_path / "first.jsonl", _events(range(0, 50)))
    log = write_jsonl(tmp_path / "week.jsonl", _events(range(25, 100)))
    assert run_cli("ingest", "searchlog", str(first), "--db", str(db)).returncode == 0
    seen = _during_staging(
        monkeypatch,  # another process, as a reader in another terminal
        lambda: run_cli("status", "--json", "--db", str(db), env=NO_WAIT, subprocess=True),
    )
    with open_store(db, detachable=True) as con:
        result = api.searchlog(con, [log])
        # Held again to write, and still held after: a reader is refused at once.
        held = run_cli("status", "--db", str(db), env=NO_WAIT, subprocess=True)
    [(released, reader)] = seen
    assert released
    assert reader.returncode == 0, reader.stderr
    assert json.loads(reader.stdout)["counts"][0]["rows"] == 50
    assert held.returncode == 3 and "in use by another goldmine process" in held.stderr
    assert result.total == {"rows_in": 75, "stored": 50, "rejected": 0, "already_present": 25}


def test_an_import_finished_meanwhile_is_not_stored_twice(tmp_path: Path, monkeypatch) -> None:
    """Another process imports overlapping rows while this import stages: the stored keys
    copied at the start are then out of date, so the file is staged again, holding the store."""
    db = tmp_path / "store.duckdb"
    mine = write_jsonl(tmp_path / "mine.jsonl", _events(range(0, 10)))
    theirs = write_jsonl(tmp_path / "theirs.jsonl", _events(range(5, 15)))
    seen = _during_staging(
        monkeypatch,  # another process
        lambda: run_cli("ingest", "searchlog", str(theirs), "--db", str(db), subprocess=True),
    )
    with open_store(db, detachable=True) as con:
        result = api.searchlog(con, [mine])
    [(released, other)] = seen
    assert released and other.returncode == 0, other.stderr
    assert result.total == {"rows_in": 10, "stored": 5, "rejected": 0, "already_present": 5}
    with duckdb.connect(str(db), read_only=True) as con:
        rows = con.execute("SELECT count(*), count(DISTINCT event_id) FROM search_events")
        assert rows.fetchall() == [(15, 15)]


def test_the_cli_import_lets_go_and_its_rejects_keep_their_lines(tmp_path: Path) -> None:
    """Through the command: a weekly file with rejects, half of it stored, imported apart."""
    db = tmp_path / "store.duckdb"
    rows = _events(range(0, 40))
    assert run_cli("ingest", "searchlog", str(write_jsonl(tmp_path / "a.jsonl", rows[:20])),
                   "--db", str(db)).returncode == 0  # fmt: skip
    week = write_jsonl(tmp_path / "b.jsonl", [*rows[10:30], "{broken", {"ts": "x"}, *rows[30:]])
    out = run_cli("ingest", "searchlog", str(week), "--db", str(db), "--json")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["total"] == {
        "rows_in": 32, "stored": 20, "rejected": 2, "already_present": 10
    }  # fmt: skip
    rejects = run_cli("rejects", "--db", str(db), "--json")
    assert [r["line"] for r in json.loads(rejects.stdout)] == [21, 22]
    again = run_cli("ingest", "searchlog", str(week), "--db", str(db), "--json")
    assert json.loads(again.stdout)["total"]["stored"] == 0
