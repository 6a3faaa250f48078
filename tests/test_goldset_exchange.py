"""``gold import`` of judgments from elsewhere: grades off goldmine's 0-2 scale are refused until
``--grade-map`` says how they read, ``--topics`` reads the common topic layouts (Cranfield's
``cran.qry`` numbered by position, as its qrels are), and the gold commands that write files or
versions say what they did as JSON."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from goldmine.store import open_store

from helpers import build
from realdata import cranfield_queries


def gold(cli, db: Path, *args: str, ok: bool = True):
    result = cli("--db", str(db), "gold", *args)
    if ok:
        assert result.returncode == 0, result.stderr
    return result


def import_qrels(cli, db: Path, qrels: str, topics: tuple[str, str], *args: str, ok: bool = True):
    """Write a qrels file and a topics file (name, text) beside the store; import them."""
    qrels_path, topics_path = db.parent / "qrels", db.parent / topics[0]
    qrels_path.write_text(qrels)
    topics_path.write_text(topics[1], encoding="utf-8", newline="")
    return gold(cli, db, "import", str(qrels_path), "--topics", str(topics_path), *args, ok=ok)


def n_items(db: Path) -> int:
    with open_store(db) as con:
        return con.execute("SELECT count(*) FROM gold_items").fetchall()[0][0]


# --- grades outside the scale --------------------------------------------------------------------


def test_import_refuses_grades_outside_0_2_without_a_grade_map(cli, db_path, tmp_path) -> None:
    qrels = "t1 0 a 1\nt1 0 b 3\nt1 0 c -1\nt2 0 d 4\nt2 0 e 2\n"
    topics = ("topics.tsv", "t1\treset my password\nt2\tvpn\n")

    refused = import_qrels(cli, db_path, qrels, topics, ok=False)
    assert refused.returncode == 2
    message = refused.stderr
    assert "grades outside 0-2 found: -1, 3, 4" in message
    assert "--grade-map" in message
    # Both readings of a 1-4 scale are offered, each with an entry for every grade in the file.
    assert "--grade-map 1=2,2=2,3=1,4=1,-1=0" in message
    assert "--grade-map 1=1,2=1,3=2,4=2,-1=0" in message
    assert n_items(db_path) == 0

    imported = import_qrels(cli, db_path, qrels, topics, "--grade-map", "1=2,2=2,3=1,4=1,-1=0")
    assert imported.stdout.startswith("imported 2 verified queries (trec), 5 labels")


def test_import_of_grades_on_the_scale_needs_no_map(cli, db_path, tmp_path) -> None:
    rows = [{"query_id": "m1", "query": "dark mode", "relevant": {"a": 2, "b": 0, "c": 1}}]
    minimal = tmp_path / "mini.jsonl"
    minimal.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert gold(cli, db_path, "import", str(minimal)).stdout.startswith("imported 1 verified")
    graded = tmp_path / "graded.jsonl"
    graded.write_text(json.dumps({"query_id": "m2", "query": "x", "relevant": {"a": 5}}) + "\n")
    refused = gold(cli, db_path, "import", str(graded), ok=False)
    assert refused.returncode == 2 and "grades outside 0-2 found: 5" in refused.stderr


def test_cranfield_raw_qrels_and_cran_qry_import_by_position(cli, shared_dataset, tmp_path) -> None:
    folder = shared_dataset("datasets", "cranfield")
    db = tmp_path / "cran.duckdb"
    qrels, qry = folder / "cranqrel", folder / "cran.qry"

    refused = gold(cli, db, "import", str(qrels), "--topics", str(qry), ok=False)
    assert refused.returncode == 2
    assert "grades outside 0-2 found: -1, 3, 4" in refused.stderr
    assert "--grade-map 1=2,2=2,3=1,4=1,-1=0" in refused.stderr

    imported = gold(cli, db, "import", str(qrels), "--topics", str(qry),
                    "--grade-map", "1=2,2=2,3=1,4=1,-1=0")  # fmt: skip
    assert "numbered by position" in imported.stderr and "(004 is query 3)" in imported.stderr
    out = imported.stdout
    assert out.startswith("imported 225 verified queries (trec), 1837 labels, 0 no answer")
    expected = cranfield_queries(folder)
    # cran.qry prints .I 001, 002, 004, ... 365; the qrels number the queries 1..225 by position.
    for position in ("1", "3", "225"):
        shown = json.loads(gold(cli, db, "show", position, "--json").stdout)
        assert shown["query"] == expected[position]
    assert expected["225"].startswith("what design factors can be used to control lift-drag")
    with open_store(db) as con:
        ids = {r[0] for r in con.execute("SELECT query_id FROM gold_items").fetchall()}
    assert ids == {str(n) for n in range(1, 226)}


# --- topic formats -------------------------------------------------------------------------------

TOPIC_FILES = {
    "trec.txt": (
        "<top>\n<num> Number: 301\n<title> International Organized Crime\n\n"
        "<desc> Description:\nIdentify organizations.\n</top>\n\n"
        "<top>\n<num> Number: 302\n<title>\nPoliomyelitis and Post-Polio\n<desc>\nx\n</top>\n"
    ),
    "topics.tsv": "301\tInternational Organized Crime\n302\tPoliomyelitis and Post-Polio\n",
    "queries.jsonl": (
        json.dumps({"_id": "301", "text": "International Organized Crime"})
        + "\n"
        + json.dumps({"query_id": "302", "query": "Poliomyelitis and Post-Polio"})
        + "\n"
    ),
    # JSONL under another name is still recognised by its content.
    "queries.txt": (
        json.dumps({"qid": 301, "query": "International Organized Crime"})
        + "\n"
        + json.dumps({"qid": 302, "title": "Poliomyelitis and Post-Polio"})
        + "\n"
    ),
    "cran.qry": (
        ".I 001\r\n.W\r\nInternational Organized\r\nCrime\r\n"
        ".I 004\r\n.W\r\nPoliomyelitis and Post-Polio\r\n"
    ),
}


@pytest.mark.parametrize("name", sorted(TOPIC_FILES))
def test_topics_in_every_common_layout(cli, tmp_path, name: str) -> None:
    db = tmp_path / "store.duckdb"
    first, second = ("1", "2") if name == "cran.qry" else ("301", "302")
    qrels = f"{first} 0 d1 1\n{second} 0 d2 2\n"
    out = import_qrels(cli, db, qrels, (name, TOPIC_FILES[name])).stdout
    assert out.startswith("imported 2 verified queries (trec), 2 labels")
    texts = {
        qid: json.loads(gold(cli, db, "show", qid, "--json").stdout)["query"]
        for qid in (first, second)
    }
    assert texts == {first: "International Organized Crime", second: "Poliomyelitis and Post-Polio"}


def test_topics_with_no_topic_in_them_are_refused(cli, db_path) -> None:
    topics = ("topics.sgml", "<top>\n<desc> nothing numbered\n</top>\n")
    refused = import_qrels(cli, db_path, "1 0 d1 1\n", topics, ok=False)
    assert refused.returncode == 2 and "topics.sgml" in refused.stderr


# --- --json --------------------------------------------------------------------------------------


@pytest.fixture
def store(db_path: Path) -> Path:
    build(db_path)
    return db_path


def test_gold_commands_report_as_json(cli, store: Path, tmp_path: Path) -> None:
    from helpers import norm_qid as qid

    gold(cli, store, "add-query", "reset password", "vpn setup")
    drafted = json.loads(gold(cli, store, "draft", "-k", "2", "--json").stdout)
    assert drafted == {"items": 2, "drafts": 4, "retriever": "bm25", "snapshot_id": 1}

    gold(cli, store, "label", qid("reset password"), "--chunk", "kb-reset-1=2",
         "--rest-not-relevant")  # fmt: skip
    gold(cli, store, "label", qid("vpn setup"), "--no-answer")
    published = json.loads(gold(cli, store, "publish", "-m", "first", "--json").stdout)
    assert published["version"] == 1 and len(published["content_hash"]) == 64
    assert {k: published[k] for k in ("n_items", "n_answerable", "n_no_answer")} == {
        "n_items": 2,
        "n_answerable": 1,
        "n_no_answer": 1,
    }
    assert published["message"] == "first" and published["n_drifted"] == 0

    verified = json.loads(gold(cli, store, "verify", "--json").stdout)
    assert verified == {
        "ok": True,
        "versions": [
            {
                "version": 1,
                "ok": True,
                "n_items": 2,
                "expected_items": 2,
                "stored": published["content_hash"],
                "recomputed": published["content_hash"],
            }
        ],
    }

    out = tmp_path / "gold"
    exported = json.loads(gold(cli, store, "export", "--out", str(out), "--json").stdout)
    assert exported == {
        "version": 1,
        "format": "jsonl",
        "content_hash": published["content_hash"],
        "n_items": 2,
        "paths": [str(out / "v0001.jsonl")],
    }
    header = json.loads((out / "v0001.jsonl").read_text().splitlines()[0])
    assert published["n_labels"] == header["counts"]["labels"] > 0
    trec = json.loads(gold(cli, store, "export", "--out", str(out), "--format", "trec",
                           "--json").stdout)  # fmt: skip
    assert trec["paths"] == [str(out / "v0001.qrels"), str(out / "v0001.topics.tsv")]

    empty = tmp_path / "empty.duckdb"
    restored = json.loads(gold(cli, empty, "import", exported["paths"][0], "--json").stdout)
    assert restored["format"] == "goldmine" and restored["version"] == 1
    assert restored["restored"] is True and restored["added"] == 2
    assert restored["content_hash"] == published["content_hash"]
    assert restored["path"] == exported["paths"][0]
    qrels = json.loads(gold(cli, empty, "import", str(out / "v0001.qrels"), "--topics",
                            str(out / "v0001.topics.tsv"), "--json").stdout)  # fmt: skip
    assert qrels["format"] == "trec" and qrels["added"] == 0 and qrels["already_present"] == 2
    for key in ("labels", "no_answer", "missing_chunks", "notes"):
        assert key in qrels


def test_verify_json_names_a_changed_version_and_exits_1(cli, store: Path) -> None:
    from helpers import norm_qid as qid

    gold(cli, store, "add-query", "reset password")
    gold(cli, store, "label", qid("reset password"), "--chunk", "kb-reset-1=2",
         "--rest-not-relevant")  # fmt: skip
    gold(cli, store, "publish", "-m", "first")
    with open_store(store) as con:
        con.execute("UPDATE gold_versions SET content_hash = 'x' || content_hash")
    changed = gold(cli, store, "verify", "--json", ok=False)
    assert changed.returncode == 1
    data = json.loads(changed.stdout)
    assert data["ok"] is False and data["versions"][0]["ok"] is False


def test_triage_export_reports_as_json(cli, store: Path, tmp_path: Path) -> None:
    path = tmp_path / "queries.csv"
    result = cli("--db", str(store), "triage", "export", str(path), "--json")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data == {"path": str(path), "format": "csv", "n_queries": data["n_queries"]}
    assert data["n_queries"] == len(path.read_text().splitlines()) - 1 > 0
