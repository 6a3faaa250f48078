"""Files from a hostile week: every one gives a clear one-line error or a correct account.

Each case was written first and failed before its fix: oversized lines that vanished with exit
0, a line of NUL bytes that was not counted, a truncated .zst that imported part of itself, a
search log that imported as a gold set, a deeply nested document that was a traceback, a named
pipe or a looping link called "no such file", and a 20,000-column CSV that ran out of memory.
The fuzz corpus at the end runs many small malformed files through every reader.
"""

from __future__ import annotations

import gzip
import json
import os
import random
from pathlib import Path

import duckdb
import pytest
import zstandard

from goldmine.ingest import scan

from helpers import write_jsonl

BIG = 50 * 1024 * 1024


def _event(i: int) -> dict:
    return {"query": f"query number {i}", "ts": "2026-11-30T10:00:00Z", "session_id": f"s{i % 7}"}


def _ingest(cli, db: Path, kind: str, path: Path, *extra: str):
    return cli("--db", str(db), "ingest", kind, str(path), "--json", *extra)


def _one_line_error(proc, code: int = 2) -> str:
    assert proc.returncode == code, proc.stderr
    assert "Traceback" not in proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), proc.stderr
    return lines[0]


def _rejects(db: Path) -> list[tuple]:
    with duckdb.connect(str(db), read_only=True) as con:
        return con.execute("SELECT line, reason, raw FROM rejects ORDER BY line").fetchall()


def _total(proc) -> dict:
    return json.loads(proc.stdout)["total"]


# --- 1. oversized and binary lines are counted and rejected ---------------------------------


@pytest.mark.slow
def test_a_50mb_first_line_is_rejected_and_the_next_stored(cli, tmp_path):
    path = tmp_path / "log.jsonl"
    with path.open("w") as f:
        f.write(json.dumps({**_event(0), "query": "x" * BIG}) + "\n")
        f.write(json.dumps(_event(1)) + "\n")
    proc = _ingest(cli, tmp_path / "s.duckdb", "searchlog", path)
    assert proc.returncode == 0, proc.stderr
    assert _total(proc) == {"rows_in": 2, "stored": 1, "rejected": 1, "already_present": 0}
    [(line, reason, _)] = _rejects(tmp_path / "s.duckdb")
    assert line == 1
    assert reason.startswith(
        f"line too long ({path.stat().st_size - len(json.dumps(_event(1))) - 2:,} bytes"
    )
    assert "the limit is 16,777,216, set by" in reason


@pytest.mark.slow
def test_a_corpus_of_one_50mb_chunk_is_one_reject_not_nothing(cli, tmp_path):
    path = write_jsonl(tmp_path / "corpus.jsonl", [{"id": "c1", "text": "y" * BIG}])
    proc = _ingest(cli, tmp_path / "s.duckdb", "corpus", path)
    # Nothing stored is an error unless --allow-empty; either way the line is accounted for.
    assert proc.returncode != 0 and "all 1 rows were rejected (line too long" in proc.stderr
    assert _total(proc) == {"rows_in": 1, "stored": 0, "rejected": 1, "already_present": 0}
    assert _rejects(tmp_path / "s.duckdb")[0][:1] == (1,)


@pytest.mark.slow
def test_a_50mb_line_that_is_not_json_is_rejected_among_good_lines(cli, tmp_path):
    path = write_jsonl(tmp_path / "log.jsonl", [_event(0), "z" * BIG, _event(2), _event(3)])
    proc = _ingest(cli, tmp_path / "s.duckdb", "searchlog", path)
    assert proc.returncode == 0, proc.stderr
    assert _total(proc) == {"rows_in": 4, "stored": 3, "rejected": 1, "already_present": 0}
    assert [r[0] for r in _rejects(tmp_path / "s.duckdb")] == [2]


def test_a_line_of_nul_bytes_is_counted_and_rejected(cli, tmp_path):
    rows = [_event(i) for i in range(4)] + [b"\0" * 100] + [_event(i) for i in range(4, 8)]
    path = write_jsonl(tmp_path / "log.jsonl", rows)
    proc = _ingest(cli, tmp_path / "s.duckdb", "searchlog", path)
    assert proc.returncode == 0, proc.stderr
    assert _total(proc) == {"rows_in": 9, "stored": 8, "rejected": 1, "already_present": 0}
    [(line, reason, raw)] = _rejects(tmp_path / "s.duckdb")
    assert (line, reason, raw) == (5, scan.BINARY, None)


def test_a_nul_inside_a_json_line_keeps_the_other_lines_numbered(cli, tmp_path):
    rows = [_event(0), b'{"query": "a\0b", "ts": "2026-11-30T10:00:00Z"}', _event(2)]
    path = write_jsonl(tmp_path / "log.csv.jsonl", rows)
    proc = _ingest(cli, tmp_path / "s.duckdb", "searchlog", path)
    assert _total(proc) == {"rows_in": 3, "stored": 2, "rejected": 1, "already_present": 0}
    assert [r[0] for r in _rejects(tmp_path / "s.duckdb")] == [2]


def test_mixed_line_ends_and_a_cr_inside_a_line_lose_nothing(cli, tmp_path):
    """DuckDB's reader stops the whole file at LF and CRLF mixed, or at a CR inside a line."""
    a, b, c = (json.dumps(_event(i)).encode() for i in range(3))
    path = tmp_path / "log.jsonl"
    path.write_bytes(a + b"\n" + b + b"\r\n" + c.replace(b", ", b",\r ", 1) + b"\n")
    proc = _ingest(cli, tmp_path / "s.duckdb", "searchlog", path)
    assert proc.returncode == 0, proc.stderr
    assert _total(proc) == {"rows_in": 3, "stored": 3, "rejected": 0, "already_present": 0}


@pytest.mark.parametrize(
    "data,said",
    [
        ('{"query": "a"}\n'.encode("utf-16"), "UTF-16 text: goldmine reads UTF-8"),
        (bytes(range(256)) * 40, "binary data, not text: 40 of 41 lines hold NUL bytes"),
    ],
)
def test_a_file_that_is_not_utf8_text_says_so(cli, tmp_path, data, said):
    path = tmp_path / "log.jsonl"
    path.write_bytes(data)
    assert said in _one_line_error(_ingest(cli, tmp_path / "s.duckdb", "searchlog", path))


@pytest.mark.parametrize(
    "data,odd",
    [
        (b"a\nb\rc", True),  # a CR in an unterminated last line of an LF file
        (b"x\ry\r", False),  # old Mac line ends: DuckDB reads them
        (b"a\r\nb\r\n", False),
        (b"a\nb\r\n", True),  # LF and CRLF mixed
        (b"abc\r\nd\n", True),
        (b"abc\r\nd\r\n", False),
        (b"ab\rcd\n", True),
        (b"abc\rxd\n", True),
        (b"a\nbcdefg\rhij\nk\n", True),
    ],
)
@pytest.mark.parametrize("chunk", [1, 2, 3, 4, 5, 8, 64])
def test_odd_line_ends_are_found_across_chunks(data, odd, chunk, tmp_path, monkeypatch):
    monkeypatch.setattr(scan, "_CHUNK", chunk)
    path = tmp_path / "f.jsonl"
    path.write_bytes(data)
    assert scan.scan_file(path, "none", lines=True).odd_line_ends == odd


def _naive(data: bytes, limit: int) -> tuple[int, list[tuple[int, int, str]], bool]:
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    bad = []
    for n, line in enumerate(lines, start=1):
        if len(line) > limit:
            bad.append((n, len(line), "long"))
        elif b"\0" in line:
            bad.append((n, len(line), "nul"))
    terminated = data.endswith(b"\n")
    ended = lines if terminated else lines[:-1]
    crlf = sum(line.endswith(b"\r") for line in ended)
    lone = any(b"\r" in line[:-1] for line in ended)
    # An unterminated last line's CR is odd in a file of LF lines (a CR-only file is not).
    lone = lone or (not terminated and len(lines) > 1 and b"\r" in lines[-1])
    return len(lines), bad, 0 < crlf < len(ended) or lone


@pytest.mark.parametrize("seed", range(400))
def test_the_line_scan_agrees_with_splitting_the_file(seed, tmp_path, monkeypatch):
    """The chunked scan (a small limit and small chunks, so lines cross chunks) finds the same
    lines as splitting the whole file, on random mixes of short, long and NUL lines."""
    rng = random.Random(seed)
    limit = rng.choice([5, 16, 64])
    monkeypatch.setattr(scan, "MAX_LINE", limit)
    monkeypatch.setattr(scan, "_CHUNK", rng.choice([1, 3, 7, 32, 100]))
    parts = []
    for _ in range(rng.randint(0, 40)):
        size = rng.choice([0, 1, limit - 1, limit, limit + 1, rng.randint(0, 4 * limit)])
        body = bytes(rng.choice(b"ab{}\0\r") if rng.random() < 0.05 else 97 for _ in range(size))
        parts.append(body)
    data = b"\n".join(parts) + (b"\n" if rng.random() < 0.5 else b"")
    path = tmp_path / "f.jsonl"
    path.write_bytes(data)
    got = scan.scan_file(path, "none", lines=True)
    count, bad, odd = _naive(data, limit)
    assert got.lines == count
    kinds = [
        (b.line, b.size, "long" if b.reason.startswith("line too") else "nul") for b in got.bad
    ]
    assert kinds == bad
    if not bad:  # a long line's CRs are not looked at (the line is rejected whole)
        assert got.odd_line_ends == odd


# --- 2. a truncated compressed stream is an error, and nothing of it is stored --------------


def _lines_bytes(n: int) -> bytes:
    return "".join(json.dumps(_event(i)) + "\n" for i in range(n)).encode()


@pytest.mark.parametrize("kind", ["zst", "gz"])
def test_a_truncated_compressed_file_is_one_line_and_stores_nothing(cli, tmp_path, kind):
    data = _lines_bytes(20000)
    packed = zstandard.ZstdCompressor().compress(data) if kind == "zst" else gzip.compress(data)
    path = tmp_path / f"log.jsonl.{kind}"
    path.write_bytes(packed[: len(packed) // 2])
    db = tmp_path / "s.duckdb"
    error = _one_line_error(_ingest(cli, db, "searchlog", path))
    stream = "zstd" if kind == "zst" else "gzip"
    assert f"log.jsonl.{kind}: the {stream} stream ends early at byte" in error
    assert "(after line " in error and "nothing from it was stored" in error
    # The store this command made is not left behind either (issue 26).
    assert not db.exists()


def _smart(n: int) -> bytes:
    return "".join(
        f".I {i}\r\n.T\r\ntitle {i}\r\n.A\r\nauthor\r\n.W\r\nthe text of record {i} .\r\n"
        for i in range(1, n + 1)
    ).encode()


def _trec(n: int) -> bytes:
    return "".join(
        f"<DOC>\n<DOCNO> AP-{i} </DOCNO>\n<HEAD>head {i}</HEAD>\n"
        f"<TEXT>\ntext {i}\n</TEXT>\n</DOC>\n"
        for i in range(n)
    ).encode()


def _tsv(n: int) -> bytes:
    return "".join(f"{i}\tpassage number {i} with words\n" for i in range(n)).encode()


@pytest.mark.parametrize(
    ("name", "make", "n"),
    [
        ("cran.all.1400.gz", _smart, 20000),
        ("cran.all.1400.gz", _smart, 3),  # cut inside gzip's first buffer: nothing read at all
        ("ap.trec.gz", _trec, 20000),
        ("collection.tsv.gz", _tsv, 20000),
    ],
)
def test_a_truncated_collection_is_one_line_and_leaves_no_store(cli, tmp_path, name, make, n):
    """A collection cut short (an interrupted download) stopped with "Aborted!" and exit 1, the
    store made: gzip's EOFError reached the command line, where click reads it as Ctrl-D."""
    packed = gzip.compress(make(n))
    path = tmp_path / name
    path.write_bytes(packed[: len(packed) // 2])
    db = tmp_path / "s.duckdb"
    error = _one_line_error(_ingest(cli, db, "corpus", path))
    assert "gzip stream ends early" in error and "nothing from it was stored" in error, error
    assert not db.exists()


def test_a_whole_compressed_file_of_several_frames_imports_every_line(cli, tmp_path):
    first, second = _lines_bytes(300), _lines_bytes(600)[len(_lines_bytes(300)) :]
    path = tmp_path / "log.jsonl.zst"
    comp = zstandard.ZstdCompressor()
    path.write_bytes(comp.compress(first) + comp.compress(second))
    proc = _ingest(cli, tmp_path / "s.duckdb", "searchlog", path)
    assert proc.returncode == 0, proc.stderr
    assert _total(proc)["rows_in"] == 600


# --- 3. a search log is not a gold set ------------------------------------------------------


def test_gold_import_of_a_search_log_says_what_it_is(cli, tmp_path):
    path = write_jsonl(tmp_path / "searchlog.jsonl", [_event(i) for i in range(100)])
    db = tmp_path / "s.duckdb"
    error = _one_line_error(cli("--db", str(db), "gold", "import", str(path)))
    assert "holds no judgments" in error and "goldmine ingest searchlog" in error


def test_gold_import_takes_no_answer_only_as_an_explicit_field(cli, tmp_path):
    rows = [
        {"query_id": "q1", "query": "reset password", "relevant": ["c1"]},
        {"query_id": "q2", "query": "weather on mars", "no_answer": True},
        {"query_id": "q4", "query": "moon cheese", "relevant": []},  # said, and empty
    ]
    path = write_jsonl(tmp_path / "gold.jsonl", rows)
    db = tmp_path / "s.duckdb"
    proc = cli("--db", str(db), "gold", "import", str(path), "--json")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert (out["added"], out["no_answer"]) == (3, 2)
    # A record with neither labels nor the field is refused, naming its line.
    rows.append({"query_id": "q3", "query": "unlabelled"})
    path = write_jsonl(tmp_path / "gold2.jsonl", rows)
    error = _one_line_error(cli("--db", str(tmp_path / "t.duckdb"), "gold", "import", str(path)))
    assert "gold2.jsonl:4" in error and '"no_answer": true' in error


# --- 4. smaller ones ------------------------------------------------------------------------


def test_deeply_nested_json_is_one_line(cli, tmp_path):
    path = tmp_path / "gold.jsonl"
    path.write_text("[" * 100_000 + "]" * 100_000 + "\n")
    error = _one_line_error(cli("--db", str(tmp_path / "s.duckdb"), "gold", "import", str(path)))
    assert "nested too deeply" in error


def _fifo(tmp_path: Path) -> Path:
    path = tmp_path / "pipe.jsonl"
    os.mkfifo(path)
    return path


def _loop(tmp_path: Path) -> Path:
    path = tmp_path / "loop.jsonl"
    path.symlink_to(path)
    return path


@pytest.mark.parametrize(
    "make,said", [(_fifo, "is a named pipe (FIFO)"), (_loop, "symbolic link that loops")]
)
@pytest.mark.parametrize(
    "command",
    [
        ("ingest", "searchlog"),
        ("ingest", "corpus"),
        ("gold", "import"),
        ("eval", "run", "--gold", "GOLD", "--run"),
    ],
)
def test_a_pipe_or_a_looping_link_says_what_it_is(cli, tmp_path, make, said, command):
    path = make(tmp_path)
    gold = write_jsonl(
        tmp_path / "gold.jsonl", [{"query_id": "q1", "query": "a", "relevant": ["d1"]}]
    )
    args = [str(gold) if a == "GOLD" else a for a in command]
    proc = cli("--db", str(tmp_path / "s.duckdb"), *args, str(path))
    error = _one_line_error(proc)
    assert said in error and "no such file" not in error


def test_a_20000_column_csv_is_refused_at_once(cli, tmp_path):
    path = tmp_path / "wide.csv"
    with path.open("w") as f:
        f.write(",".join(f"c{i}" for i in range(20000)) + "\n")
        for _ in range(20):
            f.write(",".join(str(i) for i in range(20000)) + "\n")
    error = _one_line_error(_ingest(cli, tmp_path / "s.duckdb", "searchlog", path))
    assert "20,000 columns" in error


# --- the fuzz corpus ------------------------------------------------------------------------


def _corpus(tmp_path: Path) -> dict[str, Path]:
    """Small malformed files of every kind met so far, each with a name that says what it is."""
    good = json.dumps(_event(1))
    files: dict[str, bytes] = {
        "empty.jsonl": b"",
        "blank_lines.jsonl": b"\n\n  \n",
        "bom.jsonl": b"\xef\xbb\xbf" + good.encode() + b"\n",
        "crlf.jsonl": (good + "\r\n" + good.replace("1", "2") + "\r\n").encode(),
        "no_final_newline.jsonl": good.encode(),
        "latin1.jsonl": b'{"query": "caf\xe9"}\n',
        "array_line.jsonl": b"[1, 2, 3]\n" + good.encode() + b"\n",
        "number_line.jsonl": b"42\n",
        "string_line.jsonl": b'"hello"\n',
        "null_line.jsonl": b"null\n",
        "half_object.jsonl": b'{"query": "cut off\n' + good.encode() + b"\n",
        "nul_bytes.jsonl": b"\0\0\0\n" + good.encode() + b"\n\0",
        "utf16.jsonl": good.encode("utf-16"),
        "deep.jsonl": b'{"query": ' + b"[" * 5000 + b"]" * 5000 + b"}\n",
        "huge_number.jsonl": b'{"query": "q", "ts": 1' + b"0" * 400 + b"}\n",
        "dup_keys.jsonl": b'{"query": "a", "query": "b", "ts": "2026-11-30T10:00:00Z"}\n',
        "wrong_types.jsonl": b'{"query": 5, "ts": [1], "session_id": {"a": 1}}\n',
        "control_chars.jsonl": json.dumps({"query": "a\u0007\u001b[31mred"}).encode() + b"\n",
        "only_cr.jsonl": (good + "\r" + good).encode(),
        "binary.jsonl": bytes(range(256)) * 40,
        "quote_csv.csv": b'query,ts\n"unclosed,2026-11-30\n',
        "ragged.csv": b"query,ts\na,b,c,d\nq\n",
        "empty.csv": b"",
        "header_only.csv": b"query,ts\n",
        "array.json": b'[1, {"query": "a"}, null, "s"]',
        "truncated.json": b'[{"query": "a"}, {"query": ',
        "scalar.json": b"3",
        "not_parquet.parquet": b"PAR1 not really",
        "gz_not_gzip.jsonl.gz": good.encode(),
        "zst_not_zstd.jsonl.zst": good.encode(),
        "empty.jsonl.gz": gzip.compress(b""),
        # The search-log and collection layouts told by content (issue 26).
        "clicks_stray_quote.csv": b'user_id,query,ts,clicked_doc\nu,"q,2026-11-30,d\n'
        b"u,r,2026-11-30,d\n",
        "clicks_ragged.txt": b"AnonID\tQuery\tQueryTime\tItemRank\tClickURL\n1\tq\n"
        b"2\tq\tt\t1\tu\tx\t\n3\tq\xff\t2006-03-01 07:17:12\t\t\n4\t\0\t\t\t\n\t\t\t\t\n",
        "session_bad_utf8.xml": b'<sessiontrack2012><session num="1">\n<interaction num="1">\n'
        b"<query>caf\xe9</query>\n</interaction>\n",
        "session_cut_off.xml": b'<sessiontrack2012><session num="1"><interaction num="1" starttime'
        b'="x"><query>q</query><results><result rank="a"><clueweb12id>',
        "session_no_session.xml": b"<sessiontrack2012>\n<session>\n<interaction>\n</interaction>"
        b"\n<currentquery></currentquery>\n",
        "analytics_odd.csv": b"query,searches,ctr\nq,-1,2\nq,1e400,x\n\0,1,1\nQ!,3,150%\n"
        b"q\xff,1,1\n",
        "smart_stray.txt": b"junk\n.I 1\n.W\ntext\n.I\n.I 2 3\n.W\n\xff\n",
        "trec_unclosed.sgml": b"<DOC>\n<DOCNO>d1\n<TEXT>a & b <P\n<DOC><DOCNO></DOCNO>\n",
        "tsv_words.tsv": b"a\tb\nc\td\te\n\0\tx\n",
    }
    paths = {}
    for name, data in files.items():
        path = tmp_path / "corpus" / name
        path.parent.mkdir(exist_ok=True)
        path.write_bytes(data)
        paths[name] = path
    return paths


# Files whose bad rows are each a reject: the import goes on (a count of 1e400 once stopped it).
_READ_WHOLE = {("searchlog", "analytics_odd.csv")}


def _nonblank_lines(data: bytes) -> int:
    return sum(1 for line in data.replace(b"\r\n", b"\n").split(b"\n") if line.strip(b" \t\r"))


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["searchlog", "corpus", "tickets"])
def test_fuzz_corpus_gives_an_error_or_a_true_account(cli, tmp_path, kind):
    for name, path in _corpus(tmp_path).items():
        db = tmp_path / f"{kind}-{name}.duckdb"
        proc = _ingest(cli, db, kind, path, "--allow-empty")
        where = f"{kind} {name}: {proc.stderr[-500:]}"
        assert "Traceback" not in proc.stderr, where
        assert proc.returncode in (0, 2), where
        if proc.returncode == 2:
            assert proc.stderr.strip().splitlines()[-1].startswith("error: "), where
            assert (kind, name) not in _READ_WHOLE, where
            continue
        total = _total(proc)
        assert total["rows_in"] == total["stored"] + total["rejected"] + total["already_present"]
        if name.endswith(".jsonl") and "\r" not in path.read_bytes().replace(b"\r\n", b"\n").decode(
            "latin-1"
        ):
            assert total["rows_in"] == _nonblank_lines(path.read_bytes()), where


@pytest.mark.slow
def test_fuzz_corpus_through_gold_import_and_eval(cli, tmp_path):
    gold = write_jsonl(
        tmp_path / "gold.jsonl", [{"query_id": "q1", "query": "a", "relevant": ["d1"]}]
    )
    for name, path in _corpus(tmp_path).items():
        for args in (
            ("gold", "import", str(path)),
            ("eval", "run", "--gold", str(gold), "--run", str(path)),
            ("eval", "run", "--gold", str(path), "--run", str(gold)),
        ):
            proc = cli("--db", str(tmp_path / f"{name}.duckdb"), *args)
            where = f"{args} {name}: {proc.stderr[-500:]}"
            assert "Traceback" not in proc.stderr, where
            assert proc.returncode in (0, 1, 2), where
            if proc.returncode:
                assert proc.stderr.strip().splitlines()[-1].startswith("error: "), where


# --- found by review: what a hostile or odd file still did ----------------------------------


def test_a_reject_reason_quoting_a_value_is_redacted(cli, tmp_path):
    """A reason may quote the value it could not read; under --redact it must not keep PII."""
    rows = [
        {"query": "refund", "ts": "alice.smith@example.com"},
        {"query": "ok", "ts": "2026-11-30T10:00:00Z", "num_results": "call +44 20 7946 0958"},
        _event(3),
    ]
    path = write_jsonl(tmp_path / "log.jsonl", rows)
    proc = _ingest(cli, tmp_path / "s.duckdb", "searchlog", path, "--redact")
    assert proc.returncode == 0, proc.stderr
    stored = json.dumps(_rejects(tmp_path / "s.duckdb"))
    assert "alice" not in stored and "7946" not in stored
    assert "<EMAIL>" in stored and "<PHONE>" in stored


def test_an_iban_like_run_with_a_dotted_capital_i_does_not_stop_the_import(cli, tmp_path):
    path = write_jsonl(
        tmp_path / "log.jsonl", [{**_event(1), "query": "hesap İS12 3456 7890 1234 5678"}]
    )
    proc = _ingest(cli, tmp_path / "s.duckdb", "searchlog", path, "--redact")
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    assert _total(proc)["stored"] == 1


@pytest.mark.parametrize("kind", ["gz", "zst"])
@pytest.mark.parametrize("damage", ["truncated", "not compressed"])
def test_a_damaged_compressed_csv_is_one_line(cli, tmp_path, kind, damage):
    text = "query,ts\n" + "".join(f"q{i},2026-11-30T10:00:00Z\n" for i in range(20000))
    data = text.encode()
    packed = zstandard.ZstdCompressor().compress(data) if kind == "zst" else gzip.compress(data)
    path = tmp_path / f"log.csv.{kind}"
    path.write_bytes(packed[: len(packed) // 2] if damage == "truncated" else data)
    error = _one_line_error(_ingest(cli, tmp_path / "s.duckdb", "searchlog", path))
    assert f"log.csv.{kind}" in error


@pytest.mark.parametrize("kind", ["gz", "zst"])
def test_the_scan_inflates_a_compressed_file_a_little_at_a_time(tmp_path, kind):
    """A highly repetitive file inflates thousands of times: the scan never holds much of it."""
    data = b'{"query": "aaaa"}\n' * (3 << 20)  # 54 MB
    packed = zstandard.ZstdCompressor().compress(data) if kind == "zst" else gzip.compress(data)
    path = tmp_path / f"log.jsonl.{kind}"
    path.write_bytes(packed)
    finder = scan._LineFinder()
    raw = scan._raw_chunks(path, __import__("hashlib").sha256())
    biggest = max(
        len(c) for c in scan._decompressed(raw, "gzip" if kind == "gz" else "zstd", path, finder)
    )
    assert biggest <= 32 << 20


def test_a_warning_quoting_text_that_looks_like_markup_prints_it_as_text(capsys):
    """Warnings quote paths, queries and an endpoint's words; '[/red]' in one crashed rich."""
    from goldmine.output import warn

    warn("chunk [/red] of logs[2026]/[bold]x.jsonl")
    err = capsys.readouterr().err
    assert "chunk [/red] of logs[2026]/[bold]x.jsonl" in err.replace("\n", "")


def test_the_scan_reads_the_shared_data_sets_as_their_lines(shared_dir):
    """Real files, not ones this suite wrote: every line counted, none taken for bad."""
    files = [p for p in sorted((shared_dir / "datasets").rglob("*")) if p.is_file()]
    assert files
    for path in files:
        data = path.read_bytes()
        found = scan.scan_file(path, "none", lines=True)
        whole = data.count(b"\n") + (0 if not data or data.endswith(b"\n") else 1)
        assert (found.lines, found.bad) == (whole, []), path


def test_a_real_csv_with_lfs_inside_quotes_between_crlf_records_imports_whole(
    cli, tmp_path, shared_dataset
):
    """banking77's train.csv: CRLF records, 13 bare LFs inside quoted texts. The scan sees mixed
    line ends; DuckDB's CSV reader reads them, so nothing is staged twice and nothing lost."""
    path = shared_dataset("datasets", "banking77", "train.csv")
    assert scan.scan_file(path, "none", lines=True).odd_line_ends
    proc = _ingest(cli, tmp_path / "s.duckdb", "searchlog", path, "--map", "query=text")
    assert proc.returncode == 0, proc.stderr
    assert _total(proc) == {"rows_in": 10003, "stored": 10003, "rejected": 0, "already_present": 0}


# --- a --map naming a column the file does not have ------------------------------------------


@pytest.mark.parametrize(
    ("kind", "records", "mapping", "column"),
    [
        ("corpus", [{"id": "a", "title": "A", "text": "alpha"}], "text=body", "body"),
        ("corpus", [{"id": "a", "title": "A", "text": "alpha"}], "chunk_id=uid", "uid"),
        ("searchlog", [_event(i) for i in range(3)], "query=qq", "qq"),
    ],
)
def test_a_map_to_a_column_the_file_lacks_is_one_line(cli, tmp_path, kind, records, mapping,
                                                      column):  # fmt: skip
    """``--map text=body`` on a file with no ``body`` stored every chunk's title as its text
    (exit 0). A field a record needs (its text, id or query) so mapped is an error; any other
    is a warning, since one file of several may lack it (a column added later)."""
    path = write_jsonl(tmp_path / "f.jsonl", records)
    db = tmp_path / "s.duckdb"
    error = _one_line_error(_ingest(cli, db, kind, path, "--map", mapping))
    assert f"--map {mapping}" in error and column in error, error
    assert not db.exists()


def test_a_later_file_that_fails_is_named_and_what_was_kept_is_said(cli, tmp_path):
    """A folder of logs whose second file is a corpus: the error named no file, and the first
    file's batch, kept, went unsaid."""
    folder = tmp_path / "logs"
    folder.mkdir()
    write_jsonl(folder / "a.jsonl", [_event(i) for i in range(3)])
    write_jsonl(folder / "b.jsonl", [{"id": "d1", "title": "T", "text": "passage"}])
    db = tmp_path / "s.duckdb"
    error = _one_line_error(_ingest(cli, db, "searchlog", folder))
    assert "b.jsonl" in error and "no query field" in error, error
    assert "a.jsonl" in error and "imported" in error, error


def test_rows_that_are_not_utf8_point_at_encoding(cli, tmp_path):
    """One line of Windows-1252 among few, or from row 2,000 on, is a reject 'invalid UTF-8'
    (the file is refused only when its first lines are so): the import now says what to try."""
    path = tmp_path / "l2.csv"
    path.write_bytes("id,text\n1,ça va\n2,fine\n".encode("cp1252"))
    proc = _ingest(cli, tmp_path / "s.duckdb", "corpus", path)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)["files"][0]
    assert report["rejected"] == 1 and "--encoding cp1252" in report["note"], report


def test_a_map_to_an_optional_column_one_file_lacks_warns(cli, tmp_path):
    folder = tmp_path / "logs"
    folder.mkdir()
    (folder / "a_jan.csv").write_text("ts,q\n2026-01-05T10:00:00Z,reset password\n")
    (folder / "b_feb.csv").write_text("ts,q,sess\n2026-02-05T10:00:00Z,cancel order,s1\n")
    db = tmp_path / "s.duckdb"
    proc = _ingest(cli, db, "searchlog", folder, "--map", "query=q", "--map", "session_id=sess")
    assert proc.returncode == 0, proc.stderr
    assert "--map session_id=sess: the file has no field 'sess'" in proc.stderr
    assert json.loads(proc.stdout)["total"]["stored"] == 2


def test_the_head_of_a_gzip_file_of_many_members_is_read_past_the_first(tmp_path):
    """bgzip writes a member per 64 KiB (and cat a.gz b.gz two): the head read for the layout
    stopped at the first member's end."""
    from goldmine.ingest.scan import read_head

    data = b"".join(f"{i}\tpassage {i}\n".encode() for i in range(20000))
    packed = b"".join(gzip.compress(data[i : i + 4096]) for i in range(0, len(data), 4096))
    path = tmp_path / "c.tsv.gz"
    path.write_bytes(packed)
    assert read_head(path, "gzip", 1 << 16) == data[: 1 << 16]
    path.write_bytes(packed[: len(packed) // 2])  # cut short: what came before the cut
    assert data.startswith(read_head(path, "gzip", 1 << 20))


def test_real_cranfield_cut_short_is_one_line_and_leaves_no_store(cli, tmp_path, shared_dataset):
    """The public collection as a download cut in half: gzip's EOFError reached click."""
    real = shared_dataset("datasets", "cranfield", "cran.all.1400").read_bytes()
    packed = gzip.compress(real)
    path = tmp_path / "cran.all.1400.gz"
    path.write_bytes(packed[: len(packed) // 2])
    db = tmp_path / "s.duckdb"
    error = _one_line_error(_ingest(cli, db, "corpus", path))
    assert "gzip stream ends early" in error and "nothing from it was stored" in error, error
    assert not db.exists()


def test_add_reads_its_queries_from_stdin_with_file_dash(cli, tmp_path, monkeypatch):
    """``add`` reads its file once, so ``cat queries.txt | goldmine add --file -`` reads stdin
    (it was "-: cannot read: [Errno 2] No such file or directory: '-'")."""
    monkeypatch.chdir(tmp_path)
    db = str(tmp_path / "s.duckdb")
    added = cli("--db", db, "add", "--file", "-", "--json", input="vpn setup\n\nreset my pin\n")
    assert added.returncode == 0, added.stderr
    assert json.loads(added.stdout)["total"]["stored"] == 2, added.stdout


@pytest.mark.parametrize(
    "command", [("ingest", "searchlog"), ("ingest", "corpus"), ("gold", "import")]
)
def test_a_dash_for_stdin_says_to_write_a_file_first(cli, tmp_path, monkeypatch, command):
    """``zcat week.gz | goldmine ingest searchlog -`` said "-: no such file or folder", as if
    the user had mistyped a name: an input is read more than once (hashed, then imported), so
    stdin is not one, and the line says so as it does for a named pipe."""
    monkeypatch.chdir(tmp_path)
    error = _one_line_error(cli("--db", str(tmp_path / "s.duckdb"), *command, "-"))
    assert "stdin" in error and "write it to a file first" in error, error
    assert "no such file" not in error
