"""A store whose items were normalized before combining marks stayed in their word: the same
query imported again joined no item ("2 verified queries added") and the set held two items of
"İstanbul hotels". Opening the store writes their normalized text again (migration 307)."""

from __future__ import annotations

import json

from goldmine.store import open_store

from helpers import gold


def test_items_normalized_the_old_way_are_matched_after_the_upgrade(cli, tmp_path) -> None:
    db = tmp_path / "s.duckdb"
    rows = [{"query": "İstanbul hotels", "relevant": ["d1"]},
            {"query": "दिन का मौसम", "relevant": ["d2"]},
            {"query": "reset password", "relevant": ["d3"]}]  # fmt: skip
    path = tmp_path / "gold.jsonl"
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    gold(cli, db, "import", str(path), "--by", "ana")
    with open_store(db) as con:  # as the code before wrote them, and not yet migrated
        con.execute("UPDATE gold_items SET norm_query = 'i stanbul hotels' "
                    "WHERE query = 'İstanbul hotels'")  # fmt: skip
        con.execute("UPDATE gold_items SET norm_query = 'द न क म सम' WHERE query LIKE 'दिन%'")
        con.execute("DELETE FROM schema_migrations WHERE name = '0307_goldset_norm_marks'")
    out = json.loads(gold(cli, db, "import", str(path), "--by", "ana", "--json").stdout)
    assert out["added"] == 0 and out["matched"] == 3, out
    with open_store(db) as con:
        assert con.execute("SELECT count(*) FROM gold_items").fetchall() == [(3,)]
