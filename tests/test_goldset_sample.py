"""Sample data for the gold-set tests (no tests here): a corpus snapshot, triage rows, traffic.

Written with SQL straight into the tables the other stages own, so the gold-set tests depend on
their schemas only, not on their commands.
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

from goldmine.store import open_store, transaction
from goldmine.text import normalize_query, sha256_text

CHUNKS = {
    "kb-reset-1": (
        "Reset your password",
        "To reset your password open Settings, choose Security "
        "and press Reset password. A link is emailed to you and expires in one hour.",
    ),
    "kb-reset-2": (
        "Password rules",
        "Passwords need twelve characters. You cannot reuse any of your last five passwords.",
    ),
    "kb-sso-1": (
        "Single sign-on (SSO)",
        "SSO lets your team sign in with Okta or Azure AD. An "
        "admin enables SSO under Settings, Authentication, SAML.",
    ),
    "kb-vpn-1": (
        "VPN access",
        "The VPN client connects you to the office network. Install it "
        "from the portal and sign in with your company account.",
    ),
    "kb-vpn-2": (
        "VPN on mobile",
        "On iOS and Android, install the VPN app from the store and "
        "scan the QR code shown in the portal to configure the mobile VPN.",
    ),
    "kb-invoice-1": (
        "Download invoices",
        "Invoices are under Billing, History. Each invoice can "
        "be downloaded as a PDF or sent by email to the billing contact.",
    ),
    "kb-invoice-2": (
        "Change billing address",
        "Update the billing address under Billing, Details; it appears on the next invoice.",
    ),
    "kb-2fa-1": (
        "Two-factor authentication (2FA)",
        "Turn on 2FA under Security. You can use an "
        "authenticator app or SMS codes; keep your recovery codes safe.",
    ),
    "kb-export-1": (
        "Export your data",
        "Export all projects as a ZIP file under Settings, Data, "
        "Export. Large exports are emailed when ready.",
    ),
    "kb-api-1": (
        "API keys",
        "Create an API key under Developer settings. Keys can be scoped to "
        "read or write and revoked at any time.",
    ),
}

# norm text, cluster, n_events, failure_rate, tags
QUERIES = [
    ("reset password", 1, 400, 0.10, ["keyword"]),
    ("how do i reset my password", 1, 120, 0.20, ["question"]),
    ("pasword reset", 1, 30, 0.60, ["keyword", "typo"]),
    ("vpn setup", 2, 150, 0.30, ["acronym", "keyword"]),
    ("and on mobile", 2, 20, 0.50, ["follow-up"]),
    ("download invoice", 3, 90, 0.05, ["keyword"]),
    ("invoice pdf", 3, 40, 0.10, ["keyword"]),
    ("sso okta", 4, 35, 0.70, ["acronym", "keyword"]),
    ("how to turn on 2fa", 5, 25, 0.40, ["acronym", "question"]),
    ("export my data", 6, 12, 0.20, ["keyword"]),
    ("api key scopes", 7, 8, 0.25, ["acronym", "keyword"]),
    ("refund in bitcoin", 8, 3, 1.00, ["no-answer-likely", "keyword"]),
    ("dark mode", 9, 2, 1.00, ["no-answer-likely", "keyword"]),
    ("change billing address", 10, 2, 0.00, ["keyword"]),
]


def build(db: Path, chunks: dict[str, tuple[str, str]] | None = None) -> None:
    """A fresh store with snapshot 1 of CHUNKS, the triage rows and a little raw traffic."""
    with open_store(db) as con, transaction(con):
        add_snapshot(con, chunks or CHUNKS)
        clusters: dict[int, list] = {}
        for text, cluster, n, rate, tags in QUERIES:
            failed = round(n * rate)
            con.execute(
                """INSERT INTO triage_queries (norm_query, query, cluster_id, n_events,
                       n_sessions, sources, first_seen, last_seen, n_zero_results, n_no_click,
                       n_failed, failure_rate, tags)
                   VALUES (?, ?, ?, ?, ?, ['searchlog'], ?, ?, ?, ?, ?, ?, ?)""",
                [
                    normalize_query(text),
                    text,
                    cluster,
                    n,
                    n,
                    datetime(2026, 1, 5),
                    datetime(2026, 11, 30),
                    failed // 2,
                    failed - failed // 2,
                    failed,
                    rate,
                    tags,
                ],
            )
            clusters.setdefault(cluster, []).append((text, n, failed, tags))
        for cluster, rows in clusters.items():
            volume = sum(r[1] for r in rows)
            failed = sum(r[2] for r in rows)
            con.execute(
                """INSERT INTO triage_clusters (cluster_id, label, volume, n_variants, n_failed,
                       failure_rate, priority, tags)
                   VALUES (?, ?, ?, ?, ?, ?, ?, ?)""",
                [
                    cluster,
                    max(rows, key=lambda r: r[1])[0],
                    volume,
                    len(rows),
                    failed,
                    failed / volume,
                    failed,
                    sorted({t for r in rows for t in r[3]}),
                ],
            )
        events = [
            ("e1", "s1", datetime(2026, 11, 1, 9, 0), "Reset password"),
            ("e2", "s2", datetime(2026, 11, 2, 9, 0), "reset password!"),
            ("e3", "s3", datetime(2026, 11, 3, 9, 0), "VPN setup"),
            ("e4", "s3", datetime(2026, 11, 3, 9, 1), "and on mobile?"),
            ("e5", "s4", datetime(2026, 11, 4, 9, 0), "pasword reset"),
        ]
        turns = [
            (0, "user", "do you have a vpn"),
            (1, "assistant", "Yes: see VPN access in the portal."),
            (2, "user", "and on mobile?"),
        ]
        for turn, role, text in turns:
            con.execute(
                "INSERT INTO chat_turns (conversation_id, turn, batch_id, ts, role, text)"
                " VALUES ('c1', ?, 1, ?, ?, ?)",
                [turn, datetime(2026, 11, 5, 10, turn), role, text],
            )
        for event_id, session, ts, query in events:
            con.execute(
                "INSERT INTO search_events (event_id, batch_id, ts, session_id, query)"
                " VALUES (?, 1, ?, ?, ?)",
                [event_id, ts, session, query],
            )


def add_snapshot(con, chunks: dict[str, tuple[str, str]]) -> int:
    """A new corpus snapshot (the next id) holding ``chunks``; returns its id."""
    snapshot_id = con.execute(
        "SELECT coalesce(max(snapshot_id), 0) + 1 FROM corpus_snapshots"
    ).fetchall()[0][0]
    rows = sorted((cid, sha256_text(text)) for cid, (_, text) in chunks.items())
    con.execute(
        "INSERT INTO corpus_snapshots VALUES (?, 1, ?, ?, ?, NULL)",
        [snapshot_id, datetime(2026, 11, 1), sha256_text(json.dumps(rows)), len(chunks)],
    )
    for chunk_id, (title, text) in chunks.items():
        con.execute(
            "INSERT INTO chunks VALUES (?, ?, ?, ?, NULL, ?, ?, NULL)",
            [snapshot_id, chunk_id, chunk_id.rsplit("-", 1)[0], title, text, sha256_text(text)],
        )
    return snapshot_id
