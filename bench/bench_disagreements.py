"""Benchmark: one step of ``gold review --queue disagreements`` on a store with many judgments.

    .venv/bin/python bench/bench_disagreements.py            # 10,000 units, 7 repeats
    .venv/bin/python bench/bench_disagreements.py --n 100000

A fresh store gets n / 10 drafted items of 10 candidates each and two sources over every
candidate (``bench_agreement.fill``: an import and its noisy copy, a grade moved by one in a
quarter of the units, 2% of the queries "no answer" on one side). Timed: the queue's next item
(every source's grades stacked, the gaps, the items scored: what each review step runs), the
grades of that item's open units (the candidate's "sources disagree" line), and the whole
``--json`` listing. Medians over the repeats; the load average says whether the machine was busy.
"""

from __future__ import annotations

import argparse
import os
import tempfile
from pathlib import Path

from bench_agreement import fill, median

from goldmine.goldset import disagreements
from goldmine.goldset.review import QueueFilter, ReviewSession
from goldmine.store import open_store, transaction


def items(con, n: int, per_query: int = 10) -> None:
    """The gold items and their drafts that ``fill``'s judgments are on."""
    con.execute(
        """INSERT INTO gold_items (query_id, position, query, norm_query, status, origin,
               created_at, updated_at)
           SELECT 'q' || i, i, 'query ' || i, 'query ' || i, 'drafted', 'bench', now(), now()
           FROM range(?) t(i)""",
        [n // per_query],
    )
    con.execute(
        """INSERT INTO gold_labels (query_id, chunk_id, kind, rank, source, ts)
           SELECT 'q' || (i // ?), 'd' || i, 'draft', i % ? + 1, 'bm25', now()
           FROM range(?) t(i)""",
        [per_query, per_query, n],
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=10_000, help="units graded by both sources")
    parser.add_argument("--reps", type=int, default=7)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "bench.duckdb"
        with open_store(db) as con, transaction(con):
            fill(con, args.n)
            items(con, args.n)
        session = ReviewSession(db, "bench", QueueFilter(disagreements=True))
        with open_store(db) as con:
            next_s, qid = median(lambda: session._next_disagreement(con), args.reps)
            grades_s, grades = median(lambda: disagreements.item_grades(con, qid), args.reps)
            list_s, listed = median(lambda: disagreements.listing(con), args.reps)
    print(f"load average {os.getloadavg()[0]:.2f}; {args.n:,} units, two sources")
    print(f"items in the disagreements queue: {len(listed):,}; first {qid} "
          f"({len(grades)} open units)")  # fmt: skip
    print(f"next item (one review step's queue query): median {next_s * 1000:.0f} ms")
    print(f"its units' grades: median {grades_s * 1000:.0f} ms")
    print(f"the whole --json listing: median {list_s * 1000:.0f} ms over {args.reps}")


if __name__ == "__main__":
    main()
