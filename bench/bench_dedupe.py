"""Fuzzy dedupe as the traffic grows: today's (blocks of common words split by a second key,
_split_big; at most MAX_CHECKS word-rule checks per query, only candidates at PICKY_SCORE once
PICKY_AFTER failed; a query leaves a block once it has its partner) against the dedupe before
them (whole blocks, every candidate checked) and, with ``--against REV``, against
triage/dedupe.py as it was at git revision REV, on the same generated queries in the same run.

    .venv/bin/python bench/bench_dedupe.py                 # 50k, 100k, 200k queries
    .venv/bin/python bench/bench_dedupe.py --scales 400000 --repeats 1
    .venv/bin/python bench/bench_dedupe.py --scales 50000,100000,200000,400000 --no-before
    .venv/bin/python bench/bench_dedupe.py --no-before --against HEAD~1 --repeats 3
    .venv/bin/python bench/bench_dedupe.py --no-before --workers 2 --scales 200000,400000

Per scale: the largest block and the sum of squared block sizes per query (what the pairwise
cdist inside blocks costs; flat is linear), the seconds of ``best_partners`` over every query
(what a first triage run does; medians of ``--repeats``, the variants alternated), the ratio of
today's CPU time to the first variant's, the CPU microseconds per query and the growth (each
variant's CPU time over the previous scale's: 2.0 for twice the queries is linear; CPU time,
since wall time on a loaded machine is mostly waiting), the share of each reference's partners
that today's finds (the same partner for the same query), and today's work per query (cells
fuzz.ratio scored, pairs over the cutoff, word-rule checks: ``dedupe.Work``).

``--no-before`` leaves the dedupe before out. "Before" runs today's code with whole blocks and
no bound: its partners are the dedupe before's, its time is today's code on whole blocks;
``--against`` times the code of a revision. Queries: ``bench_triage.generate_traffic`` (real
seed queries from ../shared/datasets with word-level variants and a Zipf-like pick of the
seed), ranked in generation order.
"""

from __future__ import annotations

import argparse
import resource
import statistics
import subprocess
import sys
import time
import types
from pathlib import Path
from typing import NamedTuple

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_triage import generate_traffic  # noqa: E402

from goldmine.text import normalize_query  # noqa: E402
from goldmine.triage import dedupe  # noqa: E402

UNSPLIT = 10**12
ROOT = Path(__file__).resolve().parent.parent


class Variant(NamedTuple):
    name: str
    module: types.ModuleType  # triage/dedupe.py, today's or a revision's
    split_at: int
    max_checks: int
    workers: int = 1  # forked processes the queries are dealt out to (parallel_partners)


BEFORE = Variant("before", dedupe, UNSPLIT, UNSPLIT)  # whole blocks, every candidate checked
TODAY = Variant("today", dedupe, dedupe.SPLIT_AT, dedupe.MAX_CHECKS)


def dedupe_at(rev: str) -> Variant:
    """triage/dedupe.py as it was at git revision ``rev``, loaded beside today's."""
    text = subprocess.run(
        ["git", "show", f"{rev}:triage/dedupe.py"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    module = types.ModuleType(f"dedupe_at_{rev}")
    sys.modules[module.__name__] = module  # dataclasses look their module up by name
    exec(compile(text, f"{rev}:triage/dedupe.py", "exec"), module.__dict__)
    return Variant(rev, module, module.SPLIT_AT, module.MAX_CHECKS)


def partners(texts: list[str], v: Variant) -> tuple[float, float, dict, list, object]:
    """Seconds, CPU seconds (this process's threads), the best partners of every query, the
    blocks and the work counted (today's module only). On a machine others load, the CPU
    seconds are the work; the seconds, its wait too."""
    m = v.module
    for name in ("_word_set", "_digits", "_signature", "near_spelling", "_prefixes"):
        if hasattr(m, name):
            getattr(m, name).cache_clear()  # each variant starts as a run would
    work = {"work": m.Work()} if hasattr(m, "Work") else {}
    if v.max_checks == UNSPLIT and hasattr(m, "PICKY_AFTER"):
        work["picky_after"] = UNSPLIT  # every candidate checked, however far
    start, cpu = time.perf_counter(), time.process_time() + children_cpu()
    blocked = m.block_table(texts, v.split_at)
    every = list(range(len(texts)))
    if v.workers > 1:
        best = m.parallel_partners(every, texts, None, blocked, workers=v.workers, at_least=1)
        work = {}
    else:
        best = m.best_partners(every, texts, None, blocked, v.max_checks, **work)
    seconds = time.perf_counter() - start
    cpu = time.process_time() + children_cpu() - cpu
    return seconds, cpu, best, blocked[0], work.get("work")


def children_cpu() -> float:
    """CPU seconds of this process's children that ended (the parallel variant's processes)."""
    use = resource.getrusage(resource.RUSAGE_CHILDREN)
    return use.ru_utime + use.ru_stime


def block_sizes(blocks: list, n: int) -> str:
    sizes = np.array([len(b) for b in blocks], dtype=np.int64)
    return f"{sizes.max():,}/{(sizes**2).sum() / n:,.0f}"


def same_partner(want: dict, got: dict) -> float:
    """The share of ``want``'s queries with a partner that ``got`` gives the same one."""
    kept = sum(got.get(i, (None,))[0] == j for i, (j, _) in want.items())
    return kept / max(len(want), 1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scales", default="50000,100000,200000")
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--no-before", action="store_true", help="leave the dedupe before out")
    parser.add_argument("--against", metavar="REV", help="also time triage/dedupe.py at REV")
    parser.add_argument(
        "--workers",
        type=int,
        default=0,
        help="also time today's with the queries dealt out to this many forked processes "
        "(parallel_partners, as triage runs past PARALLEL_MIN new queries); its wall time is "
        "printed against today's in one process",
    )
    args = parser.parse_args()
    variants = [] if args.no_before else [BEFORE]
    variants += [dedupe_at(args.against)] if args.against else []
    variants.append(TODAY)
    if args.workers > 1:
        variants.append(TODAY._replace(name=f"today x{args.workers}", workers=args.workers))
    names = " / ".join(v.name for v in variants)
    print(f"variants: {names}")
    print(f"{'queries':>9} {'largest/sum b2 per q':>24} {'seconds':>18} {'CPU ratio':>9} "
          f"{'CPU us/query':>14} {'CPU growth':>12} {'same partner':>15} "
          f"{'cells/over/checks per q':>24}")  # fmt: skip
    previous: dict[str, float] = {}
    for n in (int(s) for s in args.scales.split(",")):
        texts = list(dict.fromkeys(normalize_query(q) for q in generate_traffic(n)))
        times: dict[str, list[float]] = {v.name: [] for v in variants}
        cpus: dict[str, list[float]] = {v.name: [] for v in variants}
        found: dict[str, tuple] = {}
        for _ in range(args.repeats):
            for v in variants:
                seconds, cpu, *found[v.name] = partners(texts, v)
                times[v.name].append(seconds)
                cpus[v.name].append(cpu)
        print(row(texts, variants, times, cpus, found, previous), flush=True)
        previous = {k: statistics.median(t) for k, t in cpus.items()}


def row(texts, variants, times, cpus, found, previous) -> str:
    """One scale's line of the table."""
    n = len(texts)
    med = {k: statistics.median(t) for k, t in times.items()}
    cpu = {k: statistics.median(t) for k, t in cpus.items()}
    names = [v.name for v in variants if v.workers == 1]
    dealt = [v.name for v in variants if v.workers > 1]
    sizes = " -> ".join(dict.fromkeys(block_sizes(found[k][1], n) for k in names))
    seconds = " / ".join(f"{med[k]:.1f}" for k in names + dealt)
    ratio = f"{cpu['today'] / cpu[names[0]]:.2f}" if len(names) > 1 else ""
    per_q = " / ".join(f"{cpu[k] / n * 1e6:.0f}" for k in names)
    growth = " / ".join(f"{cpu[k] / previous[k]:.1f}" for k in names if k in previous)
    same = " / ".join(f"{same_partner(found[k][0], found['today'][0]):.4f}" for k in names[:-1])
    work = found["today"][2]
    counts = f"{work.cells / n:.0f}/{work.over / n:.1f}/{work.checks / n:.2f}"
    line = (f"{n:>9,} {sizes:>24} {seconds:>18} {ratio:>9} {per_q:>14} {growth:>12} "
            f"{same:>15} {counts:>24}")  # fmt: skip
    for k in dealt:  # the same partners, dealt out: wall and CPU against one process
        line += (f"\n{'':>9} {k}: wall {med[k] / med['today']:.2f}x, CPU "
                 f"{cpu[k] / cpu['today']:.2f}x one process's, same partner "
                 f"{same_partner(found['today'][0], found[k][0]):.4f}")  # fmt: skip
    return line


if __name__ == "__main__":
    main()
