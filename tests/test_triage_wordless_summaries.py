"""An analytics export's queries of no letter or digit ("👍", "???", "..."): each normalizes to
the empty text, so the rows became one summary of 110 searches that triage clustered, ranked
above real queries and put in the starter set (its id the hash of ""). Triage leaves them out,
as it leaves out such events, and counts them in n_no_words."""

from __future__ import annotations

from goldmine.store import open_store, transaction
from goldmine.triage.events import build_query_days, summary_events, wordless_summaries

EXPORT = "search,count,nbHits\ntrack my order,900,12\n👍,50,0\n???,30,0\n🔥🔥,20,5\n...,10,0\n"


def test_wordless_summaries_are_left_out_and_counted(cli, tmp_path) -> None:
    (tmp_path / "top.csv").write_text(EXPORT)
    db = tmp_path / "s.duckdb"
    result = cli("--db", str(db), "ingest", "searchlog", str(tmp_path / "top.csv"))
    assert result.returncode == 0, result.stderr
    with open_store(db) as con, transaction(con):
        assert summary_events(con) == 900
        assert build_query_days(con) == 900
        norms = con.execute("SELECT DISTINCT norm_query FROM triage_query_days").fetchall()
        assert norms == [("track my order",)]
        wordless = wordless_summaries(con)
    assert wordless.n_events == 110
    assert wordless.examples == ("👍", "???", "🔥🔥")
