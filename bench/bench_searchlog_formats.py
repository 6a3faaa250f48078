"""What each search-log layout's reader costs against DuckDB reading the same bytes bare.

The readers of ingest/logformats.py (TREC Session Track XML, click-level logs, aggregated
analytics, whose rows ingest/analytics.py maps) each on a generated file of ``--rows`` rows
(default 1M: XML lines, click rows, analytics rows), timed alternately in the same run:

- bare: DuckDB reading the file into a table (the XML as lines, the others as a CSV of text);
- reader: the reader making its records from the same file, read to the end as the stage
  reads them (an aggregated export's text columns, the other layouts' ``gm_raw``);
- import: ``ingest searchlog`` of the file into a fresh store (the reader, the stage, the write);
- with ``--against REV``, the reader as it was at git revision REV (ingest/logformats.py read from
  git), so that a change to a reader is measured against what it replaces in the same run;
- analytics only: stage, ``analytics.stage_sql`` over the records already in a table (each row's
  counts and reason), CPU seconds, and with ``--against REV`` the stage at REV (over the records
  of the reader at REV) beside it.

Prints medians and the reader's and the import's ratio to the bare read, and the same ratios in
the process's CPU time (``time.process_time``, every thread's), which a loaded machine moves far
less than the wall clock: a starved process waits for a core without spending CPU. Asserts
nothing about time. Run: ``.venv/bin/python bench/bench_searchlog_formats.py [--rows N]
[--repeat R] [--only FORMAT] [--against REV]``
"""

from __future__ import annotations

import argparse
import random
import shutil
import statistics
import subprocess
import time
import types
from collections.abc import Callable
from pathlib import Path

import duckdb

from goldmine.ingest import analytics as analytics_stage
from goldmine.ingest import api, batch, logformats
from goldmine.store import open_store

OUT = Path(__file__).resolve().parent / "out"
_WORDS = [
    "refund",
    "order",
    "invoice",
    "password",
    "reset",
    "account",
    "card",
    "gift",
    "cancel",
    "ship",
    "track",
]


def _query(rng: random.Random) -> str:
    return " ".join(rng.choice(_WORDS) for _ in range(rng.randint(1, 4)))


def session_xml(path: Path, rows: int, seed: int = 7) -> None:
    """About ``rows`` lines of Session Track XML, laid out as the TREC files are (a tag a line;
    three results and up to two clicks per interaction, 15-21 lines each)."""
    rng = random.Random(seed)
    with path.open("w", encoding="utf-8") as out:
        out.write("<sessiontrack2012>\n")
        lines, session = 1, 0
        while lines < rows:
            session += 1
            out.write(f'<session num="{session}" starttime="09:00:00.000000">\n')
            for num in range(1, rng.randint(2, 5)):
                out.write(f'<interaction num="{num}" starttime="09:{num:02d}:00.000000">\n')
                out.write(f"<query>{_query(rng)}</query>\n<results>\n")
                for rank in range(1, 4):
                    out.write(f'<result rank="{rank}">\n<url>http://e.org/{rank}</url>\n')
                    out.write(f"<clueweb09id>doc-{rng.randrange(10**6)}</clueweb09id>\n</result>\n")
                out.write("</results>\n<clicked>\n")
                for c in range(rng.randint(0, 2)):
                    out.write(f'<click num="{c + 1}" starttime="09:{num:02d}:09.000000">\n')
                    out.write(f"<rank>{c + 1}</rank>\n</click>\n")
                out.write("</clicked>\n</interaction>\n")
                lines += 20
            out.write('<currentquery starttime="09:30:00.000000">\n')
            out.write(f"<query>{_query(rng)}</query>\n</currentquery>\n</session>\n")
            lines += 5
        out.write("</sessiontrack2012>\n")


def clicklog(path: Path, rows: int, seed: int = 7) -> None:
    """``rows`` rows of AOL's layout: a search is one to three rows (a click each), or one row
    without a click."""
    rng = random.Random(seed)
    with path.open("w", encoding="utf-8") as out:
        out.write("AnonID\tQuery\tQueryTime\tItemRank\tClickURL\n")
        written, second = 0, 0
        while written < rows:
            user, query = rng.randrange(20000), _query(rng)
            second += rng.randint(1, 90)
            ts = f"2006-03-{1 + second // 86400 % 28:02d} {second // 3600 % 24:02d}:"
            ts += f"{second // 60 % 60:02d}:{second % 60:02d}"
            clicks = rng.choice((0, 1, 1, 2, 3))
            for c in range(max(clicks, 1)):
                rank, url = (
                    ("", "") if clicks == 0 else (c + 1, f"http://e.org/{rng.randrange(9999)}")
                )
                out.write(f"{user}\t{query}\t{ts}\t{rank}\t{url}\n")
                written += 1


def analytics(path: Path, rows: int, seed: int = 7) -> None:
    """``rows`` rows of a site-search export, a query per row."""
    rng = random.Random(seed)
    with path.open("w", encoding="utf-8") as out:
        out.write("Search Term,Total Searches,Searches with No Results,Click-through Rate\n")
        for i in range(rows):
            n = rng.randint(1, 5000)
            out.write(f"{_query(rng)} {i},{n},{rng.randint(0, n // 4)},{rng.randint(0, 90)}%\n")


_BARE = {
    "session_xml": """CREATE OR REPLACE TEMP TABLE bare AS SELECT raw FROM read_csv($p,
        columns = {'raw': 'VARCHAR'}, header = false, delim = chr(0), quote = '', escape = '',
        auto_detect = false, max_line_size = 16777216, buffer_size = 33554432)""",
    "clicklog": """CREATE OR REPLACE TEMP TABLE bare AS SELECT * FROM read_csv($p, header = true,
        all_varchar = true, delim = chr(9), quote = '', escape = '')""",
    "analytics": """CREATE OR REPLACE TEMP TABLE bare AS SELECT * FROM read_csv($p, header = true,
        all_varchar = true)""",
}


def _bare(path: Path, fmt: str) -> tuple[float, float]:
    """Wall and CPU seconds of DuckDB reading the file into a table."""
    con = duckdb.connect()
    start, cpu = time.perf_counter(), time.process_time()
    con.execute(_BARE[fmt], {"p": str(path)})
    took = time.perf_counter() - start, time.process_time() - cpu
    con.close()
    return took


def _reader(path: Path, fmt: str, module: types.ModuleType = logformats) -> tuple[float, float]:
    """Wall and CPU seconds of the reader making its records, read to the end as the stage
    reads them: an aggregated export's text columns where the reader returns their names (no
    JSON is made for them), else ``gm_raw``'s objects."""
    con = duckdb.connect()
    batch.prepare(con)
    start, cpu = time.perf_counter(), time.process_time()
    typed = module.read(con, path, fmt, "none")
    if typed:
        fields = " + ".join(f"coalesce(strlen(gm_f{i}), 0)" for i in range(1, len(typed) + 1))
        con.execute(f"SELECT count(*), sum({fields}), count(err) FROM gm_src").fetchall()
    else:
        con.execute("SELECT count(*), sum(strlen(raw)), count(err) FROM gm_raw").fetchall()
    took = time.perf_counter() - start, time.process_time() - cpu
    con.close()
    return took


def _stage_cpu(path: Path, module: types.ModuleType, reader: types.ModuleType) -> float:
    """CPU seconds of an analytics stage (``module.stage_sql``) over the file's records as
    ``reader`` makes them (text columns, or JSON objects), in a table first so that only the
    stage is timed."""
    con = duckdb.connect()
    batch.prepare(con)
    typed = reader.read(con, path, "analytics", "none")  # gm_src: a table
    if not typed:
        con.execute("CREATE TEMP TABLE gm_records AS SELECT * FROM gm_raw")
        con.execute("CREATE OR REPLACE TEMP VIEW gm_raw AS SELECT * FROM gm_records")
    found = analytics_stage.columns(logformats._header(path.read_bytes()[:65536]))
    sql, params = module.stage_sql(found, keys=typed) if typed else module.stage_sql(found)
    cpu = time.process_time()
    con.execute(f"CREATE TEMP TABLE gm_staged AS {sql}", params)
    took = time.process_time() - cpu
    con.close()
    return took


def module_at(rev: str, path: str = "ingest/logformats.py") -> types.ModuleType:
    """The module at ``path`` as it was at git revision ``rev``, loaded beside today's (its
    imports are today's modules)."""
    root = Path(__file__).resolve().parent.parent
    text = subprocess.run(
        ["git", "show", f"{rev}:{path}"], cwd=root, capture_output=True, text=True, check=True
    ).stdout
    module = types.ModuleType(f"{Path(path).stem}_at_{rev}")
    exec(compile(text, f"{rev}:{path}", "exec"), module.__dict__)
    return module


def _import(path: Path, fmt: str) -> float:
    store = OUT / "searchlog_formats.duckdb"
    for p in store.parent.glob(store.name + "*"):
        shutil.rmtree(p) if p.is_dir() else p.unlink()
    start = time.perf_counter()
    with open_store(store) as con:
        result = api.searchlog(con, [path])
    took = time.perf_counter() - start
    assert result.files[0].format == fmt, result.files[0].format
    return took


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--only", choices=("session_xml", "clicklog", "analytics"))
    parser.add_argument("--against", metavar="REV", help="also time the readers at this revision")
    args = parser.parse_args()
    before = module_at(args.against) if args.against else None
    stage_before = module_at(args.against, "ingest/analytics.py") if args.against else None
    OUT.mkdir(exist_ok=True)
    makers: dict[str, tuple[Callable, str]] = {
        "session_xml": (session_xml, "xml"),
        "clicklog": (clicklog, "txt"),
        "analytics": (analytics, "csv"),
    }
    for fmt, (make, suffix) in makers.items():
        if args.only and fmt != args.only:
            continue
        path = OUT / f"searchlog_{fmt}_{args.rows}.{suffix}"
        if not path.exists():
            make(path, args.rows)
        times: dict[str, list[float]] = {"bare": [], "reader": [], "import": [], "before": []}
        cpu: dict[str, list[float]] = {"bare": [], "reader": [], "before": []}
        for _ in range(args.repeat):  # alternated, so that load on the machine hits all alike
            runs = [("bare", None), ("before", before), ("reader", logformats)]
            for name, module in runs:
                if name == "before" and module is None:
                    continue
                wall, spent = _bare(path, fmt) if module is None else _reader(path, fmt, module)
                times[name].append(wall)
                cpu[name].append(spent)
            times["import"].append(_import(path, fmt))
            if fmt == "analytics":
                stages = (
                    ("stage before", stage_before, before),
                    ("stage", analytics_stage, logformats),
                )
                for name, module, reader in stages:
                    if module is not None:
                        cpu.setdefault(name, []).append(_stage_cpu(path, module, reader))
        med = {k: statistics.median(v) for k, v in times.items() if v}
        med_cpu = {k: statistics.median(v) for k, v in cpu.items() if v}
        size = path.stat().st_size / 1e6
        against = (
            f"reader at {args.against} {med['before']:.2f} s ({med['before'] / med['bare']:.2f}x), "
            if before is not None
            else ""
        )
        print(
            f"{fmt:12s} {args.rows:,} rows, {size:.0f} MB: bare {med['bare']:.2f} s, {against}"
            f"reader {med['reader']:.2f} s ({med['reader'] / med['bare']:.2f}x), "
            f"import {med['import']:.2f} s ({med['import'] / med['bare']:.2f}x)  "
            f"(medians of {args.repeat})",
            flush=True,
        )
        print(
            f"{'':12s} CPU: "
            + ", ".join(f"{k} {v:.2f} s ({v / med_cpu['bare']:.2f}x)" for k, v in med_cpu.items()),
            flush=True,
        )


if __name__ == "__main__":
    main()
