"""Help Scout's conversations read as tickets, with no converter to write.

Help Scout's Mailbox API 2.0 lists conversations as HAL: a page's conversations sit under
``_embedded.conversations``, and with ``embed=threads`` each holds its threads (newest first)
under its own ``_embedded``: the customer's messages, the team's replies, internal notes and
line items. goldmine refused the layout. Now each conversation is a ticket: its subject, its
customer's first message (else the conversation's ``preview``) as the description, its
``createdAt`` and its primary customer's id (never the name or email beside it).
"""

from __future__ import annotations

import json

from goldmine.ingest import api
from goldmine.store import open_store

from helpers import write_jsonl

CUSTOMER = {"id": 5, "type": "customer", "first": "Ana", "last": "Lopez",
            "email": "ana.lopez@example.com"}  # fmt: skip
THREADED = {
    "id": 10, "number": 12, "threads": 3, "type": "email", "folderId": 1, "status": "closed",
    "state": "published", "subject": "Refund question", "preview": "Hi, how long does a",
    "mailboxId": 1, "createdBy": CUSTOMER, "createdAt": "2026-07-20T11:00:00Z",
    "closedAt": "2026-07-21T09:00:00Z", "source": {"type": "email", "via": "customer"},
    "tags": [{"id": 1, "color": "#929499", "tag": "refund"}], "primaryCustomer": CUSTOMER,
    "customFields": [],
    "_embedded": {"threads": [  # newest first, as the API lists them
        {"id": 3, "type": "reply", "status": "closed", "state": "published",
         "body": "<p>Five working days.</p>", "createdAt": "2026-07-21T09:00:00Z",
         "createdBy": {"id": 99, "type": "user", "email": "sam@acme.example"}},
        {"id": 2, "type": "note", "body": "<p>VIP customer</p>",
         "createdAt": "2026-07-20T12:00:00Z", "createdBy": {"id": 99, "type": "user"}},
        {"id": 1, "type": "customer", "status": "active", "state": "published",
         "body": "<div>Hi,<br>How long does a refund take to reach my card?</div>"
                 "<div><br></div><div>Thanks, Ana</div>",
         "createdAt": "2026-07-20T11:00:00Z", "customer": CUSTOMER, "createdBy": CUSTOMER},
    ]},
    "_links": {"self": {"href": "https://api.helpscout.net/v2/conversations/10"}},
}  # fmt: skip
UNTHREADED = {
    "id": 11, "number": 13, "type": "email", "status": "active", "subject": "Invoice address",
    "preview": "Can I change the address on an invoice already sent?",
    "createdAt": "2026-07-22T08:30:00Z", "primaryCustomer": {"id": 6, "email": "b@example.com"},
    "_embedded": {"threads": []},
}  # fmt: skip
PAGE = {
    "_embedded": {"conversations": [THREADED, UNTHREADED]},
    "_links": {"self": {"href": "https://api.helpscout.net/v2/conversations?page=1"}},
    "page": {"size": 25, "totalElements": 2, "totalPages": 1, "number": 1},
}


def _tickets(db_path) -> list[tuple]:
    with open_store(db_path) as con:
        return con.execute(
            "SELECT ticket_id, ts::VARCHAR, user_id, subject, question, status FROM tickets "
            "ORDER BY ticket_id"
        ).fetchall()


EXPECTED = [
    ("10", "2026-07-20 11:00:00", "5", "Refund question",
     "Refund question: How long does a refund take to reach my card?", "closed"),
    ("11", "2026-07-22 08:30:00", "6", "Invoice address",
     "Invoice address: Can I change the address on an invoice already sent?", "active"),
]  # fmt: skip


def test_a_help_scout_page_of_conversations_is_read_as_tickets(tmp_path, db_path):
    path = tmp_path / "helpscout.json"
    path.write_text(json.dumps(PAGE), encoding="utf-8")
    with open_store(db_path) as con:
        total = api.tickets(con, [path]).total
        stored = json.dumps(con.execute("SELECT * FROM tickets").fetchall(), default=str)
    assert (total["rows_in"], total["stored"], total["rejected"]) == (2, 2, 0)
    assert _tickets(db_path) == EXPECTED
    assert "Lopez" not in stored and "example" not in stored and "VIP" not in stored
    assert "Five working days" not in stored  # the team's reply is no part of the ticket
    with open_store(db_path) as con:
        body = con.execute("SELECT body FROM tickets WHERE ticket_id = '10'").fetchall()[0][0]
    assert body == "Hi,\nHow long does a refund take to reach my card?\n\nThanks, Ana"


def test_help_scout_conversations_as_json_lines(tmp_path, db_path):
    path = write_jsonl(tmp_path / "conversations.jsonl", [THREADED, UNTHREADED])
    with open_store(db_path) as con:
        api.tickets(con, [path])
    assert _tickets(db_path) == EXPECTED


def test_one_conversation_saved_as_a_json_file_is_one_ticket(tmp_path, db_path):
    """GET /v2/conversations/{id}?embed=threads saved as it comes: its own _embedded holds its
    threads, which are no tickets."""
    folder = tmp_path / "conversations"
    folder.mkdir()
    for conversation in (THREADED, UNTHREADED):
        (folder / f"{conversation['id']}.json").write_text(json.dumps(conversation))
    with open_store(db_path) as con:
        api.tickets(con, [folder])
    assert _tickets(db_path) == EXPECTED
