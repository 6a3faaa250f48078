"""A query of thousands of characters (a pasted log, a URL, a page of text) in a listing.

Traffic holds them: `triage show --top 8` on such a week printed 199 lines, one label filling the
screen, and a term of 3,000 characters beside it. A listing shows the start of a long text and
says how much is left; the whole text is in `--json` and in the item's or cluster's own view.
"""

from __future__ import annotations

import json
from pathlib import Path

from goldmine.output import clip
from goldmine.store import open_store, transaction

from helpers import build, gold, run_cli

LONG = "how do i reset my password " * 400  # 10,800 characters
WORD = "https://example.com/" + "a" * 3000


def long_cluster(db: Path) -> None:
    build(db)
    with open_store(db) as con, transaction(con):
        for text in (LONG, WORD):
            con.execute(
                """INSERT INTO triage_queries (norm_query, query, cluster_id, n_events,
                       n_sessions, sources, n_zero_results, n_no_click, n_failed, failure_rate,
                       tags) VALUES (?, ?, 99, 50, 50, ['searchlog'], 25, 25, 50, 1.0, [])""",
                [text, text],
            )
        con.execute(
            """INSERT INTO triage_clusters (cluster_id, label, volume, n_variants, n_failed,
                   failure_rate, priority, tags) VALUES (99, ?, 100, 2, 100, 1.0, 500, [])""",
            [LONG],
        )
        con.execute(
            "INSERT INTO triage_runs (run_id, started_at, finished_at, status) "
            "VALUES (1, now(), now(), 'done')"
        )
        con.execute(
            "INSERT INTO triage_cluster_labels VALUES (99, ?, ?)",
            [["password", WORD], [LONG, WORD]],
        )


def test_triage_show_and_cluster_show_the_start_of_a_long_text(db_path: Path) -> None:
    long_cluster(db_path)
    shown = run_cli("--db", str(db_path), "triage", "show", "--top", "3")
    assert shown.returncode == 0, shown.stderr
    assert len(shown.stdout.splitlines()) < 40, shown.stdout[:2000]
    assert "how do i reset my password" in shown.stdout and "…" in shown.stdout
    assert "a" * 200 not in shown.stdout.replace("\n", "").replace("│", "").replace(" ", "")
    cluster = run_cli("--db", str(db_path), "triage", "cluster", "99")
    assert cluster.returncode == 0, cluster.stderr
    assert len(cluster.stdout.splitlines()) < 60, cluster.stdout[:2000]
    whole = json.loads(run_cli("--db", str(db_path), "triage", "show", "--json").stdout)
    assert any(r["label"] == LONG for r in whole)  # --json keeps every character


def test_gold_listings_show_the_start_of_a_long_query(db_path: Path) -> None:
    build(db_path)
    gold(run_cli, db_path, "add-query", LONG)
    listed = gold(run_cli, db_path, "list").stdout
    assert len(listed.splitlines()) < 40, listed[:2000]
    assert "…" in listed
    items = json.loads(gold(run_cli, db_path, "list", "--json").stdout)
    assert any(i["query"] == LONG.strip() or i["query"] == LONG for i in items)


def test_the_count_left_out_counts_what_the_listing_does_not_show() -> None:
    """A cut falling in a run of spaces drops them from the start shown: they are left out too,
    so they count (it said 50 where 55 characters were not shown)."""
    text = "a" * 195 + " " * 10 + "b" * 45
    shown = clip(text)
    start = shown.split("…")[0]
    assert start == "a" * 195
    assert shown.endswith(f"(+{len(text) - len(start)} characters)")


def test_triage_cluster_shows_escapes_in_its_central_queries_as_marks(db_path: Path) -> None:
    """The ``central:`` line printed a query's ESC, C1 and bidi override raw: a query could
    retitle the terminal or redraw the line (every other listing shows them as U+FFFD)."""
    long_cluster(db_path)
    hostile = ["pay \x1b]0;PWNED\x07 bill", "c1 \x9b31m csi", "rtl \u202egnissim\u202c card"]
    with open_store(db_path) as con, transaction(con):
        con.execute("UPDATE triage_cluster_labels SET central = ? WHERE cluster_id = 99",
                    [hostile])  # fmt: skip
    out = run_cli("--db", str(db_path), "triage", "cluster", "99")
    assert out.returncode == 0, out.stderr
    central = next(line for line in out.stdout.splitlines() if line.startswith("central:"))
    assert not any(c in central for c in "\x1b\x07\x9b\u202e\u202c"), repr(central)
    assert "pay" in central and "\N{REPLACEMENT CHARACTER}" in central


def test_triage_export_into_a_missing_folder_is_one_line(db_path: Path, tmp_path: Path) -> None:
    long_cluster(db_path)
    for name in ("q.csv", "q.parquet"):
        out = run_cli("--db", str(db_path), "triage", "export", str(tmp_path / "no" / name))
        assert out.returncode == 2 and "Traceback" not in out.stderr, out.stderr
        assert out.stderr.startswith("error:") and "no folder" in out.stderr, out.stderr


def test_gold_list_keeps_ids_and_statuses_whole_at_80_columns(db_path: Path) -> None:
    """`goldmine gold list | grep q_…` found nothing: through a pipe (80 columns) every column
    was squeezed, the ids and statuses folded over two lines (`q_e52d7` / `b763465`). The query
    wraps and the counts give way; the id and the status stay on one line."""
    added = run_cli("--db", str(db_path), "gold", "add-query", "how do i " + LONG[:300])
    qid = added.stdout.split("\t")[1]
    out = run_cli("--db", str(db_path), "gold", "list", env={"COLUMNS": "80"})
    assert out.returncode == 0, out.stderr
    assert qid in out.stdout
    assert "candidate" in out.stdout
    assert max(len(line) for line in out.stdout.splitlines()) <= 80
