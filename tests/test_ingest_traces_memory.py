"""Every trace format streams: a JSON lines export of tens of MB imports under a small memory
limit, its rejected line numbered. Each file is bench_traces' seeded export of that format (one
retrieval of 10 documents a trace, with its answer, session and feedback), a retrieval's line in
the middle broken; the import runs in a child under GOLDMINE_MEMORY_LIMIT=128MB on one thread,
where the record-by-record reader (the whole file as text, then JSON functions over it, copies
of it in temp tables) ran out of memory for every format.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from helpers import traces_under_limit

# Retrievals a file, for 24 to 37 MB in each format.
SIZES = {"langfuse": 10_000, "langsmith": 9_000, "openai": 12_000, "openinference": 12_000}
# Lines a retrieval's trace takes, and which of them is the retrieval.
RETRIEVAL_LINE = {"langfuse": (1, 0), "langsmith": (3, 1), "openai": (1, 0),
                  "openinference": (3, 1)}  # fmt: skip


def _export(path: Path, fmt: str, retrievals: int) -> tuple[Path, int]:
    """The export, a retrieval's line in the middle broken; the number of that line."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
    from bench_traces import generate_records

    generate_records(path, fmt, retrievals)
    lines = path.read_text().splitlines()
    per, at = RETRIEVAL_LINE[fmt]
    middle = len(lines) // 2 // per * per + at
    lines[middle] = lines[middle][: len(lines[middle]) // 2]
    path.write_text("\n".join(lines) + "\n")
    return path, middle + 1


# slow: a generated export of 24 to 37 MB per format, imported in a child process
@pytest.mark.slow
@pytest.mark.parametrize("fmt", sorted(SIZES))
def test_an_export_of_each_format_imports_under_a_small_memory_limit(tmp_path, db_path, fmt):
    path, broken = _export(tmp_path / f"{fmt}.jsonl", fmt, SIZES[fmt])
    assert path.stat().st_size > 20 * 2**20
    total, rejected, peak_mb = traces_under_limit(path, db_path, "128MB")
    # The broken line was one retrieval's record (its whole trace, for Langfuse and OpenAI): a
    # row, rejected, in its place.
    assert total == {
        "rows_in": SIZES[fmt],
        "stored": SIZES[fmt] - 1,
        "rejected": 1,
        "already_present": 0,
    }
    assert rejected == [[broken, "malformed JSON"]]
    # Python, DuckDB and the 128 MB it may use; the record-by-record reader, unlimited, held
    # three to six times the file.
    assert peak_mb < 400
