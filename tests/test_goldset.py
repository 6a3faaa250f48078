"""The gold set on a real DuckDB file: starter coverage, label → publish → diff → export → import,
immutability, drift and remap after re-chunking, stale re-reads with a fake clock, file imports."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

import pytest

from goldmine.errors import NotFoundError
from goldmine.goldset import items as gi
from goldmine.goldset.starter import AWKWARD_TAGS, choose, starter
from goldmine.store import open_store, transaction
from goldmine.versions import load_gold

from helpers import CHUNKS, QUERIES, add_snapshot, build, gold, shown
from helpers import norm_qid as qid


@pytest.fixture
def store(db_path: Path) -> Path:
    build(db_path)
    return db_path


def add(cli, db: Path, *queries: str) -> None:
    gold(cli, db, "add-query", *queries, "--by", "tester")


# --- starter ------


def test_starter_covers_every_tag_and_volume_band(store: Path) -> None:
    with open_store(store) as con:
        picks = starter(con, 8, "tester")
        stored = con.execute("SELECT count(*), count(reason) FROM gold_items").fetchall()[0]
    tags_in_data = {t for *_, tags in QUERIES for t in tags}
    picked_tags = {t for p in picks for t in p.query["tags"]}
    assert set(AWKWARD_TAGS) & tags_in_data <= picked_tags
    assert {p.query["band"] for p in picks} == {"head", "torso", "tail"}
    assert any(p.query["failure_rate"] >= 0.5 for p in picks)
    assert stored == (8, 8)
    assert all(p.reasons and p.reasons[0] for p in picks)


def test_no_cluster_takes_two_places_before_every_large_one_has_one(store: Path) -> None:
    with open_store(store) as con:
        picks = starter(con, 14, "tester")
    large = {p.query["ckey"] for p in picks if p.query["band"] in ("head", "torso")}
    seen: set[str] = set()
    for p in picks:
        coverage = p.reasons[0].startswith(("tag ", "head of", "torso of", "tail of"))
        if p.query["ckey"] in seen and not coverage:
            assert large <= seen, f"{p.query['query']} took a second place too early"
        seen.add(p.query["ckey"])
    assert len(picks) == len(QUERIES)  # asked for all of them: every query is proposed once


TOPICS = ["returns", "invoices", "passwords", "shipping", "discounts"]
ASPECTS = ["how long", "which form", "who pays"]


def test_choose_spreads_one_per_cluster_when_there_is_room() -> None:
    queries = [
        {
            "norm_query": f"{TOPICS[c]} {ASPECTS[v]}",
            "query": f"{TOPICS[c]} {ASPECTS[v]}",
            "ckey": str(c),
            "cluster_id": c,
            "band": "head" if c < 2 else "tail",
            "crank": c + 1,
            "n_events": 100 - c * 10 - v,
            "n_failed": 0,
            "failure_rate": 0.0,
            "tags": [],
        }
        for c in range(5)
        for v in range(3)
    ]
    picks = choose(queries, 5, set(), set(), set())
    assert sorted(p.query["cluster_id"] for p in picks) == [0, 1, 2, 3, 4]
    # Near-duplicates (the same text but for digits) are proposed once.
    tickets = [
        {**queries[0], "norm_query": f"change the address on order nw {n}", "ckey": "9"}
        for n in (10851, 12447, 39567)
    ]
    picks = choose(tickets + queries, 20, set(), set(), set())
    assert sum(p.query["norm_query"].startswith("change the address") for p in picks) == 1
    assert len(picks) == 1 + len(queries)


def test_rerunning_starter_proposes_only_what_is_new(cli, store: Path) -> None:
    def picks(n: str) -> list[dict]:
        return json.loads(gold(cli, store, "starter", "--n", n, "--json").stdout)

    first, second = picks("5"), picks("5")
    assert len(first) == len(second) == 5
    assert not {p["query_id"] for p in first} & {p["query_id"] for p in second}
    rest = picks("50")
    assert len(rest) == len(QUERIES) - 10
    assert picks("50") == []


def test_starter_asked_for_more_than_there_is_says_how_many(cli, store: Path) -> None:
    """--n 500 on fewer queries gave what there was without a word."""
    said = gold(cli, store, "starter", "--n", "500")
    assert f"{len(QUERIES)} of the 500 asked" in said.stderr


def test_add_query_by_text_and_cluster_keeps_provenance(cli, store: Path) -> None:
    out = gold(cli, store, "add-query", "Pasword reset!", "--cluster", "2").stdout
    assert "added" in out
    items = {i["query"]: i for i in json.loads(gold(cli, store, "list", "--json").stdout)}
    assert set(items) == {"Pasword reset!", "vpn setup"}
    shown = json.loads(gold(cli, store, "show", qid("pasword reset"), "--json").stdout)
    assert shown["source_ids"] == ["searchlog:e5"]
    assert shown["cluster_id"] == 1 and "typo" in shown["tags"]
    assert "already in the set" in gold(cli, store, "add-query", "pasword reset").stdout


def test_follow_up_gets_its_context(cli, store: Path) -> None:
    add(cli, store, "and on mobile")
    shown = json.loads(gold(cli, store, "show", qid("and on mobile"), "--json").stdout)
    # The chat conversation is preferred to the search session: it has the assistant's side.
    assert (
        shown["context"] == "user: do you have a vpn\nassistant: Yes: see VPN access in the portal."
    )
    assert shown["source_ids"] == ["chat:c1#2", "searchlog:e4"]


# --- label, publish, diff, export, import ------


def test_draft_label_publish_diff_export_import_round_trip(cli, store: Path, tmp_path: Path):
    add(cli, store, "reset password", "vpn setup", "refund in bitcoin", "download invoice")
    drafted = gold(cli, store, "draft", "--retriever", "bm25", "-k", "3")
    assert "drafted 4 queries" in drafted.stderr
    shown = json.loads(gold(cli, store, "show", qid("reset password"), "--json").stdout)
    assert shown["status"] == "drafted" and shown["drafted_by"] == "retriever:bm25"
    assert shown["drafts"][0]["chunk_id"] == "kb-reset-1"
    # A draft is never gold: nothing verified yet, so nothing to publish.
    refused = gold(cli, store, "publish", "-m", "too early", ok=False)
    assert refused.returncode == 2 and "nothing to publish" in refused.stderr

    gold(
        cli,
        store,
        "label",
        qid("reset password"),
        "--chunk",
        "kb-reset-1=2",
        "--chunk",
        "kb-reset-2=1",
        "--by",
        "alice",
        "--note",
        "rules help too",
    )
    # A query is verified once every candidate is decided: the rest graded 0 in one flag.
    gold(cli, store, "label", qid("vpn setup"), "--chunk", "kb-vpn-1=2", "--rest-not-relevant",
         "--by", "bob")  # fmt: skip
    gold(cli, store, "label", qid("refund in bitcoin"), "--no-answer", "--by", "alice")
    out = gold(cli, store, "publish", "-m", "starter set", "--by", "alice").stdout
    assert out.startswith("published v1: 3 queries (2 answerable, 1 no answer), 4 labels")

    gold(cli, store, "label", qid("reset password"), "--chunk", "kb-reset-2=0", "--by", "bob")
    gold(cli, store, "label", qid("download invoice"), "--chunk", "kb-invoice-1=2",
         "--rest-not-relevant")  # fmt: skip
    gold(cli, store, "publish", "-m", "invoices")
    same = gold(cli, store, "publish", "-m", "again", ok=False)
    assert "nothing changed since v2" in same.stderr

    diff = json.loads(gold(cli, store, "diff", "v1", "v2", "--json").stdout)
    assert [q["query_id"] for q in diff["added"]] == [qid("download invoice")]
    assert diff["removed"] == []
    assert diff["relabelled"] == [
        {
            "query_id": qid("reset password"),
            "query": "reset password",
            "no_answer": [False, False],
            "changes": [{"chunk_id": "kb-reset-2", "from": 1, "to": 0}],
        }
    ]
    assert diff["unchanged"] == 2
    assert "kb-reset-2 1→0" in gold(cli, store, "diff", "1", "latest").stdout

    out_dir = tmp_path / "gold"
    for version in ("1", "2"):
        gold(cli, store, "export", "--version", version, "--out", str(out_dir))
    v2 = (out_dir / "v0002.jsonl").read_text(encoding="utf-8").splitlines()
    header, items = json.loads(v2[0]), [json.loads(line) for line in v2[1:]]
    assert header["format_version"] == 1 and "query_id" not in header
    assert header["version"] == 2 and header["message"] == "invoices"
    assert header["counts"] == {"items": 4, "answerable": 3, "no_answer": 1, "labels": 6}
    assert [i["query_id"] for i in items] == sorted(i["query_id"] for i in items)
    assert all(
        line == json.dumps(json.loads(line), sort_keys=True, ensure_ascii=False) for line in v2
    )
    by_id = {i["query_id"]: i for i in items}
    reset = by_id[qid("reset password")]
    assert reset["relevant"] == {"kb-reset-1": 2}
    assert reset["not_relevant"] == {"kb-reset-2": 0}
    assert reset["notes"] == ["rules help too"]
    assert (
        reset["label_text_hashes"]["kb-reset-1"]
        == json.loads(gold(cli, store, "show", qid("reset password"), "--json").stdout)["labels"][
            0
        ]["text_hash"]
    )
    assert [h["action"] for h in reset["history"]][:3] == ["add", "draft", "grade"]
    assert by_id[qid("refund in bitcoin")]["relevant"] == {}

    # Export → import into an empty store → export: the same bytes, for every version.
    empty = tmp_path / "empty.duckdb"
    for version in ("0002", "0001"):
        restored = gold(cli, empty, "import", str(out_dir / f"v{version}.jsonl")).stdout
        assert "restored" in restored
    again_dir = tmp_path / "again"
    for version in ("1", "2"):
        gold(cli, empty, "export", "--version", version, "--out", str(again_dir))
    for name in ("v0001.jsonl", "v0002.jsonl"):
        assert (again_dir / name).read_bytes() == (out_dir / name).read_bytes()
    restored_items = json.loads(gold(cli, empty, "list", "--json").stdout)
    assert {i["status"] for i in restored_items} == {"verified"}
    with open_store(empty) as con:
        assert load_gold(con, "v2").hash == header["content_hash"]
    # The working set restored from v2 freezes to v2's very lines: history order, text hashes,
    # who and when all came back.
    unchanged = gold(cli, empty, "publish", "-m", "copy", ok=False)
    assert "nothing changed since v2" in unchanged.stderr
    # Importing the same version twice adds nothing.
    assert "unchanged" in gold(cli, empty, "import", str(out_dir / "v0002.jsonl")).stdout

    gold(cli, store, "export", "--version", "2", "--format", "trec", "--out", str(out_dir))
    qrels = (out_dir / "v0002.qrels").read_text().splitlines()
    assert f"{qid('reset password')} 0 kb-reset-1 2" in qrels
    assert f"{qid('reset password')} 0 kb-reset-2 0" in qrels
    topics = (out_dir / "v0002.topics.tsv").read_text().splitlines()
    assert f"{qid('refund in bitcoin')}\trefund in bitcoin" in topics
    gold(cli, store, "export", "--version", "2", "--format", "beir", "--out", str(out_dir))
    tsv = (out_dir / "v0002-beir" / "qrels" / "test.tsv").read_text().splitlines()
    assert tsv[0] == "query-id\tcorpus-id\tscore" and len(tsv) == 1 + 6


def test_load_gold_gives_the_eval_a_pinned_version(cli, store: Path) -> None:
    add(cli, store, "reset password", "refund in bitcoin")
    gold(
        cli,
        store,
        "label",
        qid("reset password"),
        "--chunk",
        "kb-reset-1=2",
        "--chunk",
        "kb-reset-2=0",
    )
    gold(cli, store, "label", qid("refund in bitcoin"), "--no-answer")
    gold(cli, store, "publish", "-m", "one")
    with open_store(store) as con:
        g = load_gold(con, "latest")
        assert (g.source, g.format, g.version) == ("v1", "goldmine-version", 1)
        assert load_gold(con, "1").hash == load_gold(con, "v1").hash == g.hash
        reset = g.queries[qid("reset password")]
        assert reset.query == "reset password"
        assert reset.judged == {"kb-reset-1": 2, "kb-reset-2": 0}
        assert not g.queries[qid("refund in bitcoin")].answerable()
        with pytest.raises(NotFoundError, match="no gold version v7 \\(published: v1\\)"):
            load_gold(con, "v7")


def test_published_versions_never_change(cli, store: Path, tmp_path: Path) -> None:
    add(cli, store, "reset password", "vpn setup")
    gold(cli, store, "label", qid("reset password"), "--chunk", "kb-reset-1=2")
    gold(cli, store, "publish", "-m", "one")
    with open_store(store) as con:
        before = load_gold(con, "v1")
    # Relabelling changes the working set, never the published version.
    gold(cli, store, "label", qid("reset password"), "--chunk", "kb-reset-1=1")
    with open_store(store) as con:
        after = load_gold(con, "v1")
    assert after.hash == before.hash
    assert after.queries[qid("reset password")].judged == {"kb-reset-1": 2}
    assert "v1\tok" in gold(cli, store, "verify").stdout

    # A different v1 from elsewhere is refused, clearly.
    other = tmp_path / "other.duckdb"
    build(other)
    add(cli, other, "vpn setup")
    gold(cli, other, "label", qid("vpn setup"), "--chunk", "kb-vpn-1=2")
    gold(cli, other, "publish", "-m", "elsewhere")
    gold(cli, other, "export", "--out", str(tmp_path / "x"))
    refused = gold(cli, store, "import", str(tmp_path / "x" / "v0001.jsonl"), ok=False)
    assert refused.returncode == 2
    assert "a different v1 is already published" in refused.stderr
    assert "published versions never change" in refused.stderr
    # An exported file edited by hand no longer matches its hash.
    path = tmp_path / "x" / "v0001.jsonl"
    path.write_text(path.read_text().replace('"kb-vpn-1": 2', '"kb-vpn-1": 1'))
    edited = gold(cli, tmp_path / "third.duckdb", "import", str(path), ok=False)
    assert edited.returncode == 2 and "edited after export" in edited.stderr

    # Changing the stored version behind the tool's back is caught by verify.
    with open_store(store) as con:
        con.execute(
            "UPDATE gold_version_items SET item = replace(item, '\"kb-reset-1\": 2',"
            " '\"kb-reset-1\": 1') WHERE version = 1"
        )
    broken = gold(cli, store, "verify", ok=False)
    assert broken.returncode == 1
    assert "v1\tCHANGED" in broken.stdout
    assert "changed after publishing" in broken.stderr


def test_label_errors_are_clear(cli, store: Path) -> None:
    add(cli, store, "reset password")
    bad = gold(cli, store, "label", qid("reset password"), "--chunk", "kb-reset-1=5", ok=False)
    assert bad.returncode == 2 and "grade 0, 1 or 2" in bad.stderr
    gone = gold(cli, store, "label", qid("reset password"), "--chunk", "nope=1", ok=False)
    assert gone.returncode == 2 and "no chunk 'nope'" in gone.stderr
    missing = gold(cli, store, "label", "q_unknown", "--no-answer", ok=False)
    assert missing.returncode == 2 and "no gold item 'q_unknown'" in missing.stderr
    both = gold(
        cli,
        store,
        "label",
        qid("reset password"),
        "--chunk",
        "kb-reset-1=1",
        "--no-answer",
        ok=False,
    )
    assert "not both" in both.stderr
    # One chunk given two grades is refused, as a judgments file giving it twice is; the same
    # grade twice is one.
    twice = gold(cli, store, "label", qid("reset password"), "--chunk", "kb-reset-1=2",
                 "--chunk", "kb-reset-1=0", ok=False)  # fmt: skip
    assert twice.returncode == 2 and "kb-reset-1" in twice.stderr and "2 and 0" in twice.stderr
    # A note alone is a label's note, with nothing graded (it was "nothing to label").
    noted = gold(cli, store, "label", qid("reset password"), "--note", "ask the docs team")
    assert noted.returncode == 0 and "candidate" in noted.stdout
    assert shown(cli, store, "reset password")["notes"][-1].endswith("ask the docs team")
    zero = gold(cli, store, "label", qid("reset password"), "--chunk", "kb-reset-2=0")
    assert zero.stdout.split("\t")[1].strip() == "candidate"  # graded, but nothing relevant yet
    # Deciding a rejected query takes it back into the set: said, not done without a word.
    with open_store(store) as con:
        gi.set_status(con, qid("reset password"), "rejected", "ana")
    back = gold(cli, store, "label", qid("reset password"), "--no-answer")
    assert "was rejected" in back.stderr and back.stdout.split("\t")[1].strip() == "verified"


# --- drift and remap ------


def rechunk() -> dict[str, tuple[str, str]]:
    """The sample corpus re-chunked: one chunk split in two, two merged, one lightly edited."""
    chunks = dict(CHUNKS)
    title, text = chunks.pop("kb-reset-1")
    cut = text.index(" A link")
    chunks["kb-reset-1a"] = (title, text[:cut])
    chunks["kb-reset-1b"] = (title, text[cut + 1 :])
    vpn1, vpn2 = chunks.pop("kb-vpn-1"), chunks.pop("kb-vpn-2")
    chunks["kb-vpn-all"] = ("VPN", vpn1[1] + "\n\n" + vpn2[1])
    title, text = chunks["kb-invoice-1"]
    chunks["kb-invoice-1"] = (title, text.replace("as a PDF", "as a PDF file"))
    chunks["archive-export"] = chunks.pop("kb-export-1")  # moved to another document
    return chunks


def test_drift_and_remap_after_rechunking(cli, store: Path) -> None:
    add(cli, store, "reset password", "vpn setup", "download invoice", "export my data")
    gold(cli, store, "label", qid("reset password"), "--chunk", "kb-reset-1=2")
    gold(cli, store, "label", qid("vpn setup"), "--chunk", "kb-vpn-1=2", "--chunk", "kb-vpn-2=1")
    gold(cli, store, "label", qid("download invoice"), "--chunk", "kb-invoice-1=2",
         "--rest-not-relevant")  # fmt: skip
    gold(cli, store, "label", qid("export my data"), "--chunk", "kb-export-1=2")
    assert json.loads(gold(cli, store, "drift", "--json").stdout) == []

    with open_store(store) as con, transaction(con):
        add_snapshot(con, rechunk())
    drifted = json.loads(gold(cli, store, "drift", "--json").stdout)
    assert {(d["chunk_id"], d["reason"]) for d in drifted} == {
        ("kb-reset-1", "missing"),
        ("kb-vpn-1", "missing"),
        ("kb-vpn-2", "missing"),
        ("kb-invoice-1", "changed"),
        ("kb-export-1", "missing"),
    }
    published = gold(cli, store, "publish", "-m", "on the old chunking")
    assert "5 labels point at chunks missing from, or changed in" in published.stderr
    out = gold(cli, store, "remap", "--by", "carol").stdout
    assert out.startswith("5 drifted labels:") and "0 without a match" in out

    def drafts(text: str) -> dict[str, int]:
        shown = json.loads(gold(cli, store, "show", qid(text), "--json").stdout)
        assert shown["status"] == "drafted"  # back to a person until confirmed
        assert shown["labels"] == []
        return {d["chunk_id"]: d["suggested_grade"] for d in shown["drafts"]}

    assert drafts("reset password") == {"kb-reset-1a": 2, "kb-reset-1b": 2}  # split in two
    assert drafts("vpn setup") == {"kb-vpn-all": 2}  # merged: the best old grade is kept
    assert drafts("download invoice") == {"kb-invoice-1": 2}  # edited: fuzzy match
    assert drafts("export my data") == {"archive-export": 2}  # found outside its document
    vpn = json.loads(gold(cli, store, "show", qid("vpn setup"), "--json").stdout)
    assert vpn["drafts"][0]["source"] == "remap"
    history = json.loads(gold(cli, store, "show", qid("vpn setup"), "--json").stdout)["history"]
    assert [h["action"] for h in history][-3:] == ["remap", "remap", "status"]

    gold(
        cli,
        store,
        "label",
        qid("reset password"),
        "--chunk",
        "kb-reset-1a=2",
        "--chunk",
        "kb-reset-1b=1",
    )
    assert json.loads(gold(cli, store, "drift", "--json").stdout) == []
    shown = json.loads(gold(cli, store, "show", qid("reset password"), "--json").stdout)
    assert shown["status"] == "verified"


# --- stale re-reads ------


def test_stale_labels_come_back_for_a_re_read(cli, store: Path) -> None:
    def at(day: str) -> dict:
        return {"GOLDMINE_NOW": day}

    add(cli, store, "reset password", "vpn setup", "refund in bitcoin")
    gold(
        cli,
        store,
        "label",
        qid("reset password"),
        "--chunk",
        "kb-reset-1=2",
        env=at("2026-01-10T12:00:00"),
    )
    gold(
        cli, store, "label", qid("refund in bitcoin"), "--no-answer", env=at("2026-01-10T12:00:00")
    )
    gold(
        cli,
        store,
        "label",
        qid("vpn setup"),
        "--chunk",
        "kb-vpn-1=2",
        env=at("2026-06-01T12:00:00"),
    )

    early = gold(cli, store, "stale", "--older-than", "180d", env=at("2026-07-01T00:00:00"))
    assert early.stdout.startswith("0 queries")
    dry = gold(
        cli, store, "stale", "--older-than", "180d", "--dry-run", env=at("2026-08-01T00:00:00")
    )
    assert dry.stdout.startswith("2 queries") and "would go back" in dry.stdout
    assert json.loads(gold(cli, store, "list", "--status", "verified", "--json").stdout)
    sent = gold(cli, store, "stale", "--older-than", "180d", env=at("2026-08-01T00:00:00"))
    assert sent.stdout.startswith("2 queries")
    statuses = {
        i["query"]: i["status"] for i in json.loads(gold(cli, store, "list", "--json").stdout)
    }
    assert statuses == {
        "reset password": "drafted",
        "refund in bitcoin": "drafted",
        "vpn setup": "verified",
    }
    shown = json.loads(gold(cli, store, "show", qid("reset password"), "--json").stdout)
    assert [(d["chunk_id"], d["suggested_grade"], d["source"]) for d in shown["drafts"]] == [
        ("kb-reset-1", 2, "stale")
    ]
    assert shown["history"][-2]["action"] == "stale"
    bad = gold(cli, store, "stale", "--older-than", "soon", ok=False)
    assert bad.returncode == 2 and "180d" in bad.stderr


# --- imports of other formats ------


def test_import_trec_beir_and_minimal_jsonl(cli, store: Path, tmp_path: Path) -> None:
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("t1 0 kb-reset-1 1\r\nt1 0 kb-reset-2 3\r\nt2 0 kb-vpn-1 2\r\n")
    no_topics = gold(cli, store, "import", str(qrels), ok=False)
    assert no_topics.returncode == 2 and "--topics" in no_topics.stderr
    topics = tmp_path / "topics.tsv"
    topics.write_text("t1\treset my password\nt2\tvpn\n")
    unmapped = gold(
        cli,
        store,
        "import",
        str(qrels),
        "--topics",
        str(topics),
        "--grade-map",
        "1=1,2=2",
        ok=False,
    )
    assert "no entry for grade(s) [3]" in unmapped.stderr
    out = gold(
        cli,
        store,
        "import",
        str(qrels),
        "--topics",
        str(topics),
        "--grade-map",
        "1=1,2=2,3=2",
        "--by",
        "nist",
    ).stdout
    assert out.startswith("imported 2 verified queries (trec), 3 labels")
    shown = json.loads(gold(cli, store, "show", "t1", "--json").stdout)
    assert shown["status"] == "verified" and shown["verified_by"] == "nist"
    assert {r["chunk_id"]: r["grade"] for r in shown["labels"]} == {
        "kb-reset-1": 1,
        "kb-reset-2": 2,
    }
    assert shown["origin"] == "import:qrels.txt" and shown["labels"][0]["text_hash"]
    again = gold(
        cli, store, "import", str(qrels), "--topics", str(topics), "--grade-map", "1=1,2=2,3=2"
    ).stdout
    assert "imported 0" in again and "2 already in the set" in again

    beir = tmp_path / "beir"
    (beir / "qrels").mkdir(parents=True)
    (beir / "queries.jsonl").write_text(json.dumps({"_id": "b1", "text": "invoice pdf"}) + "\n")
    (beir / "qrels" / "test.tsv").write_text(
        "query-id\tcorpus-id\tscore\nb1\tkb-invoice-1\t1\nb1\tgone-chunk\t1\n"
    )
    out = gold(cli, store, "import", str(beir))
    assert "imported 1 verified queries (beir), 2 labels" in out.stdout
    assert "1 labelled chunk ids are not in snapshot 1" in out.stderr

    minimal = tmp_path / "mini.jsonl"
    minimal.write_text(
        json.dumps({"format_version": 1})
        + "\n"
        + json.dumps({"query_id": "m1", "query": "dark mode", "relevant": []})
        + "\n"
        + json.dumps({"query_id": "m2", "query": "api keys", "relevant": ["kb-api-1"]})
        + "\n"
        + json.dumps({"query_id": "m3", "query": "2fa", "relevant": {"kb-2fa-1": 2}})
        + "\n"
    )
    out = gold(cli, store, "import", str(minimal)).stdout
    assert out.startswith("imported 3 verified queries (jsonl), 2 labels, 1 no answer")
    gold(cli, store, "publish", "-m", "imported")
    with open_store(store) as con:
        g = load_gold(con, "v1")
    assert g.queries["m2"].judged == {"kb-api-1": 1}
    assert g.queries["m3"].judged == {"kb-2fa-1": 2}
    assert g.queries["m1"].judged == {} and not g.queries["m1"].answerable()

    broken = tmp_path / "broken.jsonl"
    broken.write_text('{"query_id": "x", "query": "y", "relevant": []}\n{not json\n')
    err = gold(cli, store, "import", str(broken), ok=False)
    assert err.returncode == 2 and "broken.jsonl:2: not JSON" in err.stderr


def test_remap_drafts_keep_the_higher_grade_of_an_existing_draft(tmp_path: Path) -> None:
    """A remap draft on a chunk that already has a draft raises its grade, never lowers it, in
    one statement; a chunk a person graded is left alone."""
    from goldmine.goldset.drift import _put_drafts

    with open_store(tmp_path / "s.duckdb") as con:
        con.execute(
            """INSERT INTO gold_labels (query_id, chunk_id, kind, suggested_grade, grade, source,
                   who, ts)
               VALUES ('q1', 'a', 'draft', 1, NULL, 'bm25', 'x', now()),
                      ('q1', 'b', 'draft', 2, NULL, 'bm25', 'x', now()),
                      ('q1', 'c', 'label', NULL, 1, 'person', 'x', now())"""
        )
        drafts = {("q1", "a"): [2, 1, 1.0], ("q1", "b"): [1, 2, 1.0], ("q1", "c"): [2, 3, 1.0]}
        _put_drafts(con, drafts, "remap", {}, None, "carol", datetime(2026, 12, 3))
        rows = con.execute(
            "SELECT chunk_id, kind, suggested_grade, grade FROM gold_labels ORDER BY chunk_id"
        ).fetchall()
    assert rows == [("a", "draft", 2, None), ("b", "draft", 2, None), ("c", "label", None, 1)]


def test_a_second_place_in_a_cluster_goes_to_its_most_different_query() -> None:
    """A cluster that gets two places (more places than clusters) is represented by its central
    query and then by the query least like the ones picked, not by the next most central: two
    phrasings of one question cover one intent, a different question may be another."""
    texts = [  # in order of centrality: the first two are one question written twice
        "how do i reset my card pin",
        "how can i reset my pin on the card",
        "reset card pin how",
        "when will my new card arrive in the post",
    ]
    queries = [
        {
            "norm_query": t,
            "query": t,
            "ckey": "0",
            "cluster_id": 0,
            "band": "head",
            "crank": 1,
            "qrank": rank + 1,
            "n_events": 50 - rank,
            "n_failed": 0,
            "failure_rate": 0.0,
            "tags": [],
        }
        for rank, t in enumerate(texts)
    ]
    picks = [p.query["norm_query"] for p in choose(queries, 2, set(), set(), set())]
    assert picks == [texts[0], texts[3]]


def test_publish_with_nothing_changed_can_be_told_that_is_fine(cli, store) -> None:
    """A weekly job publishes whatever changed: nothing new is exit 2 (an error), unless
    --allow-unchanged says an unchanged set is fine (exit 0, no version made)."""
    add(cli, store, "vpn setup")
    gold(cli, store, "label", qid("vpn setup"), "--chunk", "kb-vpn-1=2")
    gold(cli, store, "publish", "-m", "first")
    again = gold(cli, store, "publish", "-m", "weekly", "--allow-unchanged", "--json")
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout) == {"published": False, "version": 1, "message": "weekly"}
    said = gold(cli, store, "publish", "-m", "weekly", "--allow-unchanged")
    assert said.returncode == 0 and "nothing changed since v1" in said.stderr
    refused = gold(cli, store, "publish", "-m", "weekly", ok=False)
    assert refused.returncode == 2 and "--allow-unchanged" in refused.stderr


def test_status_shows_the_labelling_day(cli, store: Path) -> None:
    """status showed the imports alone: after triage, starter, review and publish it read the
    same, no use for checking the day's progress."""
    add(cli, store, "vpn setup", "dark mode")
    gold(cli, store, "label", qid("vpn setup"), "--chunk", "kb-vpn-1=2")
    gold(cli, store, "publish", "-m", "first")
    data = json.loads(cli("--db", str(store), "status", "--json").stdout)
    assert data["gold"]["items"] == {"candidate": 1, "verified": 1}
    assert data["gold"]["latest_version"]["version"] == 1
    assert data["gold"]["latest_version"]["n_items"] == 1
    assert "triage" in data  # the latest run (none in this store: null)
    text = cli("--db", str(store), "status").stdout
    assert "gold set: 2 items (1 candidate, 1 verified); latest version v1" in text
