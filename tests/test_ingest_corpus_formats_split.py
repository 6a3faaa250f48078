"""SMART and TREC SGML files split into records before DuckDB reads them (``read_split``) give
the records the line reader gives (``read_by_line``): the same lines, JSON and rejects, on the
odd shapes real collections have (CRLF, blank and space-only lines, a field twice, letters of
other fields, stray text, a dot that opens no field, unclosed tags), in blocks cut anywhere."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

from goldmine.ingest import corpus_formats
from goldmine.ingest.corpus_formats import read_by_line, read_split
from goldmine.ingest.corpus_split import NeedsLines
from goldmine.ingest.files import raw_view

SMART = (
    "stray header\n\n   \n"
    ".I 1\n.T\nexperimental investigation of the\naerodynamics\tof a  wing .\n"
    ".A\nbrenckman,m.\n.B\nj. ae. scs. 25, 1958, 324.\n"
    ".W\nexperimental investigation of the aerodynamics of a\nwing in a slipstream .\n"
    ".I 2\n.T\ntitle two\n.A\nfirst,a.\n.B\nbib\n.A\nsecond,b.\n.B\nmore bib\n"
    ".W\ntext one\n.W\ntext two\n"  # a field twice: both kept, in order
    ".I 3\n.T\nPreliminary Report\n.W\nAn abstract.\n.K\nalgebraic languages\n"
    ".X\n100\t5\t1\n101\t5\t1\n"  # CACM's letters: metadata
    ".I 4\n.W\nblank lines\n\n   \n\t\ninside\n\u3000\n\u00a0x\n"  # blank by trim, or not
    ".I 5\n.W\n.5 percent of the flow\n.Tx is not a field\n.t neither\nend\n"
    ".I\t6\n.T  \n.W  text on the marker line\nand below   " + " " * 40 + "\n"
    ".I 7 extra\nmore id text\n.W\nthe id holds a line break\n"
    ".I\n.W\nno id\n"
    ".I 9\n.T\nonly a title\n"
    ".I 10\n.W\n\u00e9t\u00e9 ol\u00e9 \u2014 unicode\n"
    ".I 11\n.T\n\n.W\nlast, no line end"
)

SGML = (
    "<!-- a stray line -->\n\n"
    "<DOC>\n<DOCNO> AP880212-0001 </DOCNO>\n<FILEID>AP-NR-02-12-88 2344EST</FILEID>\n"
    "<HEAD>Reports Former Saigon Officials Released</HEAD>\n<TEXT>\n"
    "   Hanoi has freed 1,320 prisoners & Black & Decker said so.\n\n   \n</TEXT>\n"
    "<TEXT>\n   A second block <P>with a paragraph</P> in it.\n</TEXT>\n</DOC>\n"
    "<doc>\n<DOCNO>LA010189-0002</DOCNO>\n<HEADLINE><P>Unclosed headline tag</HEADLINE>\n"
    "<BYLINE>By someone\n<TEXT>\nThe text of the second document, whose TEXT is never closed.\n"
    "</DOC>\n"
    "<DOC>\n<DOCNO>FT911-3</DOCNO>\n<DATE>910101</DATE>\n</DOC>\n"
    "<Doc>\n<DOCNO>WSJ-4</DOCNO><HL>  Two\ttabs  and\n runs </HL>\n<TEXT>\u00e9t\u00e9\n</TEXT>\n"
    "</DOC>\n<DOC>\n<DOCNO>X-5</DOCNO>\n<TEXT>no line end"
)


# SMART without fields of other letters (CACM's .K, .X): the split hands its records' fields as
# text columns, where a field of another letter makes it hand JSON objects.
SMART_KNOWN = SMART.replace(".K\nalgebraic languages\n.X\n100\t5\t1\n101\t5\t1\n", "")
assert SMART_KNOWN != SMART


def _records(path: Path, reader, fmt: str | None = None, **options) -> list[tuple]:
    con = duckdb.connect()
    keys = reader(con, fmt or path.name.split(".")[0], path,
                  "gzip" if path.suffix == ".gz" else "none", **options)  # fmt: skip
    raw_view(con, keys)  # records handed as text columns: their JSON object, as the stage's
    rows = con.execute("SELECT line, raw, err FROM gm_raw ORDER BY line").fetchall()
    con.close()
    return [(line, _parsed(raw), err) for line, raw, err in rows]


def _parsed(raw: str):
    try:
        return json.loads(raw)
    except ValueError:
        return raw  # a reject's text


def _write(tmp_path: Path, fmt: str, text: str, crlf: bool = False, gz: bool = False) -> Path:
    data = ("\ufeff" + text).encode()
    if crlf:
        data = data.replace(b"\n", b"\r\n")
    path = tmp_path / (f"{fmt}.gz" if gz else fmt)
    path.write_bytes(gzip.compress(data) if gz else data)
    return path


@pytest.mark.parametrize("fmt,text", [("smart", SMART), ("smart", SMART_KNOWN), ("trec", SGML)])
@pytest.mark.parametrize("crlf", [False, True])
@pytest.mark.parametrize("block", [1 << 20, 7, 61])
def test_split_reads_what_the_line_reader_reads(tmp_path: Path, fmt, text, crlf, block):
    path = _write(tmp_path, fmt, text, crlf=crlf)
    expected = _records(path, read_by_line)
    assert len(expected) >= 6  # every record, the stray text and the bad ones among them
    assert _records(path, read_split, block=block) == expected


def test_split_reads_gzip_alike(tmp_path: Path):
    path = _write(tmp_path, "smart", SMART, gz=True)
    assert _records(path, read_split, block=100) == _records(path, read_by_line)


def test_the_split_reads_its_known_fields_without_lists(tmp_path: Path):
    """Records 1, 7, the one with no id, 9 and 10 take the path that cuts the fields from the
    bytes; the others (a field twice, other letters, blank lines, a dot line, a run of 40
    spaces) take the list of fields."""
    path = _write(tmp_path, "smart", SMART)
    records = {r[1]["id"]: r[1] for r in _records(path, read_split) if isinstance(r[1], dict)
               and r[1].get("id")}  # fmt: skip
    assert records["1"]["title"] == "experimental investigation of the aerodynamics of a wing ."
    assert records["1"]["text"].endswith("of a\nwing in a slipstream .")
    assert records["2"]["text"] == "text one\ntext two"
    assert records["3"]["X"] == "100\t5\t1\n101\t5\t1"
    assert records["4"]["text"] == "blank lines\n\t\ninside\n\u00a0x"  # a tab is no blank
    assert records["10"]["text"] == "\u00e9t\u00e9 ol\u00e9 \u2014 unicode"
    assert records["7 extra\nmore id text"]["text"] == "the id holds a line break"


@pytest.mark.parametrize(
    "fmt,text,rejects",
    [
        (
            "smart",
            ".I 1\n.W\nbad \udcff byte\n",
            [(1, "invalid UTF-8 at line 3: the record is not read")],
        ),  # fmt: skip
        # a CR that ends no line: the line reader stops, and the import reads a plain copy
        ("smart", ".I 1\n.W\na CR\ralone\n", None),
        (
            "trec",
            "<DOC>\n<DOCNO>A</DOCNO>\n<TEXT>x</TEXT>\n</DOC>\n  <DOC>\n<DOCNO>B</DOCNO>\n",
            [],
        ),
    ],
)
def test_what_only_the_line_reader_reads_goes_to_it(tmp_path: Path, fmt, text, rejects):
    path = tmp_path / fmt
    path.write_bytes(text.encode("utf-8", "surrogateescape"))
    with pytest.raises(NeedsLines):
        _records(path, read_split)
    if rejects is not None:
        got = _records(path, corpus_formats.read)
        assert [(line, err) for line, _, err in got if err] == rejects
        assert len(got) == (2 if fmt == "trec" else 1)  # TREC: "  <DOC>" opens one; SMART: the
        # record, a reject naming its bad line


def test_trec_text_blocks_are_trimmed_at_both_ends(tmp_path: Path):
    """A block's spaces and line ends go at both ends, tags inside it, runs of spaces and tabs
    become one space, and an empty last block adds no line (the texts the reader gave before
    the blocks were trimmed in the pattern that ends them)."""
    path = tmp_path / "trec"
    path.write_text(
        "<DOC>\n<DOCNO>Y</DOCNO>\n<TEXT>\n \n  x  \n \n</TEXT>\n<TEXT>\n\n</TEXT>\n</DOC>\n"
        "<DOC>\n<DOCNO>Z</DOCNO>\n<TEXT> a\t<P>b</P> \t\n \n</TEXT>\n<TEXT></TEXT></DOC>\n"
        "<DOC><DOCNO>W</DOCNO><TEXT>  tail  "
    )
    for reader in (read_split, read_by_line):
        texts = {r[1]["id"]: r[1]["text"] for r in _records(path, reader)}
        assert texts == {"Y": "x", "Z": "a b", "W": "tail"}


def test_the_split_imports_no_pandas(tmp_path: Path):
    """pyarrow imports pandas for an array made from numpy (0.4 s, more than reading all of
    Cranfield): the split makes its arrays from buffers."""
    for fmt, text in (("smart", SMART), ("trec", SGML)):
        path = _write(tmp_path, fmt, text)
        code = (
            "import sys, duckdb; from pathlib import Path; "
            "from goldmine.ingest.corpus_formats import read_split; "
            f"read_split(duckdb.connect(), {fmt!r}, Path({str(path)!r}), 'none', block=61); "
            "print('pandas' in sys.modules)"
        )
        run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
        assert (run.returncode, run.stdout.strip()) == (0, "False"), run.stderr


@pytest.mark.parametrize("block", [1 << 26, 65_536])
def test_split_reads_cranfield_as_the_line_reader_does(shared_dataset, block):
    """The real cran.all.1400 (not a file this project wrote), whole and cut into 64 KiB blocks:
    the same 1,400 records, ids, fields and lines as the line reader, and no reject."""
    path = shared_dataset("datasets", "cranfield", "cran.all.1400")
    got = _records(path, read_split, "smart", block=block)
    expected = _records(path, read_by_line, "smart")
    assert got == expected
    assert len(got) == 1400 and all(err is None for _, _, err in got)
    assert [r[1]["id"] for r in got[:3]] == ["1", "2", "3"]


# TREC fragments real collections have, the usual layout and odd ones: DOCNO missing, twice,
# with attributes, on lines of its own, after a long run of spaces; title tags in any case,
# unclosed, closed by another, twice, with markup, tabs, form feeds and line ends; several or
# no TEXT blocks, attributes, entities and quotes, blank lines, long runs of spaces, text after
# </DOC>. A record is a few of them after its <DOC> line.
_TREC_PARTS = (
    "<DOCNO> AP-{i} </DOCNO>\n", "<DOCNO>LA-{i}</DOCNO>\n", "<docno>\n  FT-{i}\n</docno>\n",
    '<DOCNO id="a">attr-{i}</DOCNO>\n', "<DOCNO>" + " " * 20 + "far-{i}</DOCNO>\n",
    "<DOCNO> open-{i}\n", "<DOCNO></DOCNO>\n", "<DOCNO>x{i}<P>y</DOCNO>\n",
    "<HEAD>Reports Officials Released</HEAD>\n", "<head>  spaced\ttitle  </head>\n",
    "<HEADLINE><P>Para title</P></HEADLINE>\n", "<HL>wsj\fhl </HL>\n",
    "<TITLE>multi\nline\n title</TITLE>\n", "<HEAD>unclosed title\n", "<HL>closed by</HEAD>\n",
    "<Headline>a < b</Headline>\n", "<HEADLINES>not a title</HEADLINES>\n",
    "<HEAD>\x0bvt\x0b</HEAD>\n", "<TiTlE>x</tItLe>\n", "<HL>\fedge\f</HL>\n",
    "<TEXT>\nplain text line .\nsecond line .\n</TEXT>\n",
    "<text>  lower case\t tabs  and  runs </text>\n", '<TEXT type="x">attr text</TEXT>\n',
    "<TEXT>\n<P>\nparagraph\n</P>\n</TEXT>\n",
    '<TEXT>\n   AP & Black & Decker &amp; "quotes" \\ back\n</TEXT>\n', "<TEXT>unclosed text\n",
    "<TEXT>\n\n blank line above\n</TEXT>\n", "<TEXT>" + " " * 30 + "after a run</TEXT>\n",
    "<TEXT></TEXT>\n", "<TEXT>\u00e9t\u00e9 \u2014 \u4e2d\u6587</TEXT>\n", "<Text>x</TEXT >\n",
    "<FILEID>AP-NR-02-12-88</FILEID>\n", "<BYLINE>By someone</BYLINE>\n", "a line of text\n",
    "   \n", "<!-- a comment -->\n", "</DOC>\ntext after the end\n", "\t<TEXT>indented</TEXT>\n",
    "x<DOC>not a record\n", "<TEXT>one</TEXT><TEXT>two</TEXT>\n",
)  # fmt: skip
_TREC_USUAL = ("<DOCNO> D{i} </DOCNO>\n", "<HEAD>A title</HEAD>\n", "<TEXT>\nline\nline\n</TEXT>\n")
_TREC_OPENERS = ("<DOC>\n", "<doc>\n", "<DOC> <DOCNO>line-{i}</DOCNO>\n")


def _trec_file(records: int, seed: int) -> str:
    import random

    rng = random.Random(seed)
    out = []
    for i in range(records):
        usual = rng.random() < 0.3  # the bench's layout, as most of a real collection is
        parts = _TREC_USUAL if usual else rng.choices(_TREC_PARTS, k=rng.randint(0, 6))
        closing = "</DOC>\n" if rng.random() < 0.8 else ""
        out.append((rng.choice(_TREC_OPENERS) + "".join(parts) + closing).replace("{i}", str(i)))
    return "".join(out).rstrip("\n")


@pytest.mark.parametrize("seed", [1, 2])
@pytest.mark.parametrize("crlf,gz", [(False, False), (True, False), (False, True)])
@pytest.mark.parametrize("block", [1 << 20, 97, 1_000])
def test_split_reads_trec_layouts_as_the_line_reader(tmp_path: Path, seed, crlf, gz, block):
    """Records of the usual layout are cut from the bytes (``Split.trec``), the others by the
    patterns: either way, the line reader's records, with blocks cut anywhere."""
    path = _write(tmp_path, "trec", _trec_file(300, seed), crlf=crlf, gz=gz)
    expected = _records(path, read_by_line)
    assert len(expected) == 300  # every record, none lost at a block's end
    assert _records(path, read_split, block=block) == expected


@pytest.mark.parametrize("fmt", ["smart", "trec"])
@pytest.mark.parametrize("data", [b"", b"\xef\xbb\xbf"], ids=["empty", "bom"])
def test_an_empty_file_has_no_records(tmp_path: Path, fmt, data):
    """An empty file (or one of a BOM alone) given as SMART or TREC (``--format``) has no
    records, as the line reader reads it; the split raised a ValueError (a traceback)."""
    path = tmp_path / fmt
    path.write_bytes(data)
    assert _records(path, read_by_line) == []
    assert _records(path, corpus_formats.read) == []


# SMART fragments real collections have, the usual layout and odd ones: fields out of order,
# twice or empty, a value on the marker's line, a marker with a tab, lowercase and unknown
# letters (CACM's .K and .X), a dot line that opens no field, blank and space-only lines, long
# runs of spaces, tabs and runs in a title, quotes and backslashes, non-ASCII text.
_SMART_PARTS = (
    ".T\nexperimental investigation of a wing .\n", ".T title on its marker's line\n",
    ".T\nmulti\nline  title\twith runs\n", ".T\n", ".T   \n", ".T\n\fform feed\f\n",
    ".T\ntwo  spaces\n", ".T\ttabbed\ttitle\n",
    ".A\nbrenckman,m.\n", ".A\n", ".A first,a.\n", ".B\nj. ae. scs. 25, 1958, 324.\n",
    ".B\n", ".W\nplain text line .\nsecond line .\n", ".W text on the marker line\nand below\n",
    ".W\n", ".W\n\n", ".W\n.5 percent of the flow\n", ".W\n" + " " * 30 + "after a run\n",
    ".W\ntrailing run" + " " * 30 + "\n", '.W\n"quotes" \\ back \\n not a line end\n',
    ".W\n\u00e9t\u00e9 ol\u00e9 \u2014 \u4e2d\u6587\n", ".W\ttab after the marker\n",
    ".K\nalgebraic languages\n", ".X\n100\t5\t1\n101\t5\t1\n", ".t lowercase is text\n",
    ".Tx is not a field\n", "a line of text\n", "   \n", "\n", "\t\n", " .W indented\n",
    ".N\nnamed\n", ".W\nblank lines\n\n   \ninside\n",
)  # fmt: skip
_SMART_USUAL = (".T\n{i} a title .\n", ".A\nauthor,{i}.\n", ".W\nline {i} .\nline two .\n")
_SMART_OPENERS = (
    ".I {i}\n",
    ".I {i} extra\n",
    ".I\t{i}\n",
    ".I  {i}  \n",
    ".I\n",
    ".I {i}\nmore\n",
)


def _smart_file(records: int, seed: int, others: bool = True) -> str:
    """``records`` SMART records of the usual layout and odd ones; ``others``: with fields
    of other letters among them (which the split hands as JSON objects, not text columns)."""
    import random

    rng = random.Random(seed)
    odd = [p for p in _SMART_PARTS if others or not p.startswith((".K", ".X", ".N"))]
    out = ["stray header\n.W\n"] if seed % 2 else []
    for i in range(records):
        if rng.random() < 0.4:  # the bench's layout, as most of a real collection is, in any order
            parts = rng.sample(_SMART_USUAL, k=rng.randint(1, 3))
            opener = _SMART_OPENERS[0]
        else:
            parts = rng.choices(odd, k=rng.randint(0, 6))
            opener = rng.choice(_SMART_OPENERS)
        out.append((opener + "".join(parts)).replace("{i}", str(i)))
    return "".join(out).rstrip("\n")


@pytest.mark.parametrize("seed", [1, 2])
@pytest.mark.parametrize("crlf,gz", [(False, False), (True, False), (False, True)])
@pytest.mark.parametrize("block", [1 << 20, 97, 1_000])
@pytest.mark.parametrize("others", [True, False])
def test_split_reads_smart_layouts_as_the_line_reader(tmp_path, seed, crlf, gz, block, others):
    """Records of the usual layout have their fields cut from the bytes (``Split.smart``), the
    others are read from the list of their fields: either way, the line reader's records, with
    blocks cut anywhere (97 bytes: a record across most block ends), handed as text columns
    or, with fields of other letters in the file, as JSON objects."""
    path = _write(tmp_path, "smart", _smart_file(300, seed, others), crlf=crlf, gz=gz)
    expected = _records(path, read_by_line)
    assert len(expected) == 300 + seed % 2  # every record (and the stray text), none lost
    assert _records(path, read_split, block=block) == expected


def test_a_marker_before_the_first_record_stays_in_the_reject(tmp_path: Path):
    """Lines before the first .I are one reject holding them as written, a marker line too:
    the line reader dropped its ``.W`` (and the split kept it), so the two readers differed."""
    path = _write(tmp_path, "smart", "stray header\n.W\n.T title\n.I 1\n.W\ntext\n")
    for reader in (read_by_line, read_split):
        assert _records(path, reader)[0] == (
            1,
            "stray header\n.W\n.T title",
            "text before the first .I line",
        )


@pytest.mark.parametrize("crlf", [False, True])
def test_the_odd_smart_layouts_take_both_paths(tmp_path: Path, crlf):
    """The file the layouts test reads has records of both kinds: cut from the bytes (with
    a CR or without), and read from the list of their fields (else that test would hold one
    path alone)."""
    from goldmine.ingest.corpus_split import cut, fill

    path = _write(tmp_path, "smart", _smart_file(300, 1), crlf=crlf)
    with path.open("rb") as handle:
        data, n, final = fill(handle, b"", 1 << 20)
    block = cut(data, n, "smart", 1, final)
    plain, crs, fields = block.split.smart(block.recs, block.marks)
    simple = crs if crlf else plain
    assert simple.num_rows > 60 and fields.num_rows > 60
    assert (plain if crlf else crs).num_rows == 0
    assert simple.num_rows + fields.num_rows == 300
    assert 0 < sum(simple.column("r").to_pylist()) < simple.num_rows  # a title with a line end


def test_the_split_hands_fields_as_text_columns_unless_one_has_another_letter(tmp_path: Path):
    """The stage reads a split record's fields as text columns, no JSON made or parsed (as a
    TSV collection's); a SMART field of another letter (CACM's .K) is a key of its own, so
    such a file is read again as JSON objects, even when the letter first comes in a later
    block."""
    con = duckdb.connect()
    usual = _write(tmp_path, "smart", ".I 1\n.T\na  title\n.W\ntext\n.I 2\n.W\nmore\n")
    assert read_split(con, "smart", usual, "none") == ["title", "id", "text", "author", "bib"]
    assert con.execute("SELECT line, raw, err, gm_f1, gm_f2, gm_f3, gm_f4 FROM gm_src ORDER BY line"
                       ).fetchall() == [(1, None, None, "a title", "1", "text", None),
                                        (6, None, None, None, "2", "more", None)]  # fmt: skip
    sgml = _write(tmp_path, "trec", "<DOC>\n<DOCNO> D1 </DOCNO>\n<TEXT>\nx\n</TEXT>\n</DOC>\n")
    assert read_split(con, "trec", sgml, "none") == ["id", "title", "text"]
    assert con.execute("SELECT raw, gm_f1, gm_f2, gm_f3 FROM gm_src").fetchall() == [
        (None, "D1", None, "x")
    ]
    cacm = _write(tmp_path, "cacm", ".I 1\n.W\ntext\n" * 20 + ".I 2\n.W\nx\n.K\nkeyword\n")
    assert read_split(con, "smart", cacm, "none", block=61) is None
    assert con.execute("SELECT raw FROM gm_src ORDER BY line DESC LIMIT 1").fetchall() == [
        ('{"title":null,"id":"2","text":"x","author":null,"bib":null,"K":"keyword"}',)
    ]


_FORCE_LINES = {  # a last record with a CR that ends no line sends the file to the line reader
    "smart": "\n.I 99\n.W\na CR\ralone\n",
    "trec": "\n<DOC>\n<DOCNO>Z</DOCNO>\n<TEXT>a CR\ralone</TEXT>\n</DOC>\n",
}


@pytest.mark.parametrize("fmt,text", [("smart", SMART_KNOWN), ("trec", SGML)])
def test_text_columns_store_what_the_line_readers_objects_store(tmp_path: Path, fmt, text):
    """The split's records (text columns) and the line reader's (JSON objects) store the same
    chunks, and the same rejects with their lines, reasons and raw objects."""
    from helpers import run_cli

    split, lines = tmp_path / "split" / fmt, tmp_path / "lines" / fmt
    for path, data in ((split, text), (lines, text + _FORCE_LINES[fmt])):
        path.parent.mkdir()
        path.write_bytes(data.encode())
    assert read_split(duckdb.connect(), fmt, split, "none") is not None  # text columns
    with pytest.raises(NeedsLines):
        read_split(duckdb.connect(), fmt, lines, "none")
    stored = []
    for path in (split, lines):
        db = path.parent / "s.duckdb"
        proc = run_cli("ingest", "corpus", str(path), "--db", str(db), "--json")
        assert proc.returncode == 0, proc.stderr
        con = duckdb.connect(str(db), read_only=True)
        last = text.count("\n") + 1  # the forced record's lines come after
        chunks = "SELECT * EXCLUDE (snapshot_id) FROM chunks WHERE chunk_id NOT IN ('99', 'Z')"
        rejects = "SELECT line, reason, raw FROM rejects WHERE line <= ? ORDER BY line"
        stored.append((con.execute(chunks + " ORDER BY chunk_id").fetchall(),
                       con.execute(rejects, [last]).fetchall()))  # fmt: skip
        con.close()
    assert stored[0] == stored[1]
    assert len(stored[0][0]) >= 4 and len(stored[0][1]) >= 2  # chunks, and rejects with raw
    assert all(raw for _, _, raw in stored[0][1])
