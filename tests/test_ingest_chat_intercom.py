"""Intercom conversations read as chat, with no converter to write.

Intercom's REST API gives a conversation as its first message (``source``, or
``conversation_message`` in API 1.0) and the rest under ``conversation_parts``: comments by the
customer (``user``, ``lead``, ``contact``) or the team (``admin``, ``bot``), internal notes, and
events (assignment, close, snooze) that may carry a reply's body. Bodies are HTML. Listing
conversations gives each without its parts. goldmine refused all of these; it now reads them as
Intercom writes them.
"""

from __future__ import annotations

import json

from goldmine.ingest import api
from goldmine.store import open_store

from helpers import refused, stored_turns, write_jsonl

CONVERSATION = {
    "type": "conversation", "id": "1911149811", "created_at": 1784900000,
    "updated_at": 1784900900, "title": None, "state": "closed", "open": False,
    "source": {"type": "conversation", "id": "403918396", "delivered_as": "customer_initiated",
               "subject": "", "body": "<p>Hi, how do I export my invoices &amp; receipts?</p>",
               "author": {"type": "user", "id": "5310d8e8", "name": "Ana Lopez",
                          "email": "ana.lopez@example.com"},
               "attachments": [], "url": None, "redacted": False},
    "contacts": {"type": "contact.list", "contacts": [{"type": "contact", "id": "5310d8e8"}]},
    "teammates": {"type": "admin.list", "admins": [{"type": "admin", "id": "991"}]},
    "conversation_rating": {"rating": 1, "remark": "not helpful", "created_at": 1784900950,
                            "contact": {"type": "contact", "id": "5310d8e8"},
                            "teammate": {"type": "admin", "id": "991"}},
    "conversation_parts": {"type": "conversation_part.list", "total_count": 5,
        "conversation_parts": [
            {"type": "conversation_part", "id": "4410", "part_type": "assignment",
             "body": None, "created_at": 1784900050, "author": {"type": "bot", "id": "7"},
             "attachments": [], "redacted": False},
            {"type": "conversation_part", "id": "4411", "part_type": "note",
             "body": "<p>customer on the legacy plan</p>", "created_at": 1784900080,
             "author": {"type": "admin", "id": "991", "name": "Sam"}, "attachments": []},
            {"type": "conversation_part", "id": "4412", "part_type": "comment",
             "body": "<p>Go to Billing &gt; Invoices.</p><p>Then choose <b>Export</b>.</p>",
             "created_at": 1784900100, "author": {"type": "admin", "id": "991", "name": "Sam"},
             "attachments": []},
            {"type": "conversation_part", "id": "4413", "part_type": "comment",
             "body": "<p>There is no Export button on my screen?</p>",
             "created_at": 1784900200,
             "author": {"type": "user", "id": "5310d8e8", "name": "Ana Lopez"}},
            {"type": "conversation_part", "id": "4414", "part_type": "close",
             "body": "<p>It is only on the Pro plan, sorry.</p>", "created_at": 1784900300,
             "author": {"type": "admin", "id": "991", "name": "Sam"}},
        ]},
}  # fmt: skip


def _turns(db_path) -> list[tuple]:
    return stored_turns(db_path, "conversation_id, turn, role, user_id, text, feedback")


def test_an_intercom_conversation_is_read_as_its_turns(tmp_path, db_path):
    path = write_jsonl(tmp_path / "intercom.jsonl", [CONVERSATION])
    with open_store(db_path) as con:
        total = api.chat(con, [path]).total
        reasons = con.execute("SELECT reason FROM rejects ORDER BY reason").fetchall()
    # the first message and five parts: an event and an internal note rejected as such
    assert (total["rows_in"], total["stored"], total["rejected"]) == (6, 4, 2)
    assert reasons == [("internal note, not a message",), ("not a message: Intercom assignment",)]
    assert _turns(db_path) == [
        ("1911149811", 0, "user", "5310d8e8",
         "Hi, how do I export my invoices & receipts?", None),
        ("1911149811", 3, "assistant", "991", "Go to Billing > Invoices.\nThen choose Export.",
         None),
        ("1911149811", 4, "user", "5310d8e8", "There is no Export button on my screen?", None),
        # the reply that closed it, and the conversation's 1-star rating on it
        ("1911149811", 5, "assistant", "991", "It is only on the Pro plan, sorry.", "down"),
    ]  # fmt: skip
    with open_store(db_path) as con:
        stored = json.dumps(con.execute("SELECT * FROM chat_turns").fetchall(), default=str)
    assert "Ana Lopez" not in stored and "example.com" not in stored and "legacy" not in stored


def test_a_conversation_read_again_with_more_parts_adds_only_those(tmp_path, db_path):
    path = write_jsonl(tmp_path / "a.jsonl", [CONVERSATION])
    with open_store(db_path) as con:
        api.chat(con, [path])
    parts = CONVERSATION["conversation_parts"]
    more = {**CONVERSATION, "conversation_parts": {**parts, "conversation_parts": [
        *parts["conversation_parts"],
        {"type": "conversation_part", "id": "4415", "part_type": "open",
         "body": "<p>How do I upgrade to Pro then?</p>", "created_at": 1784990000,
         "author": {"type": "user", "id": "5310d8e8"}},
    ]}}  # fmt: skip
    with open_store(db_path) as con:
        total = api.chat(con, [write_jsonl(tmp_path / "b.jsonl", [more])]).total
    assert (total["stored"], total["already_present"], total["rejected"]) == (1, 4, 2)
    assert _turns(db_path)[-1][1:5] == (6, "user", "5310d8e8", "How do I upgrade to Pro then?")


def test_a_conversation_list_page_gives_each_first_message(tmp_path, db_path):
    """GET /conversations lists conversations without their parts: each one's first message is
    still the customer's question."""
    listed = {k: v for k, v in CONVERSATION.items() if k != "conversation_parts"}
    path = tmp_path / "intercom_list.json"
    path.write_text(json.dumps({
        "type": "conversation.list", "total_count": 2,
        "pages": {"type": "pages", "page": 1, "per_page": 20, "total_pages": 1},
        "conversations": [listed, {**listed, "id": "1911149812", "conversation_rating": None,
                                   "source": {**listed["source"], "body": "<p>Refund please</p>"}}],
    }))  # fmt: skip
    with open_store(db_path) as con:
        total = api.chat(con, [path]).total
    assert (total["stored"], total["rejected"]) == (2, 0)
    assert [t[:5] for t in _turns(db_path)] == [
        ("1911149811", 0, "user", "5310d8e8", "Hi, how do I export my invoices & receipts?"),
        ("1911149812", 0, "user", "5310d8e8", "Refund please"),
    ]  # fmt: skip


def test_api_1_0_conversation_message(tmp_path, db_path):
    """API 1.0 named the first message ``conversation_message``; here a team's outbound message
    that the customer answered."""
    old = {
        "type": "conversation", "id": "147", "created_at": 1400850973,
        "conversation_message": {"type": "conversation_message", "subject": "",
            "body": "<p>Hi Alice,</p>\n\n<p>do you have any questions?</p>",
            "author": {"type": "admin", "id": "25"}, "attachments": []},
        "user": {"type": "user", "id": "536e564f"},
        "conversation_parts": {"type": "conversation_part.list", "conversation_parts": [
            {"type": "conversation_part", "id": "4412", "part_type": "comment",
             "body": "<p>How do I add a teammate?</p>", "created_at": 1400857494,
             "author": {"type": "user", "id": "536e564f"}, "attachments": []}]},
    }  # fmt: skip
    path = write_jsonl(tmp_path / "v1.jsonl", [old])
    with open_store(db_path) as con:
        api.chat(con, [path])
    assert [t[1:5] for t in _turns(db_path)] == [
        (0, "assistant", "25", "Hi Alice,\n\ndo you have any questions?"),
        (1, "user", "536e564f", "How do I add a teammate?"),
    ]  # fmt: skip


def test_intercom_conversations_given_as_tickets_point_to_chat(tmp_path):
    path = write_jsonl(tmp_path / "intercom.jsonl", [CONVERSATION])
    error = refused(tmp_path, "tickets", str(path))
    assert "Intercom" in error and "ingest chat" in error


def test_a_part_with_no_author_is_not_taken_for_the_teams(tmp_path, db_path):
    parts = CONVERSATION["conversation_parts"]
    odd = {**CONVERSATION, "conversation_parts": {**parts, "conversation_parts": [
        {"type": "conversation_part", "id": "4420", "part_type": "comment",
         "body": "<p>still broken</p>", "created_at": 1784900400, "author": None},
    ]}}  # fmt: skip
    path = write_jsonl(tmp_path / "odd.jsonl", [odd])
    with open_store(db_path) as con:
        total = api.chat(con, [path]).total
        reasons = con.execute("SELECT reason FROM rejects").fetchall()
    assert (total["stored"], total["rejected"]) == (1, 1)
    assert reasons == [("not a message: Intercom part with no author",)]
