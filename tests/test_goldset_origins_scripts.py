"""Where a query came from, for queries written with combining marks: the origins' SQL turned
marks into spaces while the normalized text (``normalize_query``) keeps them in their word, so a
Hindi, Hebrew or Thai query, or Arabic with its vowel marks, had no origin."""

from __future__ import annotations

import pytest

from goldmine.goldset.provenance import origins
from goldmine.store import open_store
from goldmine.text import normalize_query

from helpers import write_jsonl


@pytest.mark.parametrize(
    "query", ["दिन का मौसम", "שָׁלוֹם עולם", "สวัสดีครับ", "مَرْحَبًا بِكُمْ", "Reset password ❤️"]
)
def test_a_query_written_with_marks_finds_its_search(cli, tmp_path, query) -> None:
    row = {"ts": "2024-03-01 10:00:00", "query": query, "session_id": "s1"}
    path = write_jsonl(tmp_path / "log.jsonl", [row])
    db = tmp_path / "s.duckdb"
    assert cli("--db", str(db), "ingest", "searchlog", str(path)).returncode == 0
    with open_store(db) as con:
        found = origins(con, [normalize_query(query)])
    assert found[normalize_query(query)].source_ids, found
