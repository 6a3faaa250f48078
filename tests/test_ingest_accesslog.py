"""A web server's access log (nginx's and Apache's combined format) read as a search log: each
``GET /search?q=…`` a search, the other requests no row. It was read as a CSV whose header was
the first request ("no query field … found 203.0.113.7 - - [23/Nov/2026:10:15:32 +0100] …")."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

from goldmine.store import open_store

UA = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36"
LOG = f"""\
203.0.113.7 - - [23/Nov/2026:10:15:32 +0100] "GET /search?q=refund+policy HTTP/1.1" 200 5123 "https://shop.example/" "{UA}"
203.0.113.7 - - [23/Nov/2026:10:15:40 +0100] "GET /static/app.css?v=3 HTTP/1.1" 200 812 "https://shop.example/search?q=refund+policy" "{UA}"
203.0.113.7 - - [23/Nov/2026:10:16:02 +0100] "GET /search?q=refund+policy&page=2 HTTP/1.1" 200 4980 "-" "{UA}"
203.0.113.7 - - [23/Nov/2026:10:16:30 +0100] "GET /search?q=refund+policy+digital HTTP/1.1" 200 4980 "-" "{UA}"
198.51.100.23 - alice [23/Nov/2026:10:17:11 +0100] "GET /search?s=caf%C3%A9+opening+hours HTTP/2.0" 200 3001 "-" "curl/8.5.0"
198.51.100.23 - - [23/Nov/2026:10:17:12 +0100] "GET /search?q=old HTTP/1.1" 301 0 "-" "curl/8.5.0"
203.0.113.7 - - [23/Nov/2026:11:30:00 +0100] "GET /search?query=warranty HTTP/1.1" 200 4980 "-" "{UA}"
198.51.100.23 - - [23/Nov/2026:10:18:00 +0100] "-" 400 0 "-" "-"
192.0.2.1 - - [23/Nov/2026:10:19:00 +0100] "GET /search?q=caf%E9&x=\\"y\\" HTTP/1.1" 200 9 "-" "a \\"b\\""
66.249.66.1 - - [23/Nov/2026:10:20:00 +0100] "GET /search?q=refund+policy HTTP/1.1" 200 5123 "-" "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)"
203.0.113.7 - - [23/Nov/2026:10:21:00 +0100] "HEAD /search?q=refund+policy HTTP/1.1" 200 0 "-" "{UA}"
this line is no request
"""  # noqa: E501


def _ingest(cli, db: Path, *paths: Path):
    return cli("ingest", "searchlog", *map(str, paths), "--db", str(db), "--json")


def test_an_access_log_s_search_requests_are_its_searches(tmp_path, db_path, cli):
    log = tmp_path / "access.log"
    log.write_text(LOG)
    result = _ingest(cli, db_path, log)
    assert result.returncode == 0, result.stderr
    got = json.loads(result.stdout)
    (file,) = got["files"]
    assert file["format"] == "accesslog"
    # the css file, the later page and the redirect are no searches; the last line a reject
    # nginx's "-" for a request it could not read is no search either, nor a crawler's
    # request or a HEAD request
    assert (file["rows_in"], file["stored"], file["rejected"]) == (6, 5, 1)
    assert file["requests_not_searches"] == 6
    with open_store(db_path) as con:
        rows = con.execute(
            "SELECT ts::VARCHAR, query, user_id, session_id FROM search_events ORDER BY ts"
        ).fetchall()
        (reason,) = con.execute("SELECT reason FROM rejects").fetchone()
    assert [r[:3] for r in rows] == [
        ("2026-11-23 09:15:32", "refund policy", None),  # +0100 read as UTC
        ("2026-11-23 09:16:30", "refund policy digital", None),
        ("2026-11-23 09:17:11", "café opening hours", "alice"),  # WordPress's s=, decoded
        ("2026-11-23 09:19:00", "caf%E9", None),  # Latin-1 bytes: as written, never an error
        ("2026-11-23 10:30:00", "warranty", None),
    ]
    sessions = [r[3] for r in rows]
    # one client's searches minutes apart are one session, over 30 minutes later another;
    # a session names no address
    assert sessions[0] == sessions[1] and len(set(sessions)) == 4
    assert not any("203.0.113.7" in s for s in sessions)
    assert reason.startswith("not an access log line")


def test_an_access_log_read_again_or_rotated_and_compressed_adds_nothing(tmp_path, db_path, cli):
    log = tmp_path / "access.log"
    log.write_text(LOG)
    assert _ingest(cli, db_path, log).returncode == 0
    rotated = tmp_path / "access.log.1.gz"
    rotated.write_bytes(gzip.compress(LOG.encode()))
    for again in (log, rotated):
        result = _ingest(cli, db_path, again)
        assert result.returncode == 0, result.stderr
        assert json.loads(result.stdout)["total"]["stored"] == 0


def test_an_access_log_without_a_search_says_which_parameters_it_looked_for(tmp_path, db_path, cli):
    log = tmp_path / "access.log"
    log.write_text(LOG.splitlines()[1] + "\n")
    result = _ingest(cli, db_path, log)
    assert result.returncode == 2
    assert "none of its 1 requests is a search" in result.stderr
    assert "q, query, search, s" in result.stderr and "Traceback" not in result.stderr


def test_triage_finds_an_access_log_s_reformulation(tmp_path, db_path, cli):
    log = tmp_path / "access.log"
    log.write_text(LOG)
    assert _ingest(cli, db_path, log).returncode == 0
    with open_store(db_path) as con:
        from goldmine.signals import DEFAULT_WINDOW_S
        from goldmine.triage.events import mark_session_signals, normalize_events

        normalize_events(con)
        mark_session_signals(con, DEFAULT_WINDOW_S)
        flagged = con.execute(
            "SELECT query FROM triage_events WHERE is_reformulated ORDER BY query"
        ).fetchall()
    assert flagged == [("refund policy",)]


# solr.log as Solr 9 writes it: startup messages, a distributed search and its shard's part, a
# later page, a match-all, an admin request, an error with its stack trace, a failed search.
SOLR = """\
2026-11-23 10:15:00.001 INFO  (main) [   ] o.a.s.c.CoreContainer Loading cores into CoreContainer [instanceDir=/var/solr/data]
2026-11-23 10:15:32.123 INFO  (qtp1234-56) [c:products s:shard1 r:core_node2 x:products_shard1_replica_n1] o.a.s.c.S.Request [products_shard1_replica_n1]  webapp=/solr path=/select params={q=refund+policy&defType=edismax&wt=json&rows=10} hits=12 status=0 QTime=5
2026-11-23 10:15:32.120 INFO  (qtp1234-58) [c:products s:shard2 r:core_node4 x:products_shard2_replica_n3] o.a.s.c.S.Request [products_shard2_replica_n3]  webapp=/solr path=/select params={df=text&distrib=false&q=refund+policy&isShard=true&wt=javabin&version=2} hits=7 status=0 QTime=2
2026-11-23 10:16:02.456 INFO  (qtp1234-57) [   x:search] o.a.s.c.S.Request [search]  webapp=/solr path=/select params={q=state:"Active"+AND+caf%C3%A9&start=0&rows=100&wt=javabin&version=2} hits=0 status=0 QTime=3
2026-11-23 10:16:05.000 INFO  (qtp1234-57) [   x:search] o.a.s.c.S.Request [search]  webapp=/solr path=/select params={q=refund+policy&start=10&rows=10} hits=12 status=0 QTime=3
2026-11-23 10:16:06.000 INFO  (qtp1234-57) [   x:search] o.a.s.c.S.Request [search]  webapp=/solr path=/select params={q=*:*&facet=true} hits=5000 status=0 QTime=3
2026-11-23 10:33:53.463 INFO  (qtp708533063-17) [   ] o.a.s.s.HttpSolrCall [admin] webapp=null path=/admin/cores params={indexInfo=false&wt=json&_=1672651469301} status=0 QTime=0
2026-11-23 10:34:00.000 ERROR (qtp1234-60) [   x:search] o.a.s.h.RequestHandlerBase org.apache.solr.common.SolrException: undefined field foo
\tat org.apache.solr.schema.IndexSchema.getField(IndexSchema.java:1200)
2026-11-23 10:34:00.001 INFO  (qtp1234-60) [   x:search] o.a.s.c.S.Request [search]  webapp=/solr path=/select params={q=foo:bar} status=400 QTime=1
"""  # noqa: E501


def test_a_solr_log_s_searches_and_their_hits_are_read(tmp_path, db_path, cli):
    """solr.log was "unknown file format": its request lines hold each search's q and hits."""
    log = tmp_path / "solr.log"
    log.write_text(SOLR)
    result = _ingest(cli, db_path, log)
    assert result.returncode == 0, result.stderr
    (file,) = json.loads(result.stdout)["files"]
    assert file["format"] == "solrlog"
    assert (file["rows_in"], file["stored"], file["rejected"]) == (3, 3, 0)
    assert file["requests_not_searches"] == 3  # the shard's part, the later page, *:*
    with open_store(db_path) as con:
        rows = con.execute(
            "SELECT ts::VARCHAR, query, num_results, extra->>'status' FROM search_events "
            "ORDER BY ts"
        ).fetchall()
    assert rows == [
        ("2026-11-23 10:15:32.123", "refund policy", 12, "0"),
        ("2026-11-23 10:16:02.456", 'state:"Active" AND café', 0, "0"),  # found nothing
        ("2026-11-23 10:34:00.001", "foo:bar", None, "400"),
    ]
    again = _ingest(cli, db_path, log)
    assert json.loads(again.stdout)["total"]["stored"] == 0


def test_a_solr_log_without_a_search_says_so(tmp_path, db_path, cli):
    log = tmp_path / "solr.log"
    log.write_text("".join(SOLR.splitlines(keepends=True)[i] for i in (0, 2, 5, 6)))
    result = _ingest(cli, db_path, log)
    assert result.returncode == 2
    assert "none of its 2 Solr requests is a search" in result.stderr, result.stderr


CF_FIELDS = (
    "date time x-edge-location sc-bytes c-ip cs-method cs(Host) cs-uri-stem sc-status "
    "cs(Referer) cs(User-Agent) cs-uri-query cs(Cookie) x-edge-result-type x-edge-request-id "
    "x-host-header cs-protocol cs-bytes time-taken x-forwarded-for ssl-protocol ssl-cipher "
    "x-edge-response-result-type cs-protocol-version fle-status fle-encrypted-fields c-port "
    "time-to-first-byte x-edge-detailed-result-type sc-content-type sc-content-len "
    "sc-range-start sc-range-end"
)


def _cloudfront_line(time: str, stem: str, query: str) -> str:
    fields = ["2026-11-23", time, "SFO5-C1", "5123", "203.0.113.7", "GET",
              "d111111abcdef8.cloudfront.net", stem, "200", "-",
              "Mozilla/5.0%20(X11;%20Linux%20x86_64)", query, "-", "Miss", "EXAMPLE==",
              "shop.example", "https", "421", "0.104", "-", "TLSv1.3", "TLS_AES_128_GCM_SHA256",
              "Miss", "HTTP/2.0", "-", "-", "53421", "0.104", "Miss", "text/html", "5123", "-",
              "-"]  # fmt: skip
    return "\t".join(fields) + "\n"


def test_cloudfront_s_and_iis_s_logs_are_read_by_their_fields_line(tmp_path, db_path, cli):
    """The W3C extended format (CloudFront's tab-separated standard log, IIS's u_ex*.log) was
    an unknown file format."""
    cloudfront = tmp_path / "E2EXAMPLE.2026-11-23-09.abcd1234"
    cloudfront.write_text(
        f"#Version: 1.0\n#Fields: {CF_FIELDS}\n"
        + _cloudfront_line("09:15:32", "/search", "q=refund+policy")
        + _cloudfront_line("09:15:40", "/app.css", "-")
        # CloudFront writes the query string's % as %25
        + _cloudfront_line("09:16:10", "/search", "q=caf%25C3%25A9+hours")
        + "2026-11-23\t09:17:00\tcut short\n"
    )
    iis = tmp_path / "u_ex261123.log"
    iis.write_text(
        "#Software: Microsoft Internet Information Services 10.0\n#Version: 1.0\n"
        "#Date: 2026-11-23 09:00:00\n#Fields: date time s-ip cs-method cs-uri-stem "
        "cs-uri-query s-port cs-username c-ip cs(User-Agent) cs(Referer) sc-status sc-substatus "
        "sc-win32-status time-taken\n"
        "2026-11-23 10:15:32 10.0.0.4 GET /search.aspx q=warranty 443 CORP\\alice 198.51.100.9 "
        "Mozilla/5.0+(Windows+NT+10.0) - 200 0 0 15\n"
        "2026-11-23 10:15:33 10.0.0.4 GET /favicon.ico - 443 - 198.51.100.9 "
        "Mozilla/5.0+(Windows+NT+10.0) - 404 0 2 1\n"
    )
    result = _ingest(cli, db_path, cloudfront, iis)
    assert result.returncode == 0, result.stderr
    files = json.loads(result.stdout)["files"]
    assert [f["format"] for f in files] == ["accesslog", "accesslog"]
    assert [(f["rows_in"], f["stored"], f["rejected"]) for f in files] == [(3, 2, 1), (1, 1, 0)]
    assert [f["requests_not_searches"] for f in files] == [1, 1]
    with open_store(db_path) as con:
        rows = con.execute(
            "SELECT ts::VARCHAR, query, user_id FROM search_events ORDER BY ts"
        ).fetchall()
    assert rows == [
        ("2026-11-23 09:15:32", "refund policy", None),  # CloudFront's times are UTC
        ("2026-11-23 09:16:10", "café hours", None),
        ("2026-11-23 10:15:32", "warranty", "CORP\\alice"),
    ]


def test_the_requests_that_were_no_search_are_said_in_words(tmp_path, db_path):
    from helpers import run_cli

    log = tmp_path / "access.log"
    log.write_text("".join(LOG.splitlines(keepends=True)[:2]))
    result = run_cli("ingest", "searchlog", str(log), "--db", str(db_path))
    assert result.returncode == 0, result.stderr
    assert "access.log: 1 request was no search" in result.stderr, result.stderr
