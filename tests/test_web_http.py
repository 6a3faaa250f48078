"""The review page's HTTP surface under hostile requests: Starlette's TestClient over the real app
and a real DuckDB store (the browser tests in ``test_web_review.py`` show the page still works).

Every write refuses a body that is not a JSON object of the right shape with a 400 and a one-line
reason in JSON; a write from another origin is a 403 and writes nothing; every response carries
the headers that keep the page out of frames and inline script out of the page; static files need
the token like every other route.
"""

from __future__ import annotations

import json
import re
from html import unescape
from pathlib import Path
from urllib.parse import quote

import pytest

from helpers import build, gold, run_cli, shown

BASE = "http://127.0.0.1:8765"
TOKEN = "test-token-for-the-page"
WRITES = ["/api/act", "/api/rater"]


def _drafted(db: Path) -> None:
    build(db)
    gold(run_cli, db, "add-query", "reset password", "vpn setup")
    gold(run_cli, db, "draft", "-k", "2")


@pytest.fixture
def store(store_copy):
    """Two drafted queries: built once, each test writing to its own copy."""
    return store_copy("web_http", _drafted)


@pytest.fixture
def client(store):
    from starlette.testclient import TestClient

    from goldmine.goldset.web import WebReview, create_app

    app = create_app(WebReview(store, "ana", token=TOKEN))
    with TestClient(app, base_url=BASE, raise_server_exceptions=False) as test_client:
        yield test_client


def writer(**more: str) -> dict:
    """What the page's own fetch sends: the token cookie, the custom header, its origin."""
    return {"Cookie": f"goldmine_token={TOKEN}", "X-Goldmine": "1",
            "Content-Type": "application/json", "Origin": BASE, **more}  # fmt: skip


def shown_item(client) -> tuple[str, int, str]:
    """The query id, version and first candidate the page shows now."""
    html = client.get("/review", headers={"Cookie": f"goldmine_token={TOKEN}"}).text
    # Ids are JSON in single-quoted attributes (the sample's need no escape in JSON).
    found = re.search(r"data-query-id='\"([^\"]+)\"' data-version=\"(\d+)\"", html)
    chunk = re.search(r"class=\"cand[^\"]*\"\s+data-chunk='\"([^\"]+)\"'", html)
    assert found and chunk, html[:500]
    return found.group(1), int(found.group(2)), chunk.group(1)


def assert_bad_request(response) -> str:
    assert response.status_code == 400, (response.status_code, response.text[:300])
    assert response.headers["content-type"].startswith("application/json")
    reason = response.json()["error"]
    assert isinstance(reason, str) and reason and "\n" not in reason
    assert "Traceback" not in reason
    return reason


NOT_JSON = [
    b"",
    b"not json",
    b"{'action': 'grade'}",
    b"\xff\xfe\x00garbage",
    b"[" * 50_000,  # nested past Python's recursion limit, under the size limit
    b'{"action": "grade", "version": 1' + b"9" * 5000 + b"}",  # past int()'s digit limit
]
WRONG_SHAPE = [
    [1, 2],
    "grade",
    None,
    7,
    {"action": ["grade"]},
    {"action": "dance", "query_id": "q", "version": 1},
    {"action": "grade"},  # no query_id, no version
    {"action": "grade", "query_id": "q", "version": "abc", "chunk_id": "c", "grade": 2},
    {"action": "grade", "query_id": "q", "version": 1.5, "chunk_id": "c", "grade": 2},
    {"action": "grade", "query_id": "q", "version": 10**30, "chunk_id": "c", "grade": 2},
    {"action": "grade", "query_id": "q", "version": True, "chunk_id": "c", "grade": 2},
    {"action": "grade", "query_id": "q", "version": 1, "chunk_id": "c", "grade": 7},
    {"action": "grade", "query_id": "q", "version": 1, "chunk_id": "c", "grade": [2]},
    {"action": "grade", "query_id": "q", "version": 1, "grade": 2},  # no chunk_id
    {"action": "grade", "query_id": 5, "version": 1, "chunk_id": "c", "grade": 2},
    {"action": "grade", "query_id": "q", "version": 1, "chunk_id": {"a": 1}, "grade": 2},
    {"action": "grade", "query_id": "\ud800", "version": 1, "chunk_id": "c", "grade": 2},
    {"action": "note", "query_id": "q", "version": 1, "note": 5},
    {"action": "undo", "cluster": [1]},
    {"action": "undo", "cluster": 10**30},  # past DuckDB's BIGINT
    {"action": "undo", "tag": {"a": 1}},
    {"action": "undo", "status": ["candidate"]},
    {"action": "undo", "assignee": 3},
]
RATER_SHAPE = [[1], "ana", {"name": "ana"}, {"rater": 5}, {"rater": ["ana"]}, {"rater": ""}]


@pytest.mark.parametrize("path", WRITES)
@pytest.mark.parametrize("body", NOT_JSON, ids=lambda b: repr(b[:12]))
def test_a_body_that_is_not_json_is_a_400_with_a_reason(client, path, body) -> None:
    assert_bad_request(client.post(path, content=body, headers=writer()))


@pytest.mark.parametrize("body", WRONG_SHAPE, ids=lambda b: json.dumps(b)[:40])
def test_an_action_of_the_wrong_shape_is_a_400_with_a_reason(client, body) -> None:
    raw = json.dumps(body).encode("utf-8", "surrogatepass")
    assert_bad_request(client.post("/api/act", content=raw, headers=writer()))


@pytest.mark.parametrize("body", RATER_SHAPE, ids=lambda b: json.dumps(b))
def test_a_rater_of_the_wrong_shape_is_a_400_with_a_reason(client, body) -> None:
    assert_bad_request(client.post("/api/rater", content=json.dumps(body), headers=writer()))


@pytest.mark.parametrize("path", WRITES)
def test_a_huge_body_is_refused_unread(client, path) -> None:
    body = json.dumps({"action": "note", "note": "x" * 5_000_000, "rater": "ana"})
    reason = assert_bad_request(client.post(path, content=body, headers=writer()))
    assert "too large" in reason


def test_the_store_is_untouched_by_bad_bodies(client, store, cli) -> None:
    query, version, chunk = shown_item(client)
    bad = {"action": "grade", "query_id": query, "version": version, "chunk_id": chunk,
           "grade": "2; DROP TABLE gold_labels"}  # fmt: skip
    assert_bad_request(client.post("/api/act", content=json.dumps(bad), headers=writer()))
    assert all(r["kind"] == "draft" for r in shown(cli, store, "reset password")["labels"])


@pytest.mark.parametrize(
    "headers",
    [
        {"Origin": "http://evil.example"},
        {"Origin": "null"},
        {"Origin": "http://127.0.0.1:9999"},  # another port is another origin
        {"Origin": "https://127.0.0.1:8765"},  # and another scheme
        {"Origin": None, "Referer": "http://evil.example/page"},
        {"Origin": "http://evil.example", "Referer": BASE + "/review"},
    ],
    ids=["other-site", "null", "other-port", "other-scheme", "referer-only", "origin-wins"],
)
def test_a_write_from_another_origin_is_refused_and_writes_nothing(
    client, store, cli, headers
) -> None:
    query, version, chunk = shown_item(client)
    sent = {k: v for k, v in writer(**headers).items() if v is not None}
    body = {"action": "grade", "query_id": query, "version": version, "chunk_id": chunk,
            "grade": 2}  # fmt: skip
    response = client.post("/api/act", content=json.dumps(body), headers=sent)
    assert response.status_code == 403
    assert "origin" in response.json()["error"]
    assert all(r["kind"] == "draft" for r in shown(cli, store, "reset password")["labels"])
    rater = client.post("/api/rater", content=json.dumps({"rater": "mallory"}), headers=sent)
    assert rater.status_code == 403 and "set-cookie" not in rater.headers


@pytest.mark.parametrize(
    "headers",
    [{}, {"Origin": None, "Referer": BASE + "/review?tag=x"}, {"Origin": None}],
    ids=["origin", "referer", "neither-header-curl"],
)
def test_a_write_from_the_page_or_a_tokened_script_is_accepted(client, store, cli, headers):
    query, version, chunk = shown_item(client)
    sent = {k: v for k, v in writer(**headers).items() if v is not None}
    # The page sends the version as its data attribute's text.
    body = {"action": "grade", "query_id": query, "version": str(version), "chunk_id": chunk,
            "grade": 2}  # fmt: skip
    response = client.post("/api/act", content=json.dumps(body), headers=sent)
    assert response.status_code == 200, response.text[:300]
    assert f"graded {chunk} = 2" in response.text
    labels = {r["chunk_id"]: r for r in shown(cli, store, "reset password")["labels"]}
    assert labels[chunk]["kind"] == "label" and labels[chunk]["grade"] == 2


def test_a_long_note_is_kept_whole(client, store, cli) -> None:
    """A note of 3,000 characters was answered "note added" and stored cut at 2,000 (the
    terminal's `n` keeps it whole); the body limit (64 KiB) bounds it."""
    query, version, _ = shown_item(client)
    note = "web note: " + "x" * 3000 + " END"
    body = {"action": "note", "query_id": query, "version": version, "note": note}
    response = client.post("/api/act", content=json.dumps(body), headers=writer())
    assert response.status_code == 200 and "note added" in response.text
    assert shown(cli, store, "reset password")["notes"][-1].endswith(note)


def test_a_write_to_a_query_that_is_no_item_says_so(client) -> None:
    """A grade posted for an unknown query id answered "no candidate '75' on this query"."""
    _, version, chunk = shown_item(client)
    body = {"action": "grade", "query_id": "q_doesnotexist", "version": version,
            "chunk_id": chunk, "grade": 2}  # fmt: skip
    response = client.post("/api/act", content=json.dumps(body), headers=writer())
    assert "no gold item 'q_doesnotexist'" in unescape(response.text), response.text[:300]


def test_a_rater_name_of_the_wrong_shape_in_the_url_is_refused(client) -> None:
    """?as=o'neil opened the page as the server's rater without a word: a second person would
    grade under the first one's name."""
    response = client.get(f"/?token={TOKEN}&as=o'neil", follow_redirects=False)
    assert response.status_code == 400
    assert "rater" in response.text and "o'neil" in response.text


@pytest.mark.parametrize("name", ["ana%0A", "ana%0D%0A", "%0Aana"])
def test_a_rater_name_with_a_line_break_in_the_url_is_refused(client, store, cli, name) -> None:
    """``&as=ana%0A`` was taken: the name check's ``$`` matches before a final line break, so
    "ana\\n" graded as a rater apart from "ana", splitting her labels and her kappa."""
    response = client.get(f"/?token={TOKEN}&as={name}", follow_redirects=False)
    assert response.status_code == 400 and "rater" in response.text
    assert "goldmine_rater" not in response.headers.get("set-cookie", "")
    cookie = f"goldmine_token={TOKEN}; goldmine_rater={name}"
    page = client.get("/review", headers={"Cookie": cookie})
    assert 'id="rater" value="ana"' in page.text  # the server's rater, not "ana\\n"


RATER_NAMES = {
    "cyrillic": "Дмитрий Ёж",
    "chinese": "李小龍",
    "arabic": "زينب حداد",
    "latin-1": "Zoë",
}


@pytest.mark.parametrize("name", RATER_NAMES.values(), ids=RATER_NAMES.keys())
def test_a_raters_name_in_any_script_is_kept_as_typed(client, store, cli, name) -> None:
    """A name in Cyrillic, Chinese or Arabic (letters, as the page asks) was a 500 from the
    URL's ``&as=`` and the rater box alike: its cookie went out as Latin-1. Both now set it,
    the page shows it, and a grade is recorded under it."""
    opened = client.get(f"/?token={TOKEN}&as={quote(name)}", follow_redirects=False)
    assert opened.status_code == 303, opened.text[:300]
    boxed = client.post("/api/rater", content=json.dumps({"rater": name}), headers=writer())
    assert boxed.status_code == 200, boxed.text[:300]
    for response in (opened, boxed):
        cookie = f"goldmine_token={TOKEN}; goldmine_rater={response.cookies['goldmine_rater']}"
        page = client.get("/review", headers={"Cookie": cookie})
        assert f'id="rater" value="{name}"' in page.text
    query, version, chunk = shown_item(client)
    body = {"action": "grade", "query_id": query, "version": version, "chunk_id": chunk,
            "grade": 2}  # fmt: skip
    graded = client.post("/api/act", content=json.dumps(body), headers=writer(Cookie=cookie))
    assert graded.status_code == 200, graded.text[:300]
    labels = {r["chunk_id"]: r for r in shown(cli, store, "reset password")["labels"]}
    assert labels[chunk]["who"] == name


def test_every_response_carries_the_security_headers(client) -> None:
    cookie = {"Cookie": f"goldmine_token={TOKEN}"}
    responses = {
        "redirect": client.get(f"/?token={TOKEN}", follow_redirects=False),
        "page": client.get("/review", headers=cookie),
        "static": client.get("/static/review.js", headers=cookie),
        "search": client.get("/api/search?q=vpn", headers=cookie),
        "no token": client.get("/review"),
        "not found": client.get("/nowhere", headers=cookie),
        "bad body": client.post("/api/act", content=b"{", headers=writer()),
        "wrong method": client.get("/api/act", headers=cookie),
    }
    for name, response in responses.items():
        headers = response.headers
        csp = headers.get("content-security-policy", "")
        assert "default-src 'none'" in csp and "script-src 'self'" in csp, name
        assert "frame-ancestors 'none'" in csp and "unsafe-inline" not in csp, name
        assert headers.get("x-frame-options") == "DENY", name
        assert headers.get("x-content-type-options") == "nosniff", name
        assert headers.get("referrer-policy") == "no-referrer", name


def test_the_page_needs_no_inline_script_or_style(client, store) -> None:
    from goldmine.goldset.web import ASSETS

    # What the CSP would block: inline handlers, inline scripts, style attributes.
    page = client.get("/review", headers={"Cookie": f"goldmine_token={TOKEN}"}).text
    templates = "".join(p.read_text() for p in ASSETS.glob("*.html"))
    for html in (page, templates):
        assert not re.search(r"\son[a-z]+\s*=", html)
        assert not re.search(r"<script(?![^>]*\bsrc=)", html)
        assert not re.search(r"\sstyle\s*=", html)


@pytest.mark.parametrize("path", ["/static/review.js", "/static/review.css", "/static/nope.js"])
def test_static_files_need_the_token(client, path) -> None:
    assert client.get(path).status_code == 403
    wrong = client.get(path, headers={"Cookie": "goldmine_token=wrong"})
    assert wrong.status_code == 403 and "function" not in wrong.text
    expected = 404 if path.endswith("nope.js") else 200
    assert client.get(path, headers={"Cookie": f"goldmine_token={TOKEN}"}).status_code == expected


@pytest.mark.parametrize("cluster", ["99999999999999999999999", "-99999999999999999999999"])
def test_a_cluster_id_past_bigint_in_the_url_is_no_server_error(client, cluster) -> None:
    got = client.get(f"/review?cluster={cluster}", headers={"Cookie": f"goldmine_token={TOKEN}"})
    assert got.status_code == 200, got.text[:300]


def test_a_chunk_the_size_of_a_book_is_cut_on_the_page(store_copy) -> None:
    """A 2.6 MB chunk (a whole document taken as one) made a 4 MB page of 120,000 marks that
    Chromium did not draw in three minutes, and the queue stood behind it. The page shows its
    start, as the terminal does, and says how much is left out."""
    from starlette.testclient import TestClient

    from goldmine.goldset.web import PAGE_PASSAGE_CHARS, WebReview, create_app

    from helpers import CHUNKS

    book = " ".join(f"Section {i}: reset your password in the settings." for i in range(50_000))

    def drafted(db: Path) -> None:
        build(db, {**CHUNKS, "kb-reset-1": ("Reset password", book)})
        gold(run_cli, db, "add-query", "reset password")
        gold(run_cli, db, "draft", "-k", "2")

    db = store_copy("web_book", drafted)
    app = create_app(WebReview(db, "ana", token=TOKEN))
    with TestClient(app, base_url=BASE) as client:
        html = client.get("/review", headers={"Cookie": f"goldmine_token={TOKEN}"}).text
    assert "Section 0: " in html and "Section 49999" not in html
    assert len(html) < PAGE_PASSAGE_CHARS * 3 + 60_000
    assert f"{len(book) - PAGE_PASSAGE_CHARS:,} more characters" in html


def test_opening_the_page_again_after_a_conflict_shows_the_item_as_it_is(client) -> None:
    """ben's grade was refused because ana had graded the item first; he pressed F5 to see it as
    it is now, and the fresh page still said "this query changed since you opened it" and took
    no key but r. A page opened again shows the item as it is, and writes go on from it."""
    query, version, chunk = shown_item(client)
    body = {"action": "grade", "query_id": query, "version": version, "chunk_id": chunk,
            "grade": 2}  # fmt: skip
    assert client.post("/api/act", content=json.dumps(body), headers=writer()).status_code == 200
    ben = f"goldmine_token={TOKEN}; goldmine_rater=ben"
    stale = client.post("/api/act", content=json.dumps({**body, "grade": 1}),
                        headers=writer(Cookie=ben))  # fmt: skip
    assert "changed since you opened it" in stale.text and 'data-stale="1"' in stale.text
    page = client.get("/review", headers={"Cookie": ben}).text
    assert "changed since you opened it" not in page and 'data-stale="0"' in page
    now = int(re.search(r'data-version="(\d+)"', page).group(1))
    again = client.post("/api/act", content=json.dumps({**body, "version": now, "grade": 1}),
                        headers=writer(Cookie=ben))  # fmt: skip
    assert f"graded {chunk} = 1" in again.text, again.text[:300]


def test_a_query_id_from_the_wild_is_shown_with_its_controls_as_marks(tmp_path, cli) -> None:
    """An imported query id holding a bidi override and a terminal escape went into the page
    raw, beside every chunk id and text shown as marks: the override turned the rest of its
    line around. The page shows each control as U+FFFD; the id it sends back is its JSON,
    unchanged."""
    from starlette.testclient import TestClient

    from goldmine.goldset.web import WebReview, create_app

    wild = "q\u202eevil\x1b[2J"
    db = tmp_path / "s.duckdb"
    build(db)
    (tmp_path / "t.jsonl").write_text(json.dumps({"_id": wild, "text": "vpn setup"}) + "\n")
    judged = {"query_id": wild, "doc_id": "kb-vpn-1", "relevance": 2}
    (tmp_path / "q.jsonl").write_text(json.dumps(judged) + "\n")
    gold(cli, db, "import", str(tmp_path / "q.jsonl"), "--topics", str(tmp_path / "t.jsonl"),
         "--as-source", "team-b")  # fmt: skip
    gold(cli, db, "draft", "-k", "2")
    app = create_app(WebReview(db, "ana", token=TOKEN))
    with TestClient(app, base_url=BASE) as client:
        html = client.get("/review", headers={"Cookie": f"goldmine_token={TOKEN}"}).text
    assert "\u202e" not in html and "\x1b" not in html
    assert '<span class="cid">q\ufffdevil\ufffd[2J</span>' in html
    assert json.loads(unescape(re.search(r"data-query-id='([^']+)'", html).group(1))) == wild


def test_a_blind_page_does_not_show_the_other_raters_progress(store, cli) -> None:
    """ben's page on a double item showed "ana: 2 grades, 1 queries": that ana had rated it."""
    from starlette.testclient import TestClient

    from goldmine.goldset.web import WebReview, create_app

    gold(cli, store, "assign", "--raters", "ana,ben", "--overlap", "1")
    gold(cli, store, "review", "--by", "ana", input="20q")
    app = create_app(WebReview(store, "ben", token=TOKEN))
    with TestClient(app, base_url=BASE) as client:
        html = client.get("/review", headers={"Cookie": f"goldmine_token={TOKEN}"}).text
    assert "double-labelled" in html or "blind" in html
    assert "ana:" not in html
