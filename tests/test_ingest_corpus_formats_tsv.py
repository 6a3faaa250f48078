"""A TSV collection read in one statement (``corpus_formats.read_tsv``) gives the records, lines
and rejects of the line reader (``read_by_line``), which reads the lines into a table first."""

from __future__ import annotations

import gzip
import random
from pathlib import Path

import duckdb
import pytest

from goldmine.ingest import api
from goldmine.ingest.corpus_formats import read_by_line, read_tsv
from goldmine.ingest.files import raw_view
from goldmine.store import open_store

from helpers import write_jsonl

# Lines a collection may hold: CSV-quoted texts, backslashes, control characters JSON escapes,
# non-ASCII (U+2028 too), empty fields, blank and white-space lines, too few or many fields.
TRICKY = [
    '7\t"a ""quoted"" passage"\tTitle',
    "8\tback\\slash and \\n written out\tT",
    "9\tbell \x01 vertical \x0b feed \x0c unit \x1f end\tT",
    "10\tAhärôn 👋 line\u2028separator\tÜ",
    "11\t\t",
    "",
    "   ",
    "\t\t",
    "12\tonly two fields",
    "13\tfour\tfields\there",
    '14\t"unclosed quote\tT',
    "15\ttrailing space \tT ",
    '16\t{"a json": [1, 2]}\t</tag>',
]


def _gm_raw(con: duckdb.DuckDBPyConnection, keys: list[str] | None) -> list[tuple]:
    """The records as every target reads them: JSON objects made of the text columns."""
    raw_view(con, keys)
    return con.execute("SELECT line, raw, err FROM gm_raw ORDER BY line").fetchall()


def _both(path: Path, compression: str = "none") -> tuple[list[tuple], list[tuple], bool]:
    """gm_src by the one-statement reader and by the line reader, and whether the first read
    the file in one statement (the line reader's table of lines was not made)."""
    con = duckdb.connect()
    one = _gm_raw(con, read_tsv(con, path, compression))
    tables = {r[0] for r in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()}
    con.close()
    con = duckdb.connect()
    lines = _gm_raw(con, read_by_line(con, "tsv", path, compression))
    con.close()
    return one, lines, "gm_lines" not in tables


def test_tricky_lines_with_a_header_read_alike(tmp_path: Path):
    path = tmp_path / "psgs.tsv"
    path.write_text("id\ttext\ttitle\n" + "\n".join(TRICKY) + "\n", encoding="utf-8")
    one, lines, one_pass = _both(path)
    assert one_pass
    assert one == lines
    by_line = {r[0]: r for r in one}
    assert 1 not in by_line  # the header
    assert by_line[2][1] == '{"id":"7","text":"a \\"quoted\\" passage","title":"Title"}'
    assert by_line[4][1] == (
        '{"id":"9","text":"bell \\u0001 vertical \\u000B feed \\f unit \\u001F end","title":"T"}'
    )
    assert by_line[10][2] == "expected 3 tab-separated fields, found 2"
    assert by_line[11][2] == "expected 3 tab-separated fields, found 4"
    assert {7, 8} - set(by_line) == {7, 8}  # blank lines are no records
    assert by_line[9][1] == '{"id":"","text":"","title":""}'  # tabs only: three empty fields


def test_no_header_crlf_and_gzip_read_alike(tmp_path: Path):
    body = "\r\n".join(['0\tThe presence of "communication', *TRICKY[:5]]) + "\r\n"
    plain = tmp_path / "collection.tsv"
    plain.write_bytes(body.encode())
    packed = tmp_path / "collection.tsv.gz"
    packed.write_bytes(gzip.compress(body.encode()))
    for path, compression in ((plain, "none"), (packed, "gzip")):
        one, lines, one_pass = _both(path, compression)
        assert one_pass and one == lines
        assert one[0] == (1, '{"id":"0","text":"The presence of \\"communication"}', None)
        assert not any("\\r" in r[1] for r in one)


def test_a_line_the_reader_cannot_read_takes_the_line_reader(tmp_path: Path):
    path = tmp_path / "collection.tsv"
    path.write_bytes(b"1\tfirst\n2\tbad \xff byte\n\n3\tthird\n")
    one, lines, one_pass = _both(path)
    assert not one_pass
    assert one == lines
    assert [(r[0], r[2]) for r in one] == [(1, None), (2, "invalid UTF-8"), (4, None)]


def test_the_stage_reads_the_text_columns_as_it_reads_the_same_records_as_json(
    tmp_path: Path, db_path: Path
):
    # The stage reads a TSV's text columns (files.typed_rows) with no JSON between: the chunks,
    # rejects and their raw text are those of the same records given as JSON lines.
    tsv = tmp_path / "psgs.tsv"
    dup = ["7\tthe same id again\tT", "9\t \tblank text", "20\tfine\t", "21\tcol4\tT"]
    tsv.write_text("id\ttext\ttitle\n" + "\n".join(TRICKY + dup) + "\n", encoding="utf-8")
    con = duckdb.connect()
    records = _gm_raw(con, read_tsv(con, tsv, "none"))
    con.close()
    jsonl = write_jsonl(tmp_path / "psgs.jsonl", [r[1] for r in records if r[2] is None])
    got = {}
    for path in (tsv, jsonl):
        store = db_path.with_name(path.suffix[1:] + ".duckdb")
        with open_store(store) as con:
            api.corpus(con, [path])
            got[path.suffix] = (
                con.execute(
                    "SELECT * EXCLUDE (snapshot_id) FROM chunks ORDER BY chunk_id"
                ).fetchall(),
                con.execute(
                    "SELECT reason, raw FROM rejects WHERE reason NOT LIKE 'expected %' "
                    "ORDER BY reason, raw"
                ).fetchall(),
            )
    chunks, rejects = got[".tsv"]
    assert (chunks, rejects) == got[".jsonl"]
    assert len(chunks) == 9 and len(rejects) == 4
    assert ("duplicate chunk id: 7", '{"id":"7","text":"the same id again","title":"T"}') in rejects


def test_a_real_tsv_of_id_and_text_is_read_whole(shared_dataset, db_path: Path):
    # TREC DL 2020's topics are id<TAB>text lines with CRLF ends, as NIST ships them: read as a
    # TSV collection by its text columns, every line is a chunk, nothing dropped or changed.
    path = shared_dataset("datasets", "trec_topics", "topics.dl20.txt")
    lines = [line.split("\t") for line in path.read_text(encoding="utf-8").splitlines()]
    with open_store(db_path) as con:
        result = api.corpus(con, [path], fmt="tsv")
        chunks = con.execute("SELECT chunk_id, text FROM chunks ORDER BY chunk_id").fetchall()
    assert result.total == {"rows_in": 200, "stored": 200, "rejected": 0, "already_present": 0}
    assert chunks == sorted((qid, text) for qid, text in lines)


@pytest.mark.slow  # a big generated file: 80 MB, so that DuckDB reads it in parallel buffers
def test_a_file_read_in_parallel_keeps_its_lines(tmp_path: Path):
    rng = random.Random(5)
    words = ["flow", "wing", "shock", "heat", "laminar", "jet", "wake", "drag", "lift", "cone"]
    path = tmp_path / "collection.tsv"
    with path.open("w", encoding="utf-8", newline="\n") as out:
        for i in range(400_000):
            if i % 9973 == 0:
                out.write(TRICKY[i % len(TRICKY)] + "\n")
            else:
                text = " ".join(rng.choices(words, k=rng.randint(5, 60)))
                out.write(f"{i}\t{text}\t{rng.choice(words)}\n")
    assert path.stat().st_size > 70 << 20
    one, lines, one_pass = _both(path)
    assert one_pass
    assert len(one) == len(lines) > 399_000
    assert one == lines
