"""What reading a corpus in an IR collection's layout costs against reading its bytes at all.

Each reader of ingest/corpus_formats.py (SMART, TREC SGML, TSV) on a generated file of N records
(default 1M), against a bare DuckDB read of the same bytes (``read_csv`` of the lines into a
table), alternated in the same run: ``formats.read_raw`` into ``gm_raw``, materialized; the
same with ``gm_raw`` read to its end but not stored again (the reader's own cost: its records
are already in a table, and a copy of them costs as much as the bare read); and the whole
``ingest corpus`` into a fresh store. With ``--against REV``, the records read to the end by
the readers as they were at git revision REV (ingest/corpus_formats.py read from git), in the
same run. Prints medians and the ratio to the bare read (goal <= 1.5x for the reader), in wall
and in CPU time (``time.process_time``, every thread's, which a loaded machine moves far less);
asserts nothing about time.
Run: ``.venv/bin/python bench/bench_corpus_formats.py [--records N] [--repeat R]
[--formats smart,trec,tsv] [--no-ingest] [--by-line] [--against REV]``
"""

from __future__ import annotations

import argparse
import random
import shutil
import statistics
import time
import types
from pathlib import Path

import duckdb
from bench_searchlog_formats import module_at

from goldmine.ingest import api
from goldmine.ingest.corpus import collections
from goldmine.ingest.corpus_formats import read_by_line
from goldmine.ingest.files import RAW_LINE_OPTIONS
from goldmine.ingest.formats import detect, read_raw
from goldmine.store import open_store

OUT = Path(__file__).resolve().parent / "out"
# fmt: off
_WORDS = (
    "flow", "boundary", "layer", "pressure", "wing", "shock", "heat", "transfer", "supersonic",
    "laminar", "turbulent", "model", "theory", "experiment", "velocity", "surface", "body",
    "plate", "cone", "nozzle", "jet", "wake", "drag", "lift",
)
# fmt: on


def _sentences(n: int, words: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    return [" ".join(rng.choices(_WORDS, k=words)) + " ." for _ in range(n)]


def _write(path: Path, records: int, fmt: str) -> None:
    """A file of ``records`` records in ``fmt``: a title of 8 words, a text of two lines of 20."""
    titles, lines = _sentences(997, 8, 1), _sentences(1009, 20, 2)
    with path.open("w", encoding="utf-8", newline="\n") as out:
        for i in range(1, records + 1):
            title, one, two = titles[i % 997], lines[i % 1009], lines[(i * 7) % 1009]
            if fmt == "smart":
                out.write(f".I {i}\n.T\n{title}\n.A\nauthor,{i % 50}.\n.W\n{one}\n{two}\n")
            elif fmt == "trec":
                out.write(
                    f"<DOC>\n<DOCNO> D{i} </DOCNO>\n<HEAD>{title}</HEAD>\n<TEXT>\n{one}\n"
                    f"{two}\n</TEXT>\n</DOC>\n"
                )
            else:
                out.write(f"{i}\t{one} {two}\t{title}\n")


def _bare(path: Path) -> tuple[float, float]:
    """Wall and CPU seconds of DuckDB reading the file's lines into a table."""
    con = duckdb.connect()
    start, cpu = time.perf_counter(), time.process_time()
    con.execute(
        f"CREATE TABLE t AS SELECT raw FROM read_csv($gm_path, {RAW_LINE_OPTIONS})",
        {"gm_path": str(path), "gm_compression": "none"},
    )
    took = time.perf_counter() - start, time.process_time() - cpu
    con.close()
    return took


def _reader(path: Path, by_line: bool = False) -> float:
    """The reader's records copied into a table; ``by_line``: SMART and TREC read as lines and
    gathered in SQL, as every file was before they were split into records first (the
    reference for the split, timed in the same run)."""
    con = duckdb.connect()
    item = collections([detect(path)])[0]  # a .tsv corpus is a TSV collection
    start = time.perf_counter()
    if by_line:
        read_by_line(con, item.format, item.path, item.compression)
        con.execute("CREATE OR REPLACE TEMP VIEW gm_raw AS SELECT line, raw, err FROM gm_src")
        typed = None
    else:
        typed = read_raw(con, item)
    # Records as text columns are what the stage reads (files.typed_rows): no JSON is made.
    con.execute(f"CREATE TABLE t AS SELECT * FROM {'gm_src' if typed else 'gm_raw'}")
    took = time.perf_counter() - start
    con.close()
    return took


def _scanned(path: Path, module: types.ModuleType | None = None) -> tuple[float, float]:
    """Wall and CPU seconds of the reader's records read to the end; ``module``: the readers
    of another revision (``module_at``)."""
    con = duckdb.connect()
    item = collections([detect(path)])[0]
    start, cpu = time.perf_counter(), time.process_time()
    if module is None:
        typed = read_raw(con, item)
    else:
        typed = module.read(con, item.format, item.path, item.compression)
        if not typed:  # a revision whose reader gave JSON objects
            con.execute("CREATE OR REPLACE TEMP VIEW gm_raw AS SELECT line, raw, err FROM gm_src")
    if typed:  # records as text columns, which the stage reads as they are
        fields = " + ".join(f"coalesce(strlen(gm_f{i}), 0)" for i in range(1, len(typed) + 1))
        con.execute(f"SELECT count(*), sum({fields}), count(err) FROM gm_src").fetchall()
    else:
        con.execute("SELECT count(*), sum(strlen(raw)), count(err) FROM gm_raw").fetchall()
    took = time.perf_counter() - start, time.process_time() - cpu
    con.close()
    return took


def _ingest(path: Path, store: Path) -> float:
    for p in store.parent.glob(store.name + "*"):
        shutil.rmtree(p) if p.is_dir() else p.unlink()
    start = time.perf_counter()
    with open_store(store, detachable=True) as con:
        result = api.corpus(con, [path])
    took = time.perf_counter() - start
    assert result.total["rejected"] == 0, result.total
    return took


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--formats", default="smart,trec,tsv", help="readers, comma-separated")
    parser.add_argument("--no-ingest", action="store_true", help="time the readers alone")
    parser.add_argument(
        "--by-line", action="store_true", help="also SMART and TREC read as lines (the reference)"
    )
    parser.add_argument("--against", metavar="REV", help="also time the readers at this revision")
    args = parser.parse_args()
    before = module_at(args.against, "ingest/corpus_formats.py") if args.against else None
    OUT.mkdir(exist_ok=True)
    print(f"{args.records:,} records a file; medians of {args.repeat}")
    names = {"smart": "corpus.all", "trec": "corpus.sgml", "tsv": "corpus.tsv"}
    for fmt in args.formats.split(","):
        name = names[fmt]
        path = OUT / f"{args.records}-{name}"
        if not path.exists():  # written whole, then named: a run cut short leaves no half file
            _write(path.with_name(path.name + ".part"), args.records, fmt)
            path.with_name(path.name + ".part").rename(path)
        assert collections([detect(path)])[0].format == fmt
        times: dict[str, list[float]] = {"bare": [], "reader": [], "read": [], "ingest": []}
        times["by_line"], times["before"] = [], []
        cpu: dict[str, list[float]] = {"bare": [], "before": [], "read": []}
        for _ in range(args.repeat):  # alternated, so that load on the machine hits all alike
            took = {"bare": _bare(path)}
            if before is not None:
                took["before"] = _scanned(path, before)
            for name, (wall, spent) in took.items():
                times[name].append(wall)
                cpu[name].append(spent)
            times["reader"].append(_reader(path))
            if args.by_line and fmt != "tsv":
                times["by_line"].append(_reader(path, by_line=True))
            wall, spent = _scanned(path)
            times["read"].append(wall)
            cpu["read"].append(spent)
            if not args.no_ingest:
                times["ingest"].append(_ingest(path, OUT / "corpus_formats.duckdb"))
        med = {k: statistics.median(v) if v else float("nan") for k, v in times.items()}
        med_cpu = {k: statistics.median(v) for k, v in cpu.items() if v}
        print(
            f"{fmt} ({path.stat().st_size / 1e6:,.0f} MB): bare read_csv of the lines "
            f"{med['bare']:.2f} s; reader {med['reader']:.2f} s "
            f"({med['reader'] / med['bare']:.2f}x), its records read to the end "
            f"{med['read']:.2f} s ({med['read'] / med['bare']:.2f}x)"
            + (
                f"; whole ingest corpus {med['ingest']:.2f} s ({med['ingest'] / med['bare']:.2f}x)"
                if times["ingest"]
                else ""
            )
            + (
                f"; read as lines (the reference) {med['by_line']:.2f} s "
                f"({med['by_line'] / med['bare']:.2f}x)"
                if times["by_line"]
                else ""
            )
            + (
                f"; read to the end at {args.against} {med['before']:.2f} s "
                f"({med['before'] / med['bare']:.2f}x)"
                if times["before"]
                else ""
            ),
            flush=True,
        )
        print(
            f"{'':4s}CPU: "
            + ", ".join(f"{k} {v:.2f} s ({v / med_cpu['bare']:.2f}x)" for k, v in med_cpu.items()),
            flush=True,
        )


if __name__ == "__main__":
    main()
