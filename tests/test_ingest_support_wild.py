"""Tickets and chat as the help desks and chat tools export them, read with no converter.

Each file is written as its tool writes it: Freshdesk's ticket JSON (``description`` HTML beside
``description_text``) and its CSV export ("Ticket ID", "Created time", "Contact ID", "Full
name"), Zendesk's CSV export from the UI ("Requester" is the requester's name, "Requester id" the
id), Jira Service Management's CSV ("Issue key", "Reporter", dates as ``20/Jul/26 10:02 AM``),
GitHub's issues JSON (``user`` an object). Help Scout's conversations are read as tickets
(``test_ingest_tickets_helpscout.py``); Slack channel exports and Intercom conversations as chat
(``test_ingest_chat_slack.py``, ``test_ingest_chat_intercom.py``).
"""

from __future__ import annotations

import csv
import json
from datetime import datetime
from pathlib import Path

import pytest

from goldmine.ingest import api
from goldmine.store import open_store

from helpers import refused, write_jsonl


def write_csv(path: Path, header: list[str], rows: list[list[str]]) -> Path:
    with path.open("w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(header)
        writer.writerows(rows)
    return path


def tickets(path: Path, db_path: Path) -> list[tuple]:
    """Import ``path`` as tickets, none rejected, and give the stored tickets."""
    with open_store(db_path) as con:
        result = api.tickets(con, [path], redact=False)
        assert result.total["rejected"] == 0
        return con.execute(
            "SELECT ticket_id, ts, user_id, subject, body, question FROM tickets ORDER BY 1"
        ).fetchall()


def test_freshdesk_json_keeps_the_description_as_text(tmp_path, db_path):
    path = tmp_path / "freshdesk.json"
    path.write_text(json.dumps([{
        "id": 20, "subject": "Support needed..",
        "description": "<div>Some details on the issue ...<br>How do I reset my password?</div>",
        "description_text": "Some details on the issue ...\nHow do I reset my password?",
        "status": 2, "priority": 1, "requester_id": 129, "source": 2,
        "created_at": "2026-07-20T12:32:09Z", "updated_at": "2026-07-20T12:32:09Z",
        "custom_fields": {}, "tags": [], "cc_emails": [], "spam": False,
    }]))  # fmt: skip
    assert tickets(path, db_path) == [(
        "20", datetime(2026, 7, 20, 12, 32, 9), "129", "Support needed..",
        "Some details on the issue ...\nHow do I reset my password?",
        "Support needed..: How do I reset my password?",
    )]  # fmt: skip


def test_freshdesk_csv_export_has_its_time_and_contact(tmp_path, db_path):
    path = write_csv(tmp_path / "freshdesk.csv", [
        "Ticket ID", "Subject", "Description", "Status", "Priority", "Source", "Type", "Agent",
        "Group", "Created time", "Due by Time", "Resolved time", "Closed time",
        "Last update time", "Tags", "Full name", "Contact ID", "Email",
    ], [[
        "20", "Support needed", "Some details on the issue. How do I reset my password?",
        "Open", "Low", "Email", "", "", "", "2026-07-20 12:32:09", "", "", "", "", "",
        "Jane Roe", "129", "jane@example.com",
    ]])  # fmt: skip
    assert tickets(path, db_path) == [(
        "20", datetime(2026, 7, 20, 12, 32, 9), "129", "Support needed",
        "Some details on the issue. How do I reset my password?",
        "Support needed: How do I reset my password?",
    )]  # fmt: skip


def test_zendesk_ui_csv_stores_the_requester_id_never_the_name(tmp_path, db_path):
    path = write_csv(tmp_path / "zendesk.csv", [
        "Id", "Requester", "Requester id", "Requester external id", "Requester email",
        "Requester domain", "Submitter", "Assignee", "Group", "Subject", "Tags", "Status",
        "Priority", "Via", "Ticket type", "Created at", "Updated at",
    ], [[
        "101", "Jane Roe", "3621", "", "jane@example.com", "example.com", "Jane Roe", "Agent A",
        "Support", "Cannot log in with SSO", "sso", "Open", "Normal", "Web form", "Question",
        "2026-07-20 10:02", "2026-07-20 11:00",
    ]])  # fmt: skip
    assert tickets(path, db_path) == [(
        "101", datetime(2026, 7, 20, 10, 2), "3621", "Cannot log in with SSO", None,
        "Cannot log in with SSO",
    )]  # fmt: skip


def test_jira_service_management_csv(tmp_path, db_path):
    path = write_csv(tmp_path / "jira.csv", [
        "Summary", "Issue key", "Issue id", "Issue Type", "Status", "Priority", "Assignee",
        "Reporter", "Creator", "Created", "Updated", "Description",
    ], [
        ["VPN keeps dropping", "HELP-12", "10012", "Service Request", "Waiting for support",
         "Medium", "", "jdoe", "jdoe", "20/Jul/26 10:02 AM", "20/Jul/26 11:00 AM",
         "Since Monday the VPN drops every hour. Is there a fix?"],
        ["Printer offline", "HELP-13", "10013", "Incident", "Open", "High", "", "asmith",
         "asmith", "3/Aug/26 9:15 PM", "3/Aug/26 9:15 PM", "Who can restart it?"],
    ])  # fmt: skip
    assert tickets(path, db_path) == [
        ("HELP-12", datetime(2026, 7, 20, 10, 2), "jdoe", "VPN keeps dropping",
         "Since Monday the VPN drops every hour. Is there a fix?",
         "VPN keeps dropping: Is there a fix?"),
        ("HELP-13", datetime(2026, 8, 3, 21, 15), "asmith", "Printer offline",
         "Who can restart it?", "Printer offline: Who can restart it?"),
    ]  # fmt: skip


def test_github_issues_export_names_its_author(tmp_path, db_path):
    path = tmp_path / "issues.json"
    path.write_text(json.dumps([{
        "url": "https://api.github.com/repos/o/r/issues/1347", "id": 1, "node_id": "MDU6",
        "number": 1347, "title": "Found a bug", "user": {"login": "octocat", "id": 583231},
        "labels": [{"name": "bug"}], "state": "open", "locked": False, "comments": 5,
        "created_at": "2026-07-20T20:09:31Z", "updated_at": "2026-07-20T20:09:31Z",
        "author_association": "NONE",
        "body": "I'm having a problem with this. Why does it crash on start?",
    }]))  # fmt: skip
    assert [row[2] for row in tickets(path, db_path)] == ["583231"]
    with open_store(db_path) as con:  # GitHub counts the comments where Zendesk lists them
        assert con.execute("SELECT extra FROM tickets").fetchall() == [('{"n_comments":5}',)]


# One page of Zendesk's incremental export (GET /api/v2/incremental/tickets/cursor.json).
ZENDESK_PAGE = {
    "tickets": [{
        "url": "https://acme.zendesk.com/api/v2/tickets/35436.json", "id": 35436,
        "via": {"channel": "web"}, "created_at": "2026-07-20T22:55:29Z",
        "updated_at": "2026-07-21T01:03:11Z", "type": "incident",
        "subject": "Help, my printer is on fire!", "raw_subject": "Help, my printer is on fire!",
        "description": "The fire is very colorful. How do I put it out?", "priority": "high",
        "status": "open", "requester_id": 20978392, "submitter_id": 76872, "tags": [],
    }],
    "after_url": "https://acme.zendesk.com/api/v2/incremental/tickets/cursor.json?cursor=MTU3",
    "after_cursor": "MTU3", "before_url": None, "before_cursor": None, "end_of_stream": True,
}  # fmt: skip


def test_zendesk_pages_saved_one_a_file_import(tmp_path, db_path):
    pages = tmp_path / "pages"
    pages.mkdir()
    for n, ticket_id in enumerate((35436, 35437), 1):
        ticket = {**ZENDESK_PAGE["tickets"][0], "id": ticket_id}
        (pages / f"page{n}.json").write_text(json.dumps({**ZENDESK_PAGE, "tickets": [ticket]}))
    with open_store(db_path) as con:
        api.tickets(con, [pages], redact=False)
    assert [row[0] for row in tickets(pages / "page1.json", db_path)] == ["35436", "35437"]


def test_zendesk_pages_as_json_lines_are_named_with_the_way_that_reads_them(tmp_path):
    path = write_jsonl(tmp_path / "zendesk.jsonl", [ZENDESK_PAGE, ZENDESK_PAGE])
    error = refused(tmp_path, "tickets", str(path))
    assert "'tickets'" in error and "one page a .json file" in error


# Langfuse's blob storage export, enriched observations (observations_v2/*.jsonl): snake_case
# fields, input and output as JSON text.
LANGFUSE_BLOB = {
    "id": "o1", "trace_id": "t1", "project_id": "p1", "environment": "default",
    "type": "RETRIEVER", "name": "retrieve", "start_time": "2026-07-20 10:00:00.000000",
    "end_time": "2026-07-20 10:00:01.000000", "parent_observation_id": None,
    "level": "DEFAULT", "status_message": None,
    "input": json.dumps({"query": "when are invoices sent"}),
    "output": json.dumps([{"page_content": "Invoices go out on the 1st.",
                           "metadata": {"chunk_id": "inv-1"}}]),
    "session_id": "s1", "user_id": "u1", "trace_name": "rag",
}  # fmt: skip


def test_langfuse_blob_storage_export_is_named_not_read_as_nothing(tmp_path):
    path = write_jsonl(tmp_path / "observations_v2.jsonl", [LANGFUSE_BLOB])
    for forced in ((), ("--format", "langfuse")):
        error = refused(tmp_path, "traces", *forced, str(path))
        assert "blob storage" in error and "not read" in error


def test_langfuse_traces_table_export_is_named(tmp_path):
    path = tmp_path / "traces.json"
    path.write_text(json.dumps([{
        "id": "t1", "timestamp": "2026-07-20T10:00:00.000Z", "name": "rag", "userId": "u1",
        "sessionId": "s1", "input": {"question": "when are invoices sent"},
        "output": {"answer": "On the 1st."}, "metadata": {}, "tags": [], "latency": 1.2,
    }]))  # fmt: skip
    error = refused(tmp_path, "traces", str(path))
    assert "observations" in error and "traces table" in error


def test_phoenix_spans_dataframe_saved_as_parquet(tmp_path):
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame([{
        "name": "retrieve", "span_kind": "RETRIEVER", "parent_id": "p0",
        "start_time": pd.Timestamp("2026-07-20T10:00:00Z"),
        "end_time": pd.Timestamp("2026-07-20T10:00:01Z"), "status_code": "OK",
        "status_message": "", "events": [], "context.span_id": "s2", "context.trace_id": "t1",
        "attributes.input.value": "refund time",
        "attributes.retrieval.documents": [{"document.id": "refund-1", "document.score": 0.91,
                                            "document.content": "Refunds take 5 days."}],
        "attributes.session.id": "sess-1", "attributes.openinference.span.kind": "RETRIEVER",
    }])  # fmt: skip
    # get_spans_dataframe() is indexed by the span id; saved with or without it
    frame.to_parquet(tmp_path / "spans.parquet")
    frame.set_index("context.span_id").to_parquet(tmp_path / "indexed.parquet")
    for name in ("spans.parquet", "indexed.parquet"):
        db = tmp_path / f"{name}.duckdb"
        with open_store(db) as con:
            api.traces(con, [tmp_path / name], redact=False)
            assert con.execute(
                "SELECT event_id, session_id, query, result_ids FROM search_events"
            ).fetchall() == [("openinference:t1:s2", "sess-1", "refund time", ["refund-1"])]
