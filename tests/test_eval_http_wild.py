"""``eval run --http`` against retrievers that answer as servers in the wild do: each test runs a
real HTTP server on 127.0.0.1 that sends what such a server sends (odd encodings, redirects,
429s, cut connections, HTML pages), and checks what a user sees: the run scored, or one clear line
naming the query and the URL, with the exit codes used elsewhere (2 bad input, 1 failure)."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

GOLD = [
    {"query_id": "q1", "query": "refund damaged item", "relevant": ["policy-14"]},
    {"query_id": "q2", "query": "parental leave", "relevant": ["hr-7"]},
]
ANSWERS = {"refund damaged item": ["policy-14", "policy-2"], "parental leave": ["hr-1", "hr-7"]}

# (status, headers, body) for a request: its path, its JSON body, and how many times this path
# and query were asked before (0 the first time).
Answer = tuple[int, dict[str, str], bytes]
CUT = "X-Test-Cut"  # a header the responder sets: half the body is sent, then the connection shut
Responder = Callable[[str, dict, int], Answer]


def ids_of(body: dict) -> Answer:
    """The plain answer: a JSON list of the query's ids."""
    return 200, {"Content-Type": "application/json"}, json.dumps(ANSWERS[body["query"]]).encode()


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server  # type: ignore[assignment]

    def log_message(self, *args) -> None:
        pass

    def do_POST(self) -> None:  # noqa: N802 - the stdlib's name
        raw = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        body = json.loads(raw or b"{}")
        with self.server.lock:
            key = (self.path, json.dumps(body, sort_keys=True))
            n = self.server.seen.get(key, 0)
            self.server.seen[key] = n + 1
            self.server.requests.append(
                {"path": self.path, "body": body, "raw": raw, "headers": dict(self.headers)}
            )
        status, headers, payload = self.server.responder(self.path, body, n)
        cut = headers.pop(CUT, None) is not None
        try:
            self.send_response(status)
            for name, value in headers.items():
                self.send_header(name, value)
            if "Content-Length" not in headers:
                self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload[: len(payload) // 2] if cut else payload)
            if cut:  # the connection closes mid-answer
                self.wfile.flush()
                self.connection.shutdown(socket.SHUT_RDWR)
                self.close_connection = True
        except (BrokenPipeError, ConnectionResetError):
            pass


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, responder: Responder) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.responder = responder
        self.requests: list[dict] = []
        self.seen: dict[tuple[str, str], int] = {}
        self.lock = threading.Lock()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


@contextmanager
def serving(responder: Responder) -> Iterator[_Server]:
    server = _Server(responder)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def gold(tmp_path: Path) -> Path:
    path = tmp_path / "gold.jsonl"
    path.write_text("".join(json.dumps(item) + "\n" for item in GOLD))
    return path


def run_http(cli, gold: Path, url: str, *args: str):
    return cli("eval", "run", "-g", str(gold), "--http", url, "-m", "mrr", "--json", "--no-store",
               *args)  # fmt: skip


def scored(result) -> dict:
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_a_query_holding_braces_is_sent_as_written(cli, tmp_path: Path) -> None:
    """The template's "{query}" was replaced, then "{k}" in the result: a query that holds
    "{k}" (a LaTeX question, a code search) went out with the number in it. Each placeholder
    is the template's own; the query's text is sent as written, quotes and newlines escaped."""
    text = 'what does {k} mean in "f({query})"\nand\ttabs \\ ü 日本'
    gold = tmp_path / "gold.jsonl"
    gold.write_text(json.dumps({"query_id": "q1", "query": text, "relevant": ["a"]}) + "\n")
    with serving(lambda path, body, n: (200, {}, b'["a"]')) as server:
        result = run_http(cli, gold, server.url, "--http-body",
                          '{"q": {"match": "{query}"}, "size": "{k}", "note": "top {k}"}', "-k",
                          "7")  # fmt: skip
    assert scored(result)["metrics"]["mrr"] == 1.0
    sent = server.requests[0]["body"]
    assert sent == {"q": {"match": text}, "size": 7, "note": "top 7"}


@pytest.mark.parametrize(
    "url",
    ["localhost:8080/search", "127.0.0.1:9200/docs/_search", "ftp://127.0.0.1/search",
     "file:///etc/hosts", "", "http:///search"],
)  # fmt: skip
def test_a_url_that_is_no_http_address_is_bad_input(cli, tmp_path: Path, gold: Path, url: str):
    """A URL without its scheme ("localhost:8080/search") was tried on every query, retried with
    backoff, and ended "failed on every query", exit 1, as if the server were down; a file://
    URL was read as the answer. It is bad input: one line, exit 2, nothing asked or stored."""
    db = tmp_path / "s.duckdb"
    result = cli("eval", "run", "-g", str(gold), "--http", url, "--db", str(db))
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "--http" in lines[0] and "http://" in lines[0], result.stderr
    assert not db.exists()


@pytest.mark.parametrize("value", ["0", "-1", "nan", "inf"])
def test_a_timeout_that_is_no_positive_number_of_seconds_is_bad_input(cli, gold, value) -> None:
    """--timeout 0 failed every query with "[Errno 115] Operation now in progress", -1 with
    "Timeout value out of range", inf with an OverflowError: exit 1 each, after the retries."""
    result = run_http(cli, gold, "http://127.0.0.1:9/search", f"--timeout={value}")
    assert result.returncode == 2, result.stderr
    assert "--timeout" in result.stderr and len(result.stderr.strip().splitlines()) == 1


def test_a_body_template_without_the_query_is_bad_input(cli, gold: Path) -> None:
    """A template with no "{query}" ('{"q": "query"}', a typo) sent the same body for every
    query and scored whatever came back."""
    result = run_http(cli, gold, "http://127.0.0.1:9/search", "--http-body", '{"q": "query"}')
    assert result.returncode == 2, result.stderr
    assert "{query}" in result.stderr and "--http-body" in result.stderr


def test_credentials_in_the_url_are_sent_and_never_shown_or_kept(cli, tmp_path: Path) -> None:
    """Elasticsearch's own examples put the user in the URL (https://elastic:pw@host:9200/…),
    and some services take the key as a query parameter (?api_key=…). The first failed every
    query ("Name or service not known", the password in the message); the second worked, and
    the key went into the history CSV (kept in the user's repository), the store, the progress
    line and --json. The user and password are sent as Basic auth; the password and every
    key-like parameter are shown and kept as ***."""
    import base64

    expected = "Basic " + base64.b64encode(b"elastic:s3cret-pw").decode()

    def needs_auth(path: str, body: dict, n: int) -> Answer:
        if "api_key=KEY-123" not in path:
            return 403, {}, b'{"error": "no key"}'
        if server.requests[-1]["headers"].get("Authorization") != expected:
            return 401, {}, b'{"error": "who are you"}'
        return ids_of(body)

    gold = tmp_path / "gold.jsonl"
    gold.write_text("".join(json.dumps(item) + "\n" for item in GOLD))
    db, history = tmp_path / "s.duckdb", tmp_path / "history.csv"
    with serving(needs_auth) as server:
        port = server.server_address[1]
        url = f"http://elastic:s3cret-pw@127.0.0.1:{port}/idx/_search?api_key=KEY-123&size=5"
        result = cli("eval", "run", "-g", str(gold), "--http", url, "-m", "mrr", "--json",
                     "--db", str(db), "--history", str(history))  # fmt: skip
    data = scored(result)
    assert data["metrics"]["mrr"] == 0.75 and data["n_errors"] == 0
    shown = f"http://elastic:***@127.0.0.1:{port}/idx/_search?api_key=***&size=5"
    assert data["run"]["source"] == shown
    listed = cli("eval", "runs", "--db", str(db), "--json")
    kept = [db.read_bytes().decode("latin-1"), history.read_text(), result.stdout, result.stderr,
            listed.stdout]  # fmt: skip
    for text in kept:
        assert "s3cret-pw" not in text and "KEY-123" not in text
    assert shown in history.read_text() and shown in listed.stdout


def test_a_server_that_refuses_the_url_s_password_is_told_without_it(cli, gold: Path) -> None:
    with serving(lambda path, body, n: (401, {}, b"no")) as server:
        url = server.url.replace("//", "//ana:pa55word@") + "/search"
        result = run_http(cli, gold, url)
    assert result.returncode == 1
    assert "pa55word" not in result.stderr and "ana:***@" in result.stderr, result.stderr


def _redirecting(path: str, body: dict, n: int) -> Answer:
    if path == "/search/":
        return ids_of(body)
    moves = {
        "/search": (307, "/search/"),
        "/v1/search": (308, "http://127.0.0.1:{port}/search/"),
        "/old": (301, "/search/"),
        "/found": (302, "/search/"),
        "/other": (303, "/search/"),
    }
    code, where = moves[path]
    return code, {"Location": where.replace("{port}", str(_redirecting.port))}, b""


@pytest.mark.parametrize("path", ["/search", "/v1/search"])
def test_a_307_or_308_redirect_is_followed_with_the_same_post(cli, gold: Path, path: str) -> None:
    """FastAPI answers a missing trailing slash with 307, a moved API with 308: both mean "POST
    the same body there". urllib refuses to follow them for a POST, so every query failed with
    "HTTP 307 Temporary Redirect"."""
    with serving(_redirecting) as server:
        _redirecting.port = server.server_address[1]  # type: ignore[attr-defined]
        data = scored(run_http(cli, gold, server.url + path))
    assert data["metrics"]["mrr"] == 0.75 and data["n_errors"] == 0
    followed = [r for r in server.requests if r["path"] == "/search/"]
    assert len(followed) == 2 and all(r["body"]["k"] == 50 for r in followed)


@pytest.mark.parametrize("path", ["/old", "/found", "/other"])
def test_a_redirect_that_would_turn_the_post_into_a_get_names_where_to(cli, gold, path) -> None:
    """301, 302 and 303 tell a client to come back with a GET, without the body: urllib did so,
    and the user read "HTTP 404 Not Found" (or 405) with no word of a redirect. The error now
    says where the service moved, to give that URL instead; it is not retried."""
    with serving(_redirecting) as server:
        _redirecting.port = server.server_address[1]  # type: ignore[attr-defined]
        result = run_http(cli, gold, server.url + path)
    assert result.returncode == 1
    assert f"redirects to {server.url}/search/" in result.stderr, result.stderr
    assert "--http" in result.stderr
    assert len(server.requests) == 2  # one per query: not retried, and no GET sent


@pytest.mark.parametrize("form", ["seconds", "date"])
def test_a_429_s_retry_after_is_waited_for(cli, gold: Path, form: str) -> None:
    """A rate-limited service says how long to wait (Retry-After: 1, or an HTTP date); the
    retries came after 0.2, 0.4, 0.8 s whatever it said, each refused again, and a query failed
    once they ran out. The wait it asks for (up to a minute) is waited, then the query asked."""
    import math
    import time
    from email.utils import formatdate

    first: dict[str, float] = {}

    def limited(path: str, body: dict, n: int) -> Answer:
        start = first.setdefault(body["query"], time.time())
        if time.time() < start + 1.0:
            wait = "1" if form == "seconds" else formatdate(math.ceil(start) + 2, usegmt=True)
            return 429, {"Retry-After": wait}, b'{"error": "slow down"}'
        return ids_of(body)

    with serving(limited) as server:
        data = scored(run_http(cli, gold, server.url, "--retries", "3"))
    assert data["metrics"]["mrr"] == 0.75 and data["n_errors"] == 0
    assert len(server.requests) == 4  # each query: refused once, then answered


class _Dripping(BaseHTTPRequestHandler):
    """Sends its answer a byte every 0.3 s: each read gets a byte well within any timeout."""

    protocol_version = "HTTP/1.1"

    def log_message(self, *args) -> None:
        pass

    def do_POST(self) -> None:  # noqa: N802 - the stdlib's name
        import time

        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        payload = json.dumps(ANSWERS[body["query"]]).encode()
        try:
            self.send_response(200)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            for byte in payload:
                self.wfile.write(bytes([byte]))
                self.wfile.flush()
                time.sleep(0.3)
        except (BrokenPipeError, ConnectionResetError):
            pass


@contextmanager
def dripping() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Dripping)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/search"
    finally:
        server.shutdown()
        server.server_close()


def test_timeout_is_the_whole_request_not_each_read(cli, gold: Path) -> None:
    """--timeout was urllib's, a limit on each read: a service sending a byte now and then (an
    overloaded proxy) held each query for as long as it liked, 8 s here against --timeout 1,
    and Ctrl-C waited for it. A request now gets --timeout seconds, its answer read in full."""
    import time

    with dripping() as url:
        start = time.monotonic()
        result = run_http(cli, gold, url, "--timeout", "1", "--retries", "0")
        took = time.monotonic() - start
    assert result.returncode == 1
    assert "timed out" in result.stderr and "1 s" in result.stderr, result.stderr
    assert took < 4, took


@pytest.mark.parametrize("server_does", ["hold", "rate-limit"])
def test_ctrl_c_stops_a_run_at_once_and_stores_nothing(tmp_path: Path, gold: Path, server_does):
    """Ctrl-C waited for the requests under way to end (a slow service: up to --timeout times
    the attempts) and for a Retry-After wait of up to a minute. It now ends them: exit 130 at
    once, the unfinished run not stored and no history row."""
    import os
    import signal
    import subprocess
    import sys
    import time

    def answer(path: str, body: dict, n: int) -> Answer:
        if server_does == "hold":
            time.sleep(20)
            return ids_of(body)
        return 429, {"Retry-After": "40"}, b"{}"

    db, history = tmp_path / "s.duckdb", tmp_path / "h.csv"
    with serving(answer) as server:
        child = subprocess.Popen(
            [sys.executable, "-m", "goldmine", "eval", "run", "-g", str(gold), "--http",
             server.url, "--timeout", "30", "--db", str(db), "--history", str(history)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            env={**os.environ, "COLUMNS": "200"},
        )  # fmt: skip
        deadline = time.monotonic() + 30
        while len(server.requests) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)  # both queries asked
        time.sleep(0.3)
        sent = time.monotonic()
        child.send_signal(signal.SIGINT)
        try:
            _, err = child.communicate(timeout=15)
        finally:
            child.kill()
        took = time.monotonic() - sent
    assert child.returncode == 130, err
    assert took < 3, took
    assert not db.exists() and not history.exists()


def test_a_connection_closed_mid_answer_is_retried_then_said_plainly(cli, gold: Path) -> None:
    """A service (or a proxy) that closed the connection halfway through its answer failed the
    query at once, with no retry, as "IncompleteRead: IncompleteRead(5 bytes read, 190 more
    expected)". It is retried as a dropped connection is; when every attempt is cut, the query
    fails saying the connection closed mid-answer."""

    def once(path: str, body: dict, n: int) -> Answer:
        status, headers, payload = ids_of(body)
        return status, {**headers, CUT: "1"} if n == 0 else headers, payload

    with serving(once) as server:
        data = scored(run_http(cli, gold, server.url))
    assert data["metrics"]["mrr"] == 0.75 and data["n_errors"] == 0
    with serving(lambda path, body, n: (200, {CUT: "1"}, b'["policy-14", "hr-7"]')) as server:
        result = run_http(cli, gold, server.url, "--retries", "1")
    assert result.returncode == 1
    assert "the connection closed mid-answer (10 of 21 bytes)" in result.stderr, result.stderr
    assert len(server.requests) == 4


_HTML = b"<!DOCTYPE html><html><head><title>Sign in - Corp SSO</title></head><body>x</body></html>"


@pytest.mark.parametrize(
    ("status", "content_type", "body", "said"),
    [
        (200, "text/html", _HTML, "the answer is not JSON (text/html: Sign in - Corp SSO)"),
        (200, "text/plain", b"OK", "the answer is not JSON (text/plain: OK)"),
        (200, "application/json", b"", "the answer is not JSON (an empty body)"),
        (200, "text/event-stream", b'data: ["a"]\n\n', 'not JSON (text/event-stream: data: ["a"])'),
        (400, "application/json",
         b'{"error": {"root_cause": [], "type": "parsing_exception",'
         b' "reason": "Unknown key for a VALUE_STRING in [q]."}, "status": 400}',
         "HTTP 400 Bad Request: Unknown key for a VALUE_STRING in [q]."),
        (422, "application/json",
         b'{"detail": [{"loc": ["body", "query"], "msg": "Field required", "type": "missing"}]}',
         "HTTP 422 Unprocessable Entity: Field required"),
        (404, "text/html", b"<html><title>404 Not Found</title><h1>nginx</h1></html>",
         "q1: HTTP 404 Not Found)"),  # the page said no more than the status
    ],
    ids=["html-200", "text", "empty", "sse", "es-400", "fastapi-422", "nginx-404"],
)  # fmt: skip
def test_an_answer_that_is_no_json_or_an_error_says_what_the_service_said(
    cli, gold: Path, status: int, content_type: str, body: bytes, said: str
) -> None:
    """An SSO login page answered with 200, an empty body or a 400 from Elasticsearch all read
    "JSONDecodeError: Expecting value: line 1 column 1 (char 0)" or "HTTP 400 Bad Request",
    the service's own reason unseen. The error now says what came back: its type and title or
    first words, and an HTTP error's message as the service wrote it."""
    with serving(lambda path, b, n: (status, {"Content-Type": content_type}, body)) as server:
        result = run_http(cli, gold, server.url)
    assert result.returncode == 1
    assert said in result.stderr, result.stderr


def test_a_key_a_service_echoes_in_its_error_is_not_shown(cli, gold: Path) -> None:
    def refuse(path: str, body: dict, n: int) -> Answer:
        key = server.requests[-1]["headers"]["Authorization"]
        return 401, {}, json.dumps({"error": f"invalid key {key}"}).encode()

    with serving(refuse) as server:
        result = run_http(cli, gold, server.url, "--header", "Authorization: Bearer sk-live-123456")
    assert result.returncode == 1
    assert "HTTP 401 Unauthorized: invalid key ***" in result.stderr, result.stderr
    assert "sk-live-123456" not in result.stderr


def _encoded(how: str) -> Callable[[str, dict, int], Answer]:
    """The query's ids (with an accented one) sent gzipped, or in a charset other than UTF-8."""
    import gzip
    import zlib

    def answer(path: str, body: dict, n: int) -> Answer:
        ids = [*ANSWERS[body["query"]], "café-1"]
        text = json.dumps({"results": ids}, ensure_ascii=False)
        if how == "gzip":
            return 200, {"Content-Encoding": "gzip"}, gzip.compress(text.encode())
        if how == "deflate":
            return 200, {"Content-Encoding": "deflate"}, zlib.compress(text.encode())
        if how == "latin-1":
            kind = "application/json; charset=ISO-8859-1"
            return 200, {"Content-Type": kind}, text.encode("latin-1")
        if how == "utf-16":
            kind = "application/json; charset=utf-16"
            return 200, {"Content-Type": kind}, text.encode("utf-16")
        return 200, {"Content-Type": "application/json"}, b"\xef\xbb\xbf" + text.encode()

    return answer


@pytest.mark.parametrize("how", ["gzip", "deflate", "latin-1", "utf-16", "utf-8 with a BOM"])
def test_an_answer_compressed_or_in_another_charset_is_read(cli, gold: Path, how: str) -> None:
    """A gzipped answer (a proxy that compresses whatever it is asked) failed every query with
    "UnicodeDecodeError: 'utf-8' codec can't decode byte 0x8b"; so did a body in the charset its
    Content-Type names (charset=ISO-8859-1, utf-16), and a UTF-8 one starting with a byte-order
    mark read "Unexpected UTF-8 BOM". Each is now read as its headers say."""
    with serving(_encoded(how)) as server:
        data = scored(run_http(cli, gold, server.url, "--save-run", str(gold.parent / "r.jsonl")))
    assert data["metrics"]["mrr"] == 0.75 and data["n_errors"] == 0
    saved = [json.loads(line) for line in (gold.parent / "r.jsonl").read_text().splitlines()]
    assert all(row["results"][-1] == "café-1" for row in saved), saved


def test_an_answer_in_an_encoding_goldmine_cannot_read_says_so(cli, gold: Path) -> None:
    with serving(
        lambda path, body, n: (200, {"Content-Encoding": "br"}, b"\x8b\x03\x80")
    ) as server:
        result = run_http(cli, gold, server.url)
    assert result.returncode == 1
    assert "q1: the answer is encoded as br, which goldmine cannot read" in result.stderr
    latin = b'["caf\xe9"]'
    with serving(lambda path, body, n: (200, {"Content-Type": "text/json"}, latin)) as server:
        result = run_http(cli, gold, server.url)
    assert "not utf-8 text (byte 0xe9 at 5); its Content-Type names no charset" in result.stderr


def test_an_answer_in_an_unknown_shape_points_at_its_list(cli, gold: Path) -> None:
    """Weaviate's GraphQL answer ({"data": {"Get": {"Chunk": [...]}}}) failed every query with
    "pass --json-path" and no word of which path; an answer of null read "got NoneType". The
    error now names the list it found, to pass as --json-path, and JSON's own names."""

    def weaviate(path: str, body: dict, n: int) -> Answer:
        hits = [{"chunk_id": d, "_additional": {"id": f"uuid-{d}", "score": "0.9"}}
                for d in ANSWERS[body["query"]]]  # fmt: skip
        return 200, {}, json.dumps({"data": {"Get": {"Chunk": hits}}}).encode()

    with serving(weaviate) as server:
        result = run_http(cli, gold, server.url)
        assert result.returncode == 1
        assert "pass --json-path data.Get.Chunk" in result.stderr, result.stderr
        data = scored(run_http(cli, gold, server.url, "--json-path", "data.Get.Chunk"))
    assert data["metrics"]["mrr"] == 0.75
    with serving(lambda path, body, n: (200, {}, b"null")) as server:
        result = run_http(cli, gold, server.url)
    assert "q1: expected a list of ids or of {id, score}, got null" in result.stderr, result.stderr


def test_a_retriever_whose_ids_are_of_another_kind_than_the_gold_s_is_warned_of(cli, gold):
    """Qdrant answers its points' ids (UUIDs here) with the chunk id in a payload field of the
    user's naming: every query scored 0, exit 0, with no word why, and a CI gate failed on
    "recall 0.00". When no id the retriever returned, over every query, is one the gold judged,
    the run is scored and a warning says so, with examples of both."""
    import uuid

    def qdrant(path: str, body: dict, n: int) -> Answer:
        points = [{"id": str(uuid.uuid5(uuid.NAMESPACE_URL, d)), "score": 0.9, "payload":
                   {"doc": d}} for d in ANSWERS[body["query"]]]  # fmt: skip
        return 200, {}, json.dumps({"result": points, "status": "ok"}).encode()

    with serving(qdrant) as server:
        data = scored(result := run_http(cli, gold, server.url))
    with serving(lambda path, body, n: ids_of(body)) as server:
        good = scored(run_http(cli, gold, server.url))
    assert data["metrics"]["mrr"] == 0.0
    first = str(uuid.uuid5(uuid.NAMESPACE_URL, "policy-14"))
    said = [w for w in data["warnings"] if "none of the 4 ids" in w]
    assert said and f"look like {first}" in said[0] and "policy-14" in said[0], data["warnings"]
    assert said[0] in result.stderr
    assert good["warnings"] == []


def test_a_redirect_loop_is_one_line(cli, gold: Path) -> None:
    """A service redirecting to itself ended in urllib's three-line message ("… would lead to
    an infinite loop.\\nThe last 30x error message was:\\nTemporary Redirect") inside the one
    error line."""
    with serving(lambda path, body, n: (307, {"Location": "/search"}, b"")) as server:
        result = run_http(cli, gold, server.url + "/search")
    assert result.returncode == 1
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert "q1: HTTP 307: the service redirects in a loop" in result.stderr, result.stderr


def test_a_template_with_an_unquoted_placeholder_says_to_quote_it(cli, gold: Path) -> None:
    """'{"size": {k}}' (as most template languages write it) read only "--http-body is not valid
    JSON: Expecting property name enclosed in double quotes: line 1 column 11"."""
    result = run_http(
        cli, gold, "http://127.0.0.1:9/s", "--http-body", '{"q": "{query}", "size": {k}}'
    )
    assert result.returncode == 2
    assert 'write "{k}" in quotes: alone in its string it is sent as a number' in result.stderr
