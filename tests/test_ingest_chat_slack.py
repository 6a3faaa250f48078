"""A Slack export read as chat, with no converter to write.

A support channel's history is often the only chat log a team has. Slack's export is a folder
per channel of one JSON array per day, beside the workspace's ``users.json`` and
``channels.json``. Its messages name no conversation and no role, so goldmine refused them.
They are now read as Slack writes them: a thread is a conversation (``thread_ts``; a message
with no replies is one alone); whoever started the thread is the user and everyone else answers
(a bot, a colleague); a reply posted the next day joins its thread in that day's file;
join/leave/topic events are rejected as events; mrkdwn's links, mentions and entities are read
as Slack shows them; a thumbs-down reaction is negative feedback.
"""

from __future__ import annotations

import json
from pathlib import Path

from goldmine.ingest import api
from goldmine.store import open_store

from helpers import refused, stored_turns

THREAD = "1764500000.000100"


def _day(folder: Path, name: str, messages: list[dict]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text(json.dumps(messages, indent=4), encoding="utf-8")


def _export(root: Path) -> Path:
    """A workspace export as Slack writes it: metadata at the root, a folder per channel."""
    root.mkdir()
    (root / "users.json").write_text(json.dumps([
        {"id": "U01ABC", "name": "ana", "real_name": "Ana", "profile": {"title": "Engineer"}},
        {"id": "U03SUP", "name": "sam", "real_name": "Sam (support)"},
    ]))  # fmt: skip
    (root / "channels.json").write_text(json.dumps([
        {"id": "C024BE7LR", "name": "help", "created": 1764400000, "creator": "U03SUP",
         "members": ["U01ABC", "U03SUP"], "topic": {"value": "Ask here"}},
    ]))  # fmt: skip
    (root / "integration_logs.json").write_text(json.dumps({"logs": []}))
    _day(root / "help", "2025-11-30.json", [
        {"client_msg_id": "a1", "type": "message", "user": "U01ABC", "ts": THREAD,
         "text": "How do I rotate the API key for the &lt;staging&gt; project?",
         "thread_ts": THREAD, "reply_count": 3, "team": "T1",
         "user_profile": {"real_name": "Ana"}},
        {"type": "message", "subtype": "bot_message", "bot_id": "B01", "username": "helpbot",
         "text": "I don't know the answer to that, sorry.", "ts": "1764500010.000200",
         "thread_ts": THREAD, "parent_user_id": "U01ABC",
         "reactions": [{"name": "thumbsdown", "users": ["U01ABC"], "count": 1}]},
        {"type": "message", "subtype": "channel_join", "user": "U02XYZ",
         "text": "<@U02XYZ> has joined the channel", "ts": "1764500100.000300"},
        {"client_msg_id": "b1", "type": "message", "user": "U02XYZ", "ts": "1764500200.000400",
         "text": "where is the <https://example.com/billing|billing page> &amp; export? "
                 "cc <#C024BE7LR|help> <!here>"},
    ])  # fmt: skip
    _day(root / "help", "2025-12-01.json", [
        {"client_msg_id": "a2", "type": "message", "user": "U01ABC", "ts": "1764580000.000500",
         "text": "anyone? it is blocking the release", "thread_ts": THREAD,
         "parent_user_id": "U01ABC"},
        {"client_msg_id": "s1", "type": "message", "user": "U03SUP", "ts": "1764580100.000600",
         "text": "Settings > API > Rotate, see <https://docs.example.com/keys>",
         "thread_ts": THREAD, "parent_user_id": "U01ABC",
         "reactions": [{"name": "+1", "users": ["U01ABC"], "count": 1}]},
    ])  # fmt: skip
    return root


def _turns(db_path) -> list[tuple]:
    return stored_turns(db_path, "conversation_id, turn, role, user_id, text, feedback, dont_know")


def test_a_slack_export_folder_is_read_as_threads(tmp_path, db_path):
    root = _export(tmp_path / "export")
    with open_store(db_path) as con:
        result = api.chat(con, [root], redact=False)
    # the two day files only: the workspace's metadata is not chat
    assert sorted(Path(f.path).name for f in result.files) == ["2025-11-30.json", "2025-12-01.json"]
    assert (result.total["rows_in"], result.total["stored"], result.total["rejected"]) == (6, 5, 1)
    assert _turns(db_path) == [
        (THREAD, 0, "user", "U01ABC",
         "How do I rotate the API key for the <staging> project?", None, False),
        (THREAD, 1, "assistant", None, "I don't know the answer to that, sorry.", "down", True),
        (THREAD, 2, "user", "U01ABC", "anyone? it is blocking the release", None, False),
        (THREAD, 3, "assistant", "U03SUP",
         "Settings > API > Rotate, see https://docs.example.com/keys", "up", False),
        ("1764500200.000400", 0, "user", "U02XYZ",
         "where is the billing page & export? cc #help @here", None, False),
    ]  # fmt: skip
    with open_store(db_path) as con:
        reasons = con.execute("SELECT reason FROM rejects").fetchall()
    assert reasons == [("not a message: Slack channel_join",)]


def test_a_slack_day_file_read_again_adds_nothing(tmp_path, db_path):
    root = _export(tmp_path / "export")
    with open_store(db_path) as con:
        api.chat(con, [root / "help"])
    # the same days exported again, in one file: every turn is known
    merged = tmp_path / "again" / "help"
    days = sorted((root / "help").glob("*.json"))
    _day(merged, "all.json", [m for d in days for m in json.loads(d.read_text())])
    with open_store(db_path) as con:
        total = api.chat(con, [merged]).total
    assert (total["stored"], total["already_present"], total["rejected"]) == (0, 5, 1)


def test_a_reply_whose_thread_began_in_an_earlier_file_knows_its_asker(tmp_path, db_path):
    """A day file holding only replies: ``parent_user_id`` names the thread's starter, so the
    starter's reply is the user's turn and the colleague's the answer."""
    root = _export(tmp_path / "export")
    with open_store(db_path) as con:
        api.chat(con, [root / "help" / "2025-12-01.json"], redact=False)
    assert [t[1:4] for t in _turns(db_path)] == [
        (0, "user", "U01ABC"), (1, "assistant", "U03SUP"),
    ]  # fmt: skip


def test_a_slack_export_given_as_tickets_points_to_chat(tmp_path):
    """Taken as tickets, every message (a bot's answer, a join) became a ticket."""
    error = refused(tmp_path, "tickets", str(_export(tmp_path / "export")))
    assert "Slack" in error and "ingest chat" in error


def test_chat_with_a_type_user_and_ts_of_its_own_is_no_slack_export(tmp_path, db_path):
    """A chat log whose messages have a type, a user and a ts, its conversation and role under
    names goldmine knows (thread_id, sender), is read by those names, as before."""
    path = tmp_path / "chat.jsonl"
    path.write_text(
        '{"thread_id":"t1","type":"message","sender":"customer","user":"u42",'
        '"text":"how do I cancel my plan","ts":"2024-01-01T10:00:00Z"}\n'
        '{"thread_id":"t1","type":"message","sender":"agent","user":"agent7",'
        '"text":"go to settings","ts":"2024-01-01T10:01:00Z"}\n',
        encoding="utf-8",
    )
    with open_store(db_path) as con:
        api.chat(con, [path], redact=False)
    assert [t[:3] for t in _turns(db_path)] == [("t1", 0, "user"), ("t1", 1, "assistant")]


def test_tickets_with_a_type_user_text_and_ts_are_no_slack_export(tmp_path, db_path):
    path = tmp_path / "tickets.csv"
    path.write_text(
        "id,type,user,subject,text,ts\nT1,question,u1,Cannot export,How do I export my data?,"
        "2024-01-01\n",
        encoding="utf-8",
    )
    with open_store(db_path) as con:
        assert api.tickets(con, [path]).total["stored"] == 1


def test_a_slack_message_keeps_none_of_its_authors_profile(tmp_path, db_path):
    """Slack writes the author's profile (real name, display name, avatar) and the message's
    blocks beside each message: names no redaction pattern finds, and the text again. Only the
    fields a turn needs are kept, the author by their id."""
    root = _export(tmp_path / "export")
    day = root / "help" / "2025-11-30.json"
    messages = json.loads(day.read_text())
    messages[0]["user_profile"] = {"real_name": "Ana Lopez", "display_name": "ana.l",
                                   "image_72": "https://avatars.example/ana.png"}  # fmt: skip
    messages[0]["blocks"] = [{"type": "rich_text", "elements": [{"type": "text", "text": "How"}]}]
    day.write_text(json.dumps(messages))
    with open_store(db_path) as con:
        api.chat(con, [root])
        stored = json.dumps(con.execute("SELECT * FROM chat_turns").fetchall(), default=str)
    assert "Lopez" not in stored and "ana.l" not in stored and "avatars" not in stored
    assert "rich_text" not in stored and "U01ABC" in stored


def test_a_rejected_slack_event_keeps_none_of_its_authors_profile(tmp_path, db_path):
    """A join event is rejected, and a reject keeps its record for reading: not the profile
    Slack writes beside it."""
    root = _export(tmp_path / "export")
    day = root / "help" / "2025-11-30.json"
    messages = json.loads(day.read_text())
    messages[2]["user_profile"] = {"real_name": "Bo Svensson", "display_name": "bo"}
    day.write_text(json.dumps(messages))
    with open_store(db_path) as con:
        api.chat(con, [root])
        raws = con.execute("SELECT raw FROM rejects").fetchall()
    assert len(raws) == 1 and "channel_join" in raws[0][0] and "Svensson" not in raws[0][0]
