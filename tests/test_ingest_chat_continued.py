"""A conversation that goes on in the next export keeps every turn.

Chat exports are cut by date: last week's file ends mid-conversation and this week's holds only
the turns since. A turn with no number of its own was numbered from 0 within each file, so the
new turns took the numbers of the stored ones and were counted "already present": lost. They are
now numbered after the conversation's stored turns, and a turn already stored (the same time,
role and place among turns of that time and role) keeps its number, so an overlapping re-export
still adds nothing twice.
"""

from __future__ import annotations

from goldmine.ingest import api
from goldmine.store import open_store

from helpers import stored_turns, write_jsonl


def _turns(db_path) -> list[tuple]:
    return stored_turns(db_path, "conversation_id, turn, role, text")


def _import(db_path, path, **kwargs) -> dict[str, int]:
    with open_store(db_path) as con:
        return api.chat(con, [path], **kwargs).total


def _turn(conv: str, ts: str, role: str, text: str) -> dict[str, str]:
    return {"conversation_id": conv, "ts": ts, "role": role, "text": text}


WEEK1 = [
    _turn("c1", "2026-11-30T10:00:00Z", "user", "how do I export invoices"),
    _turn("c1", "2026-11-30T10:00:05Z", "assistant", "Go to Billing > Export."),
]
LATER = [
    _turn("c1", "2026-12-01T09:00:00Z", "user", "and as csv?"),
    _turn("c1", "2026-12-01T09:00:04Z", "assistant", "I don't know."),
]


def test_the_next_weeks_turns_of_a_conversation_are_stored_after_its_first(tmp_path, db_path):
    _import(db_path, write_jsonl(tmp_path / "w1.jsonl", WEEK1))
    total = _import(db_path, write_jsonl(tmp_path / "w2.jsonl", LATER))
    assert (total["stored"], total["already_present"]) == (2, 0)
    assert _turns(db_path) == [
        ("c1", 0, "user", "how do I export invoices"),
        ("c1", 1, "assistant", "Go to Billing > Export."),
        ("c1", 2, "user", "and as csv?"),
        ("c1", 3, "assistant", "I don't know."),
    ]


def test_an_overlapping_export_adds_only_the_new_turns(tmp_path, db_path):
    _import(db_path, write_jsonl(tmp_path / "w1.jsonl", WEEK1))
    # the last stored turn again, and the new ones before it in the file
    total = _import(db_path, write_jsonl(tmp_path / "all.jsonl", LATER + WEEK1[1:]))
    assert (total["stored"], total["already_present"]) == (2, 1)
    assert [t[1:3] for t in _turns(db_path)] == [
        (0, "user"), (1, "assistant"), (2, "user"), (3, "assistant"),
    ]  # fmt: skip
    # and once more, with one turn more: only it is new
    more = [_turn("c1", "2026-12-02T08:00:00Z", "user", "still there?")]
    total = _import(db_path, write_jsonl(tmp_path / "all2.jsonl", WEEK1 + LATER + more))
    assert (total["stored"], total["already_present"]) == (1, 4)
    assert _turns(db_path)[-1] == ("c1", 4, "user", "still there?")


def test_turns_of_the_same_second_and_role_are_each_kept(tmp_path, db_path):
    """A bot's answer in two messages of one second: two turns, in the next file as in the
    first, and both known again when the file is re-exported with more."""
    _import(db_path, write_jsonl(tmp_path / "w1.jsonl", WEEK1))
    burst = [
        _turn("c1", "2026-12-01T09:00:00Z", "user", "and as csv?"),
        _turn("c1", "2026-12-01T09:00:04Z", "assistant", "Choose CSV"),
        _turn("c1", "2026-12-01T09:00:04Z", "assistant", "then Download."),
    ]
    assert _import(db_path, write_jsonl(tmp_path / "w2.jsonl", burst))["stored"] == 3
    total = _import(db_path, write_jsonl(tmp_path / "w2b.jsonl", [*burst, *WEEK1]))
    assert (total["stored"], total["already_present"]) == (0, 5)
    assert [t[3] for t in _turns(db_path)][2:] == ["and as csv?", "Choose CSV", "then Download."]


def test_a_redacted_conversation_goes_on_under_its_pseudonym(tmp_path, db_path):
    """Keyed by the customer's email, the conversation is stored under a pseudonym, and its
    texts redacted: the next file's turns still find it, and its stored turns are known."""
    conv = "ana.lopez@example.com"
    first = [
        _turn(conv, "2026-11-30T10:00:00Z", "user", "my email is ana.lopez@example.com"),
        _turn(conv, "2026-11-30T10:00:05Z", "assistant", "Thanks, found your account."),
    ]
    _import(db_path, write_jsonl(tmp_path / "w1.jsonl", first))
    later = [_turn(conv, "2026-12-01T09:00:00Z", "user", "any news?")]
    total = _import(db_path, write_jsonl(tmp_path / "w2.jsonl", first[1:] + later))
    assert (total["stored"], total["already_present"]) == (1, 1)
    stored = _turns(db_path)
    assert len({t[0] for t in stored}) == 1 and "@" not in stored[0][0]
    assert [t[1:] for t in stored] == [
        (0, "user", "my email is <EMAIL>"),
        (1, "assistant", "Thanks, found your account."),
        (2, "user", "any news?"),
    ]


def test_a_turn_numbered_by_the_file_keeps_its_number(tmp_path, db_path):
    """A file that numbers its turns is taken at its word, as before."""
    rows = [{**t, "turn": n} for n, t in enumerate(WEEK1)]
    _import(db_path, write_jsonl(tmp_path / "w1.jsonl", rows))
    total = _import(db_path, write_jsonl(tmp_path / "w2.jsonl", [{**LATER[0], "turn": 1}]))
    assert (total["stored"], total["already_present"]) == (0, 1)


def test_the_command_numbers_the_next_weeks_turns_with_the_store_let_go(tmp_path, db_path, cli):
    """``goldmine ingest chat`` stages a file with the store let go (other readers may open it),
    reading the stored turns from a copy: the same numbers as with the store held."""
    for name, rows in (("w1.jsonl", WEEK1), ("w2.jsonl", LATER + WEEK1[1:])):
        path = write_jsonl(tmp_path / name, rows)
        result = cli("--db", str(db_path), "ingest", "chat", str(path), "--json")
        assert result.returncode == 0, result.stderr
    assert [t[1:3] for t in _turns(db_path)] == [
        (0, "user"), (1, "assistant"), (2, "user"), (3, "assistant"),
    ]  # fmt: skip


def test_new_turns_of_the_same_day_or_of_no_time_are_not_taken_for_stored_ones(tmp_path, db_path):
    """An export that dates its turns by the day, or not at all: the next file's turns have the
    same time (or none) and role as stored ones, and their text tells them apart."""
    for ts in ("2024-01-01", None):
        conv = f"c-{ts}"
        first = [_turn(conv, ts, "user", "first question"), _turn(conv, ts, "assistant", "one")]
        later = [_turn(conv, ts, "user", "second question"), _turn(conv, ts, "assistant", "two")]
        _import(db_path, write_jsonl(tmp_path / f"a{ts}.jsonl", first))
        total = _import(db_path, write_jsonl(tmp_path / f"b{ts}.jsonl", later))
        assert (total["stored"], total["already_present"]) == (2, 0), ts
        total = _import(db_path, write_jsonl(tmp_path / f"c{ts}.jsonl", later + first))
        assert (total["stored"], total["already_present"]) == (0, 4), ts
        texts = [t[3] for t in _turns(db_path) if t[0] == conv]
        assert texts == ["first question", "one", "second question", "two"], ts
