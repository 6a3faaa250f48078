"""``triage show``: what coverage means, the table at 80, 100 and 200 columns, empty results and
unknown filters.

The triage tables are filled with SQL and ranked by the real ``summarize_clusters`` (the clusters
are given, so no model runs); gold items go through the goldset stage's own functions.
"""

from __future__ import annotations

import json
import re
from datetime import datetime, timedelta

import pytest

from goldmine.goldset.items import add_item, set_no_answer, set_status
from goldmine.goldset.versions import publish
from goldmine.store import open_store
from goldmine.text import normalize_query
from goldmine.triage.queries import summarize_clusters

T0 = datetime(2026, 11, 2, 9, 0, 0)

# cluster id -> its queries: (text, events, failed events, tags, sources)
CLUSTERS = {
    1: [
        ("Any solution for my card that still has not arrived after two weeks please", 40, 30,
         ["question"], ["searchlog", "tickets"]),
        ("card not arrived", 12, 9, ["keyword"], ["searchlog"]),
    ],
    2: [("How do I change the PIN of my card at an ATM abroad?", 30, 20,
         ["acronym", "question"], ["searchlog"])],
    3: [("refund for a purchase I cancelled", 25, 15, ["keyword"], ["tickets"])],
    4: [("I was charged twice for the same transfer yesterday", 20, 12, ["keyword"],
         ["searchlog"])],
    5: [("exchange rate for euros", 15, 8, ["keyword"], ["searchlog"])],
    6: [("close my acount", 10, 6, ["keyword", "typo"], ["chat"])],
}  # fmt: skip


def triaged(con, clusters=CLUSTERS) -> None:
    """A finished triage run over the given clusters."""
    con.execute(
        "INSERT INTO triage_runs (run_id, started_at, finished_at, status, watermark) "
        "VALUES (1, ?, ?, 'done', ?)",
        [T0, T0, T0 + timedelta(days=1)],
    )
    for cid, queries in clusters.items():
        con.execute("INSERT INTO triage_cluster_ids VALUES (?, 1, NULL, 0.5, ?)", [cid, 1])
        for text, n, failed, tags, sources in queries:
            norm = normalize_query(text)
            con.execute(
                """INSERT INTO triage_queries (norm_query, query, canonical_query, cluster_id,
                       n_events, n_sessions, sources, first_seen, last_seen, n_no_click,
                       n_failed, failure_rate, tags)
                   VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)""",
                [norm, text, norm, cid, n, n, sources, T0, T0 + timedelta(days=1), failed,
                 failed, failed / n, tags],
            )  # fmt: skip
    summarize_clusters(con, 1)


def done_run(con, run_id: int, at: datetime, *, watermark: datetime) -> None:
    con.execute(
        "INSERT INTO triage_runs (run_id, started_at, finished_at, status, watermark) "
        "VALUES (?, ?, ?, 'done', ?)",
        [run_id, at, at, watermark],
    )


def cluster_of_one(con, cid: int, text: str, n: int, failed: int, seen: datetime) -> None:
    """A cluster run 2 made, of one query seen once at ``seen``."""
    con.execute("INSERT INTO triage_cluster_ids VALUES (?, 2, NULL, 0.5, 1)", [cid])
    con.execute(
        """INSERT INTO triage_queries (norm_query, query, canonical_query, cluster_id,
               n_events, n_sessions, sources, first_seen, last_seen, n_no_click, n_failed,
               failure_rate, tags)
           VALUES (?, ?, ?, ?, ?, ?, ['searchlog'], ?, ?, ?, ?, ?, [])""",
        [text, text, text, cid, n, n, seen, seen, failed, failed, failed / n],
    )


def show(cli, db_path, *args, columns=200):
    return cli("--db", str(db_path), "triage", "show", *args, env={"COLUMNS": str(columns)})


def shown(cli, db_path, *args) -> dict[int, dict]:
    out = show(cli, db_path, "--json", "--top", "50", *args)
    assert out.returncode == 0, out.stderr
    return {r["cluster_id"]: r for r in json.loads(out.stdout)}


# --- coverage ------------------------------------------------------------------------------------


def test_covered_means_verified_or_published(db_path, cli):
    """Published: the latest version that has it; verified and not yet published; in review
    (candidates or drafts, nothing verified); no (nothing, or only rejected items)."""
    with open_store(db_path) as con:
        triaged(con)
        card = add_item(con, "where is my card", origin="test", by="ann", cluster_id=1)
        set_no_answer(con, card, "ann")
        publish(con, "v1", "ann")
        # placed by its text alone: the query is one of cluster 2's, the item has no cluster id
        pin = add_item(con, "How do I change the PIN of my card at an ATM abroad?",
                       origin="test", by="ann")  # fmt: skip
        set_no_answer(con, pin, "ann")
        publish(con, "v2", "ann")
        refund = add_item(con, "refund for a purchase I cancelled", origin="test", by="ann")
        set_no_answer(con, refund, "ann")  # verified, not published
        add_item(con, "charged twice", origin="starter", by="ann", cluster_id=4)  # a candidate
        gone = add_item(con, "exchange rate for euros", origin="test", by="ann")
        set_status(con, gone, "rejected", "ann")
    rows = shown(cli, db_path)
    assert {cid: r["coverage"] for cid, r in rows.items()} == {
        1: "v2",
        2: "v2",
        3: "verified",
        4: "in review",
        5: "no",
        6: "no",
    }
    assert {cid for cid, r in rows.items() if r["covered"]} == {1, 2, 3}
    assert {r["coverage_version"] for r in rows.values()} == {2, None}
    assert set(shown(cli, db_path, "--uncovered")) == {4, 5, 6}

    table = show(cli, db_path)
    assert table.returncode == 0, table.stderr
    lines = table.stdout.splitlines()
    for label, coverage in (("refund for a purchase", "verified"), ("exchange rate", "no"),
                            ("I was charged twice", "in review")):  # fmt: skip
        line = next(line for line in lines if label in line)
        assert re.search(rf"\b{coverage}\b", line), table.stdout
    line = next(line for line in lines if "How do I change the PIN" in line)
    assert re.search(r"\bv2\b", line), table.stdout

    detail = json.loads(cli("--db", str(db_path), "triage", "cluster", "4", "--json").stdout)
    assert detail["coverage"] == "in review"
    # objects, as triage show --json gives them (they were JSON text in a string)
    assert isinstance(detail["signals"], dict) and isinstance(detail["tag_counts"], dict)
    text = cli("--db", str(db_path), "triage", "cluster", "1").stdout
    assert "covered: v2" in text


def test_a_starter_set_covers_nothing_until_verified(db_path, cli):
    """The first-week report: after `gold starter` every cluster showed covered."""
    with open_store(db_path) as con:
        triaged(con)
    out = cli("--db", str(db_path), "gold", "starter", "--n", "10")
    assert out.returncode == 0, out.stderr
    rows = shown(cli, db_path)
    assert not any(r["covered"] for r in rows.values())
    assert {r["coverage"] for r in rows.values()} == {"in review"}
    assert set(shown(cli, db_path, "--uncovered")) == set(CLUSTERS)


# --- empty results and unknown filters -----------------------------------------------------------


def test_an_empty_store_says_to_import_and_names_no_filter(db_path, cli):
    with open_store(db_path):
        pass
    out = show(cli, db_path)
    assert out.returncode == 2, out.stderr
    assert "goldmine ingest" in out.stderr and "triage run" in out.stderr
    assert "filter" not in out.stderr


def test_no_match_names_the_filters_given_and_only_those(db_path, cli):
    with open_store(db_path) as con:
        triaged(con)
    out = show(cli, db_path, "--tag", "follow-up")
    assert out.returncode == 0, out.stderr
    assert "--tag follow-up" in out.stderr and "6 clusters" in out.stderr, out.stderr
    assert "--source" not in out.stderr and "--uncovered" not in out.stderr
    out = show(cli, db_path, "--source", "chat", "--tag", "acronym", "--uncovered")
    assert "--source chat" in out.stderr and "--tag acronym" in out.stderr
    assert "--uncovered" in out.stderr and "--new" not in out.stderr
    with open_store(db_path) as con:  # a run that found no clusters, and no filter given
        con.execute("DELETE FROM triage_clusters")
    out = show(cli, db_path)
    assert out.returncode == 0, out.stderr
    assert "no clusters" in out.stderr and "filter" not in out.stderr, out.stderr


def test_an_unknown_source_is_an_error_that_lists_the_known_ones(db_path, cli):
    with open_store(db_path) as con:
        triaged(con)
    out = show(cli, db_path, "--source", "nosuch")
    assert out.returncode == 2, out.stderr
    assert "unknown source 'nosuch'" in out.stderr
    assert "chat, searchlog, tickets" in out.stderr
    assert "Traceback" not in out.stderr
    assert show(cli, db_path, "--source", "chat", "--json").returncode == 0


# --- the table at 80, 100 and 200 columns ---------------------------------------------------------

HEADERS = ("id", "priority", "label", "failed", "covered")  # kept at every width
LOW_VALUE = ("seen", "sources", "new", "variants", "signals", "volume", "tags")  # dropped first


@pytest.mark.parametrize("columns", [80, 100, 200])
def test_the_table_fits_with_whole_headers_and_wrapped_labels(db_path, cli, columns):
    with open_store(db_path) as con:
        triaged(con)
    out = show(cli, db_path, columns=columns)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert max(len(line) for line in lines) <= columns, out.stdout
    assert "…" not in out.stdout, out.stdout
    header = next(line for line in lines if " id " in line)
    cells = [c.strip() for c in re.split(r"[┃│|]", header) if c.strip()]
    assert set(HEADERS) <= set(cells), out.stdout
    # what is left out goes least valuable first, and the caption says so
    shown_low = [h for h in LOW_VALUE if h in cells]
    assert shown_low == list(LOW_VALUE[len(LOW_VALUE) - len(shown_low) :]), cells
    if columns == 200:
        assert shown_low == list(LOW_VALUE), cells
    else:
        assert "not shown at this width" in out.stdout
    # every label is there word for word, wrapped between words, never cut
    text_words = re.findall(r"[^\s┃│┏┓┗┛━┳┻╇┡┩└┘┌┐─┴┬]+", out.stdout)
    for queries in CLUSTERS.values():
        label = queries[0][0]
        for word in label.split():
            assert word in text_words, (word, out.stdout)
    if columns == 80:
        # the 80-column table keeps the label at least 24 wide: a label line holds several words
        row = next(line for line in lines if "Any solution" in line)
        assert "Any solution for" in row, out.stdout


def test_a_label_of_one_huge_word_folds_and_leaves_the_other_columns_whole(db_path, cli):
    # A pasted token or URL of thousands of characters with no space: the narrowest label
    # column was the whole word, so every other column was squeezed to nothing.
    word = "https://example.com/" + "x" * 3000
    with open_store(db_path) as con:
        triaged(con, {**CLUSTERS, 7: [(word, 50, 40, ["keyword"], ["searchlog"])]})
    out = show(cli, db_path, columns=100)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert max(len(line) for line in lines) <= 100, out.stdout
    header = next(line for line in lines if " id " in line)
    cells = [c.strip() for c in re.split(r"[┃│|]", header) if c.strip()]
    assert set(HEADERS) <= set(cells), out.stdout
    folded = "".join(re.findall(r"x{10,}", out.stdout))
    # its start folded over lines, the rest left to --json (tests/test_listings_long_texts.py)
    assert 150 <= len(folded) <= 200
    assert "2,820" in out.stdout.replace("│", "").replace(" ", "").replace("\n", "")


# --- the typo tag --------------------------------------------------------------------------------

COMMON = [  # each word here is in at least three queries: the frequent spellings
    "transfer money to my account", "cancel a transfer", "transfer failed again",
    "i have not received my card", "received the wrong amount", "money not received",
    "which currency can i hold", "currency exchange fee", "foreign currency card",
    "revert a payment", "how to revert a top up", "revert my top up",
    "when does my card expire", "card will expire soon", "expire date of card",
    "exchange rate today", "rate for euros", "what rate do you use",
    "good exchange rate", "is this good", "good morning",
    "certain payments declined", "are you certain", "certain shops",
    "shopping cart payment", "cart declined", "my cart is empty",
]  # fmt: skip
TYPOS = [  # one edit a typist makes, of a more frequent word
    "trasfer failed",  # a letter left out
    "i have not recieved my card",  # two letters swapped
    "currancy exchange",  # a vowel for another
    "transger to savings",  # a neighbouring key
    "exchange currencey",  # a letter put in
]
NOT_TYPOS = [
    "when i top up the app reverts it",  # an inflection of revert
    "my card reached its expiry",  # a real word one letter from expire, not a slip of the key
    "i got a rebate",  # two edits from rate
    "i goofed up",  # two edits from good
    "payments that pertain to me",  # c and p are not neighbouring keys
    "my card was declined at the cart",  # card and cart: both real, frequent words
]
# (variant, its fuzzy canonical): only the numbers differ, or two real words
NOT_TYPO_VARIANTS = [
    ("statement for 2019", "statement for 2018"),
    ("order 1243 missing", "order 1234 missing"),
    ("my cart was declined", "my card was declined"),
]


def test_typo_tag_fires_on_a_typists_edit_of_a_more_frequent_word(db_path):
    from goldmine.triage.tags import typo_queries

    rows = [(q, q) for q in COMMON + TYPOS + NOT_TYPOS]
    rows += [(canon, canon) for _, canon in NOT_TYPO_VARIANTS] + NOT_TYPO_VARIANTS
    rows += [("trasfer to savings", "transfer to savings"), ("transfer to savings",) * 2]
    with open_store(db_path) as con:
        con.executemany(
            "INSERT INTO triage_queries (norm_query, query, canonical_query, n_events) "
            "VALUES (?, ?, ?, 1)",
            [(norm, norm, canon) for norm, canon in rows],
        )
        tagged = typo_queries(con, None)
    assert set(TYPOS) <= tagged
    assert "trasfer to savings" in tagged  # a variant whose differing word is a typo
    wrong = tagged & (set(NOT_TYPOS) | {v for v, _ in NOT_TYPO_VARIANTS} | set(COMMON))
    assert not wrong


def test_a_cluster_the_latest_run_made_is_new_whatever_its_dates(db_path, cli):
    """A week that arrives late (its searches dated before the last run's newest) made clusters
    that --new left out: new meant first seen after the previous run's watermark only."""
    with open_store(db_path) as con:
        triaged(con)
        done_run(con, 2, T0 + timedelta(days=3), watermark=T0 + timedelta(days=1))
        cluster_of_one(con, 7, "atm near me", 9, 9, T0 - timedelta(days=2))
        summarize_clusters(con, 2)
    assert set(shown(cli, db_path, "--new")) == {7}


def test_a_late_week_marks_only_its_own_clusters_new(db_path, cli):
    """A week's searches dated before the last run's newest (a late export, or one user's search
    weeks ahead of the rest) leave the newest search where it was: the run was taken for one
    with nothing new, no earlier run saw less, and every cluster was new."""
    with open_store(db_path) as con:
        triaged(con)
        con.execute("UPDATE triage_runs SET n_queries = 7 WHERE run_id = 1")
        con.execute(
            "INSERT INTO triage_query_days (source, day, norm_query, first_seen, last_seen, "
            "n_events) VALUES ('searchlog', ?, 'card not arrived', ?, ?, 12)",
            [T0.date(), T0, T0 + timedelta(days=1)],
        )
        cluster_of_one(con, 7, "atm near me", 9, 9, T0 - timedelta(days=2))
        summarize_clusters(con, 2)
        assert set(shown(cli, db_path, "--new")) == {7}
        # the same traffic again keeps what that week found new
        done_run(con, 2, T0 + timedelta(days=3), watermark=T0 + timedelta(days=1))
        con.execute("UPDATE triage_runs SET n_queries = 8 WHERE run_id = 2")
        summarize_clusters(con, 3)
    assert set(shown(cli, db_path, "--new")) == {7}


def test_a_label_written_over_lines_is_shown_on_one(db_path, cli):
    """banking77 holds texts that start with a line end ('\\nWhere can I withdraw money from?'):
    the table's label cell began with an empty line."""
    clusters = {1: [("\nWhere can I\twithdraw money from?", 40, 30, ["question"], ["searchlog"])]}
    with open_store(db_path) as con:
        triaged(con, clusters)
    out = show(cli, db_path)
    assert out.returncode == 0, out.stderr
    assert "Where can I withdraw money from?" in out.stdout, out.stdout


def test_a_starter_reason_gives_the_clusters_counts_and_the_querys_apart(db_path, cli):
    """ "tail, cluster 2: 1 events, 0% failed" read as the cluster's counts; they were its
    picked query's."""
    with open_store(db_path) as con:
        triaged(con)
    out = cli("--db", str(db_path), "gold", "starter", "--n", "10", "--json")
    assert out.returncode == 0, out.stderr
    picks = json.loads(out.stdout)
    clusters = shown(cli, db_path)
    for pick in picks:
        reason = " ".join(pick["reasons"]) if "reasons" in pick else pick["reason"]
        cid = next(int(c) for c in re.findall(r"cluster (\d+)", reason))
        assert f"cluster {cid}: {clusters[cid]['volume']} searches" in reason, reason
        assert "this query" in reason, reason


def test_a_run_with_no_new_traffic_keeps_what_is_new(db_path, cli):
    """After the week's run, a second run with nothing new said "no cluster matches --new": new
    meant after the previous run's watermark, which was the week's own."""
    week = T0 + timedelta(days=5)
    with open_store(db_path) as con:
        triaged(con)
        cluster_of_one(con, 8, "gift card", 4, 1, week)
        con.execute(
            "INSERT INTO triage_query_days (source, day, norm_query, first_seen, last_seen, "
            "n_events) VALUES ('searchlog', ?, 'gift card', ?, ?, 4)",
            [week.date(), week, week],
        )
        summarize_clusters(con, 2)
        done_run(con, 2, week, watermark=week)
        summarize_clusters(con, 3)  # the same traffic again
    assert set(shown(cli, db_path, "--new")) == {8}


def test_status_after_an_interrupted_run_names_the_run_show_serves(db_path, cli):
    """ "triage: run 2 interrupted, 0 queries in 0 clusters" while triage show served run 1."""
    with open_store(db_path) as con:
        triaged(con)
        con.execute("UPDATE triage_runs SET n_queries = 12, n_clusters = 6 WHERE run_id = 1")
        con.execute(
            "INSERT INTO triage_runs (run_id, started_at, status) VALUES (2, ?, 'interrupted')",
            [T0 + timedelta(days=2)],
        )
    out = cli("--db", str(db_path), "status")
    assert out.returncode == 0, out.stderr
    line = next(x for x in out.stdout.splitlines() if x.startswith("triage:"))
    assert line == "triage: run 2 interrupted; triage show serves run 1, 12 queries in 6 clusters"
    data = json.loads(cli("--db", str(db_path), "status", "--json").stdout)
    assert data["triage"]["served"]["run_id"] == 1
