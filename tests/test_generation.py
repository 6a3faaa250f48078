"""The generation half: ``eval diagnose`` on graded answers, ``eval export-generation`` from a real
store whose corpus is written straight into ``corpus_snapshots``/``chunks``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from goldmine.errors import InputError
from goldmine.eval.generation import diagnose, read_grades
from goldmine.store import open_store

from helpers import write_gold


def grades_csv(path: Path, rows: list[tuple[str, object, object]]) -> Path:
    lines = ["query_id,with_gold,production", *(f"{q},{g},{p}" for q, g, p in rows)]
    path.write_text("\n".join(lines) + "\n")
    return path


# 6 right in both, 4 retrieval (right with gold, wrong in production), 2 wrong in both,
# 1 wrong with gold but right in production.
ROWS = (
    [(f"ok{i}", "true", "true") for i in range(6)]
    + [(f"ret{i}", 1, 0) for i in range(4)]
    + [(f"both{i}", "no", "no") for i in range(2)]
    + [("luck", "fail", "pass")]
)


def test_diagnose_table(cli, tmp_path: Path) -> None:
    path = grades_csv(tmp_path / "grades.csv", ROWS)
    result = cli("eval", "diagnose", str(path))
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    right = next(line for line in lines if line.startswith("with gold: right"))
    wrong = next(line for line in lines if line.startswith("with gold: wrong"))
    assert right.split()[3:5] == ["6", "4"] and right.endswith("retrieval")
    assert wrong.split()[3:5] == ["1", "2"] and wrong.endswith("the prompt")
    assert any(
        line.startswith("retrieval: right with the gold passages") and " 4 " in line
        for line in lines
    )
    assert "fix retrieval first: 4 queries are right with the gold passages" in result.stdout
    assert "  retrieval: ret0, ret1, ret2, ret3" in lines


def test_diagnose_json_and_jsonl_grades_with_a_pass_threshold(cli, tmp_path: Path) -> None:
    path = tmp_path / "grades.jsonl"
    records = [
        {"query_id": "a", "with_gold": 5, "production": 2},
        {"query_id": "b", "with_gold": 2, "production": 1},
        {"query_id": "c", "with_gold": 1, "production": 4},
        {"query_id": "d", "with_gold": 4, "production": 4},
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    result = cli("eval", "diagnose", str(path), "--pass-at", "4", "--json")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["counts"] == {"right_in_both": 1, "retrieval": 1, "prompt": 1, "wrong_in_both": 1}
    assert data["queries"]["retrieval"] == ["a"] and data["queries"]["wrong_in_both"] == ["b"]
    assert data["wrong_with_gold"] == 2 and data["pass_at"] == 4
    assert data["reading"].startswith("fix the prompt first: 2 queries")
    # Without --pass-at a grade of 5 is ambiguous: one line saying what to add.
    bad = cli("eval", "diagnose", str(path))
    assert bad.returncode == 2
    assert bad.stderr.strip() == (
        f"error: {path}:1: with_gold is the grade 5: give --pass-at GRADE to say which grades "
        "count as right"
    )


def test_diagnose_input_errors(tmp_path: Path) -> None:
    missing_column = tmp_path / "g.csv"
    missing_column.write_text("query_id,gold\nq1,1\n")
    with pytest.raises(InputError, match=r"g.csv:2: missing with_gold, production"):
        read_grades(missing_column)
    twice = grades_csv(tmp_path / "t.csv", [("q", 1, 1), ("q", 0, 1)])
    with pytest.raises(InputError, match="graded twice"):
        read_grades(twice)
    word = grades_csv(tmp_path / "w.csv", [("q", "maybe", 1)])
    with pytest.raises(InputError, match="neither a boolean"):
        read_grades(word)
    empty = grades_csv(tmp_path / "e.csv", [])
    with pytest.raises(InputError, match="no grades"):
        read_grades(empty)
    tie = diagnose({"a": (True, False), "b": (False, False)})
    assert tie.to_json()["reading"].startswith(
        "retrieval and the prompt lose as many queries (1 each)"
    )
    d = diagnose({"q": (True, True)})
    assert d.n == 1 and d.to_json()["reading"].startswith("every query is right in both")


def add_corpus(db: Path, chunks: list[tuple[str, str, str]], snapshot_id: int = 1) -> None:
    with open_store(db) as con:
        con.execute(
            "INSERT INTO corpus_snapshots VALUES (?, 1, now()::TIMESTAMP, 'hash', ?, NULL)",
            [snapshot_id, len(chunks)],
        )
        for cid, title, text in chunks:
            con.execute(
                "INSERT INTO chunks VALUES (?, ?, NULL, ?, NULL, ?, sha256(?), NULL)",
                [snapshot_id, cid, title, text, text],
            )


def test_export_generation_with_gold_and_run(cli, tmp_path: Path, db_path: Path) -> None:
    gold = tmp_path / "gold.jsonl"
    gold.write_text(
        json.dumps({"query_id": "q1", "query": "reset password", "relevant": {"d1": 2, "d2": 1}})
        + "\n"
        + json.dumps({"query_id": "q2", "query": "refund", "relevant": ["d3"]})
        + "\n"
        + json.dumps({"query_id": "q3", "query": "weather on mars", "relevant": []})
        + "\n"
    )
    run = tmp_path / "run.jsonl"
    run.write_text(
        json.dumps({"query_id": "q1", "results": ["d9", "d2", "d1"]})
        + "\n"
        + json.dumps({"query_id": "q2", "results": ["d3"]})
        + "\n"
    )
    # An old snapshot first: the current one (highest id) is the one read.
    add_corpus(db_path, [("d1", "Old", "stale text")], snapshot_id=1)
    add_corpus(
        db_path,
        [
            ("d1", "Passwords", "Click 'forgot password'."),
            ("d2", "Account", "Settings page."),
            ("d9", "Other", "Unrelated."),
        ],
        snapshot_id=2,
    )
    out = tmp_path / "out" / "gen.jsonl"
    result = cli(
        "eval",
        "export-generation",
        "--gold",
        str(gold),
        "--out",
        str(out),
        "--run",
        str(run),
        "--k",
        "2",
        "--db",
        str(db_path),
    )
    assert result.returncode == 0, result.stderr
    assert "wrote 2 answerable queries with 3 gold chunks" in result.stdout
    assert "1 chunk ids are not in corpus snapshot 2" in result.stderr  # d3
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["query_id"] for r in records] == ["q1", "q2"]  # q3 has no answer: not exported
    q1 = records[0]
    assert q1["format_version"] == 1 and q1["query"] == "reset password"
    assert q1["gold"] == [
        {"chunk_id": "d1", "title": "Passwords", "text": "Click 'forgot password'.", "grade": 2},
        {"chunk_id": "d2", "title": "Account", "text": "Settings page.", "grade": 1},
    ]
    assert q1["retrieved"] == [
        {"rank": 1, "chunk_id": "d9", "title": "Other", "text": "Unrelated.", "relevant": False},
        {
            "rank": 2,
            "chunk_id": "d2",
            "title": "Account",
            "text": "Settings page.",
            "relevant": True,
        },
    ]
    assert records[1]["gold"][0]["text"] is None


def test_export_generation_from_a_file_without_run_and_without_corpus(
    cli, tmp_path: Path, db_path: Path
) -> None:
    gold = write_gold(tmp_path / "gold.jsonl", 3)
    out = tmp_path / "gen.jsonl"
    args = ("eval", "export-generation", "-g", str(gold), "-o", str(out), "--db", str(db_path))
    missing = cli(*args)  # a mistyped --db is named, not created
    assert missing.returncode == 2 and "no goldmine store at" in missing.stderr
    assert not db_path.exists()
    with open_store(db_path):
        pass
    empty = cli(*args)
    assert empty.returncode == 2 and "no corpus in the store" in empty.stderr
    add_corpus(db_path, [(f"d{i}", f"T{i}", f"text {i}") for i in range(3)])
    result = cli(*args, "--json")
    assert result.returncode == 0, result.stderr
    stats = json.loads(result.stdout)
    assert stats["n_queries"] == 3 and stats["n_missing_chunks"] == 0 and stats["k"] is None
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert "retrieved" not in records[0]
    assert records[2]["gold"][0]["text"] == "text 2"


def test_export_generation_from_a_published_version(cli, tmp_path: Path, db_path: Path) -> None:
    add_corpus(db_path, [("c1", "Passwords", "Reset it from the login page."), ("c2", "VPN", "x")])

    def gold(*args: str) -> str:
        result = cli("--db", str(db_path), "gold", *args)
        assert result.returncode == 0, result.stderr
        return result.stdout

    added = gold("add-query", "reset password", "vpn setup", "--by", "t")
    ids = [line.split("\t")[1] for line in added.splitlines()]
    gold("label", ids[0], "--chunk", "c1=2", "--by", "a")
    gold("label", ids[1], "--no-answer", "--by", "a")
    gold("publish", "-m", "first", "--by", "a")
    out = tmp_path / "gen.jsonl"
    result = cli(
        "eval",
        "export-generation",
        "--gold",
        "v1",
        "--out",
        str(out),
        "--db",
        str(db_path),
        "--json",
    )
    assert result.returncode == 0, result.stderr
    stats = json.loads(result.stdout)
    assert stats["gold_source"] == "v1" and stats["n_queries"] == 1
    (record,) = [json.loads(line) for line in out.read_text().splitlines()]
    assert record["query"] == "reset password"
    assert record["gold"] == [
        {
            "chunk_id": "c1",
            "title": "Passwords",
            "text": "Reset it from the login page.",
            "grade": 2,
        }
    ]


GRADED = [
    {"query_id": "a", "with_gold": True, "production": False},
    {"query_id": "b", "with_gold": True, "production": True},
    {"query_id": "c", "with_gold": False, "production": False},
]


def _write_grades(path: Path) -> Path:
    """GRADED as a notebook saves a frame of grades: by the file's suffix."""
    import polars as pl

    frame = pl.DataFrame(GRADED)
    if path.suffix == ".json":  # pandas' to_json(orient="records"), json.dump(list)
        path.write_text(json.dumps(GRADED).replace('"c"', "3.0"))
    elif path.suffix == ".parquet":
        frame.write_parquet(path)
    elif path.name.endswith(".semicolon.csv"):  # Excel in a locale with a decimal comma
        frame.write_csv(path, separator=";")
    else:  # a TSV named .txt
        frame.write_csv(path, separator="\t")
    return path


@pytest.mark.parametrize("name", ["grades.json", "grades.parquet", "grades.semicolon.csv",
                                  "grades.txt"])  # fmt: skip
def test_diagnose_reads_grades_as_notebooks_save_them(tmp_path: Path, name: str) -> None:
    grades = read_grades(_write_grades(tmp_path / name))
    third = "3" if name.endswith(".json") else "c"  # a float column's 3.0 is query 3
    assert grades == {"a": (True, False), "b": (True, True), third: (False, False)}
