"""Tickets and chat as the help desks and chat tools export them, read with no converter.

Each file is written as its tool writes it: Freshdesk's ticket JSON (``description`` HTML beside
``description_text``) and its CSV export ("Ticket ID", "Created time", "Contact ID", "Full
name"), Zendesk's CSV export from the UI ("Requester" is the requester's name, "Requester id" the
id), Jira Service Management's CSV ("Issue key", "Reporter", dates as ``20/Jul/26 10:02 AM``),
GitHub's issues JSON (``user`` an object) and a Slack channel export (a folder of per-day JSON
arrays, replies naming their thread by ``thread_ts``).
"""

from __future__ import annotations

import csv
import json
from datetime import datetime
from pathlib import Path

from goldmine.ingest import api
from goldmine.store import open_store


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
        "labels": [{"name": "bug"}], "state": "open", "locked": False, "comments": 0,
        "created_at": "2026-07-20T20:09:31Z", "updated_at": "2026-07-20T20:09:31Z",
        "author_association": "NONE",
        "body": "I'm having a problem with this. Why does it crash on start?",
    }]))  # fmt: skip
    assert [row[2] for row in tickets(path, db_path)] == ["583231"]
