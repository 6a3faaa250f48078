"""The review loop in a browser: ``goldmine gold review --web``.

The page drives the review session the terminal drives (``goldmine.goldset.review.ReviewSession``:
the same queue, the same rule for when a query is verified, the same version check on every
write), server-rendered with Jinja2 and a little plain JavaScript shipped in the package; nothing
is loaded from the internet and there is no build step. Its handlers are plain functions reading
the server's state from ``request.app.state``; importing this module needs goldmine[web], which
the command checks first.

Never in the way: every request opens the DuckDB file, does its unit of work and closes it, so
``triage show``, ``eval run`` or a second rater's browser work while the page is open. A store
held by another process is retried briefly by ``open_store``; past that the page says so.

Locked down: the server listens on 127.0.0.1 unless told otherwise. A random token in the printed
URL becomes an HttpOnly, SameSite=Strict cookie on the first visit and is required on every
request; writes are JSON POSTs carrying a custom header, which a page on another origin cannot
send without a CORS preflight this server never grants, and an ``Origin`` naming this page (the
checks of bodies and origins, and the headers every response carries, are ``webguard``'s). Every
piece of user text (queries and chunks carry HTML, scripts and terminal escapes from real
traffic) is escaped by the templates' autoescape; ids from a request are only ever looked up as
SQL parameters.
"""

from __future__ import annotations

import re
import secrets
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote, urlencode

from jinja2 import Environment, FileSystemLoader, select_autoescape
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import (
    HTMLResponse,
    JSONResponse,
    PlainTextResponse,
    RedirectResponse,
    Response,
)
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from goldmine.errors import GoldmineError, InputError, StoreBusyError
from goldmine.goldset import items as gi
from goldmine.goldset import webguard as guard
from goldmine.goldset.disagreements import grades_text
from goldmine.goldset.review import QueueFilter, ReviewSession, View, drafted_how, suggester
from goldmine.goldset.textmatch import CorpusSearch, marked_words
from goldmine.output import info, warn
from goldmine.store import Store, as_store
from goldmine.text import printable

ASSETS = Path(__file__).parent / "web"
TOKEN_COOKIE = "goldmine_token"
RATER_COOKIE = "goldmine_rater"
WRITE_HEADER = "x-goldmine"  # a custom header: a cross-origin form or fetch cannot add it
# A rater's name, matched whole (``fullmatch``): ``$`` alone matches before a final line break,
# and "ana\n" would grade as a rater apart from "ana".
_RATER = re.compile(r"[\w .@-]{1,64}")


def clean(text: str | None) -> str:
    """Text as a person should see it: terminal escapes and other controls made visible (the
    terminal's review shows them alike)."""
    return printable(text)


# The most of a passage the page shows: a chunk that is a whole document (2.6 MB, 120,000
# marks) made a page the browser did not draw in minutes, and the queue stood behind it. The
# terminal shows 900 characters; a reviewer reads a passage, never a book.
PAGE_PASSAGE_CHARS = 20_000


def highlight(text: str | None, query: str, limit: int | None = None) -> Any:
    """Escaped text with the query's words marked (``textmatch.marked_words``, as the terminal
    marks them); the only markup the page adds to user text. Past ``limit`` characters it is
    cut, saying how many are left out."""
    from markupsafe import Markup, escape

    text = clean(text)
    left = len(text) - limit if limit is not None and len(text) > limit else 0
    if left:
        text = text[:limit]
    out, at = [], 0
    for start, end in marked_words(text, query):
        out += [str(escape(text[at:start])), "<mark>", str(escape(text[start:end])), "</mark>"]
        at = end
    out.append(str(escape(text[at:])))
    if left:
        out.append(
            f' <span class="muted">… {left:,} more characters (the chunk holds '
            f"{len(text) + left:,}: a whole document taken as one chunk?)</span>"
        )
    return Markup("".join(out))


@dataclass
class Extras:
    """What the page shows beside the loop's view, read in the same connection."""

    cluster_label: str | None = None
    siblings: list[str] = field(default_factory=list)
    unsure: list[str] = field(default_factory=list)
    raters: list[dict] = field(default_factory=list)


def _extras(con, item: dict) -> Extras:
    extras = Extras()
    qid, cluster = item["query_id"], item["cluster_id"]
    if cluster is not None:
        rows = con.execute(
            "SELECT label FROM triage_clusters WHERE cluster_id = ? LIMIT 1", [cluster]
        ).fetchall()
        extras.cluster_label = rows[0][0] if rows else None
        extras.siblings = [
            r[0]
            for r in con.execute(
                """SELECT query FROM triage_queries WHERE cluster_id = ? AND norm_query != ?
                   ORDER BY n_events DESC, norm_query LIMIT 6""",
                [cluster, item["norm_query"]],
            ).fetchall()
        ]
    extras.unsure = [
        r[0]
        for r in con.execute(
            "SELECT DISTINCT who FROM gold_skips WHERE query_id = ? AND why = 'unsure'"
            " ORDER BY who",
            [qid],
        ).fetchall()
    ]
    # Each person's grades so far: open labels and blind ratings alike.
    extras.raters = gi.fetch_dicts(
        con,
        """SELECT who, count(*) AS grades, count(DISTINCT query_id) AS queries FROM (
               SELECT who, query_id FROM gold_labels WHERE kind = 'label' AND who IS NOT NULL
               UNION ALL SELECT rater, query_id FROM gold_ratings)
           GROUP BY who ORDER BY grades DESC, who""",
    )
    return extras


class WebReview:
    """The server's state: the store, the token, and one review session per rater."""

    def __init__(
        self,
        store: Store | Path | None,
        by: str,
        token: str | None = None,
        redact: Callable[[str], str] | None = None,
    ):
        self.store = as_store(store)
        self.by = by
        self.redact = redact  # for notes, as in the terminal
        self.token = token or secrets.token_urlsafe(24)
        self.sessions: dict[str, ReviewSession] = {}
        self._lock = threading.Lock()
        self.searcher = CorpusSearch()  # one index for every rater's session
        self.start = ""  # the query string of the queue the page opens on

    def session(self, rater: str, queue: QueueFilter) -> ReviewSession:
        with self._lock:
            session = self.sessions.get(rater)
            if session is None:
                session = ReviewSession(
                    self.store, rater, redact=self.redact, searcher=self.searcher
                )
                self.sessions[rater] = session
            session.queue = queue
            return session

    def search(self, text: str, limit: int = 8) -> list[dict]:
        """The corpus's best BM25 matches: the terminal's search, on the server's one index."""
        with self.store.open(create=False) as con:
            return self.searcher.search(con, text, limit)


def _queue(params) -> QueueFilter:
    cluster = params.get("cluster") or None
    try:
        cluster_id = int(cluster) if cluster is not None else None
    except ValueError:
        cluster_id = None
    if cluster_id is not None and not -(2**63) <= cluster_id < 2**63:
        cluster_id = None  # no cluster has such an id (and DuckDB's BIGINT cannot hold it)
    status = params.get("status") or None
    return QueueFilter(
        cluster_id,
        params.get("tag") or None,
        status if status in gi.STATUSES else None,
        adjudicate=params.get("mode") == "adjudicate",
        assignee=params.get("assignee") or None,
        disagreements=params.get("mode") == "disagreements",
    )


def _filter_choices(con) -> dict:
    """The clusters, tags and statuses the queue can be narrowed to (the request's connection)."""
    clusters = con.execute(
        """SELECT DISTINCT i.cluster_id, c.label FROM gold_items i
           LEFT JOIN triage_clusters c USING (cluster_id)
           WHERE i.cluster_id IS NOT NULL ORDER BY i.cluster_id"""
    ).fetchall()
    tags = [
        r[0]
        for r in con.execute(
            "SELECT DISTINCT unnest(tags) AS t FROM gold_items ORDER BY t"
        ).fetchall()
    ]
    assignees = [
        r[0]
        for r in con.execute("SELECT DISTINCT rater FROM gold_assignments ORDER BY 1").fetchall()
    ]
    return {
        "clusters": clusters,
        "tags": tags,
        "statuses": ["candidate", "drafted"],
        "assignees": assignees,
    }


# --- the handlers: each reads the server's state from its app (``create_app`` puts it there) ---


def _review(request: Request) -> WebReview:
    return request.app.state.review


def _templates(request: Request) -> Environment:
    return request.app.state.templates


def allowed(request: Request) -> bool:
    """Whether the request carries the token's cookie (set by the printed URL's first visit)."""
    given = request.cookies.get(TOKEN_COOKIE, "")
    return secrets.compare_digest(given.encode(), _review(request).token.encode())


def forbidden() -> Response:
    return PlainTextResponse(
        "forbidden: open the URL that `goldmine gold review --web` printed", status_code=403
    )


def writer(handler: Callable[[Request, dict], Response]) -> Callable:
    """A write endpoint: the token, the page's header and origin, then the body as a dict."""

    async def endpoint(request: Request) -> Response:
        if not allowed(request) or request.headers.get(WRITE_HEADER) != "1":
            return forbidden()
        try:
            guard.check_origin(request)
            return handler(request, await guard.read_object(request))
        except guard.Refusal as exc:
            return JSONResponse({"error": exc.reason}, status_code=exc.status)

    return endpoint


def rater_of(request: Request) -> str:
    """Who is grading: the rater cookie's name when it is a valid one, else the command's."""
    by = _review(request).by
    name = unquote(request.cookies.get(RATER_COOKIE, "")) or by
    return name if _RATER.fullmatch(name) else by


def set_rater(response: Response, name: str) -> None:
    """The rater cookie, percent-encoded: a header is Latin-1, and a name in Cyrillic, Chinese
    or Arabic (letters, which ``_RATER`` takes) cannot be sent as it is. ``rater_of`` decodes
    it; a name holds no ``%``, so an older cookie's plain name reads the same."""
    response.set_cookie(RATER_COOKIE, quote(name, safe=""), httponly=True, samesite="strict")


def panel(
    request: Request, session: ReviewSession, view: View | None, extras: Extras | None
) -> str:
    """The item's panel (or "nothing left"), as the page shows it and every action returns it."""
    if view is not None:
        verified, total = view.verified, view.total
    else:
        with session._store() as con:
            verified, total = gi.progress_counts(con)
    return (
        _templates(request)
        .get_template("panel.html")
        .render(
            view=view,
            extras=extras,
            session=session,
            verified=verified,
            total=total,
            message=session.message,
            stale=session.stale,
        )
    )


def current(session: ReviewSession) -> tuple[View | None, Extras | None]:
    """The session's next view, with the page's extras read in the same connection."""
    box: dict[str, Extras] = {}
    view = session.view(extra=lambda con, item: box.setdefault("x", _extras(con, item)))
    return view, box.get("x")


async def home(request: Request) -> Response:
    """The printed URL: its token becomes the cookie, then the review page."""
    review = _review(request)
    token = request.query_params.get("token", "")
    if token and secrets.compare_digest(token.encode(), review.token.encode()):
        # The queue the command chose (--queue, --adjudicate) is the page's first filter.
        target = "/review" + (f"?{review.start}" if review.start else "")
        rater = request.query_params.get("as")
        if rater is not None and not _RATER.fullmatch(rater):
            # Ignored, the page opened as the server's rater: a second person graded under the
            # first one's name.
            return PlainTextResponse(
                f"not a rater's name: {rater[:64]!r} (1-64 letters, digits, spaces or . @ - _)",
                status_code=400,
            )
        response = RedirectResponse(target, status_code=303)
        response.set_cookie(TOKEN_COOKIE, review.token, httponly=True, samesite="strict")
        if rater:
            set_rater(response, rater)
        return response
    if not allowed(request):
        return forbidden()
    return RedirectResponse("/review", status_code=303)


async def page(request: Request) -> Response:
    """The whole page: header, filters, the panel of the rater's next item, the keys."""
    if not allowed(request):
        return forbidden()
    templates = _templates(request)
    rater = rater_of(request)
    queue = _queue(request.query_params)
    session = _review(request).session(rater, queue)
    if session.stale:
        # A page loaded afresh shows the item as it is now: the conflict an earlier page met is
        # settled by it (that page's own writes still carry its version, and are checked).
        session.reload()
    status, view = 200, None
    try:
        with session.request() as con:
            view, extras = current(session)
            body = panel(request, session, view, extras)
            choices = _filter_choices(con)
    except GoldmineError as exc:
        body, choices, status = _error_panel(templates, exc), {}, _status(exc)
    html = templates.get_template("page.html").render(
        panel=body,
        rater=rater,
        queue=queue,
        choices=choices,
        qs=urlencode(_qs(queue)),
        suggested=view is not None and view.suggested,
    )
    return HTMLResponse(html, status_code=status)


@writer
def act(request: Request, body: dict) -> Response:
    """One action on the rater's session; answers with the next panel."""
    data = guard.action_fields(body)
    session = _review(request).session(rater_of(request), _queue(data))
    try:
        with session.request():
            _apply(session, data)
            view, extras = current(session)
            return HTMLResponse(panel(request, session, view, extras))
    except GoldmineError as exc:
        return HTMLResponse(_error_panel(_templates(request), exc), status_code=_status(exc))


async def search(request: Request) -> Response:
    """The corpus search box's hits."""
    if not allowed(request):
        return forbidden()
    templates = _templates(request)
    text = request.query_params.get("q", "")[:500]
    try:
        hits = _review(request).search(text)
    except GoldmineError as exc:
        return HTMLResponse(_error_panel(templates, exc), status_code=_status(exc))
    return HTMLResponse(templates.get_template("search.html").render(hits=hits, q=text))


@writer
def rater(request: Request, body: dict) -> Response:
    """The rater box: the name goes in a cookie, checked on every request (``rater_of``)."""
    name = guard.rater_name(body)
    if not _RATER.fullmatch(name):
        raise guard.Refusal("a rater's name is 1-64 letters, digits, spaces or . @ - _")
    response = PlainTextResponse("ok")
    set_rater(response, name)
    return response


def _environment() -> Environment:
    """The templates, autoescaped, with the helpers both faces word alike."""
    templates = Environment(
        loader=FileSystemLoader(ASSETS), autoescape=select_autoescape(["html"]), auto_reload=False
    )
    templates.filters["clean"] = clean
    templates.globals["highlight"] = highlight
    templates.globals["page_passage_chars"] = PAGE_PASSAGE_CHARS
    templates.globals["drafted_how"] = drafted_how
    templates.globals["suggester"] = suggester
    templates.globals["grades_text"] = grades_text
    return templates


def create_app(review: WebReview) -> Callable:
    """The Starlette application over one store: the routes, and ``review`` as its state."""
    static = StaticFiles(directory=ASSETS / "static")
    app = Starlette(
        routes=[
            Route("/", home),
            Route("/review", page),
            Route("/api/act", act, methods=["POST"]),
            Route("/api/search", search),
            Route("/api/rater", rater, methods=["POST"]),
            Mount("/static", guard.token_gate(static, allowed, forbidden), name="static"),
        ]
    )
    app.state.review = review
    app.state.templates = _environment()
    return guard.SecurityHeaders(app)  # outermost: Starlette's own 500s carry the headers too


def _qs(queue: QueueFilter) -> dict:
    mode = "adjudicate" if queue.adjudicate else "disagreements" if queue.disagreements else None
    pairs = (
        ("cluster", queue.cluster),
        ("tag", queue.tag),
        ("status", queue.status),
        ("assignee", queue.assignee),
    )
    return {k: v for k, v in (*pairs, ("mode", mode)) if v is not None}


def _status(exc: GoldmineError) -> int:
    return 503 if isinstance(exc, StoreBusyError) else 400


def _error_panel(templates, exc: GoldmineError) -> str:
    return templates.get_template("error.html").render(message=exc.message)


def _apply(session: ReviewSession, data: dict) -> None:
    """One action from the page (``webguard.action_fields`` checked it), on the version shown."""
    action = data["action"]
    if action == "reload":
        session.reload()
        return
    if action == "undo":
        session.undo()
        return
    qid = data["query_id"]
    if not session.stale:
        session.versions[qid] = data["version"]
    session.focus = qid
    if action == "grade":
        session.grade(qid, data["chunk_id"], data["grade"])
    elif action == "accept":
        session.accept_suggestion(qid, data["chunk_id"])
    elif action == "rest":
        session.rest_not_relevant(qid)
    elif action == "no-answer":
        session.no_answer(qid)
    elif action == "unsure":
        session.skip(qid, why="unsure")
    elif action == "skip":
        session.skip(qid)
    elif action == "reject":
        session.reject(qid)
    elif action == "note":
        session.note(qid, data["note"])  # bounded by the body's limit (webguard.MAX_BODY)
    elif action == "add":
        session.add_candidate(qid, data["chunk_id"])


def serve(
    store: Store | Path | None,
    by: str,
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    open_browser: bool = True,
    redact: Callable[[str], str] | None = None,
    queue: QueueFilter | None = None,
) -> None:
    """Run the page until Ctrl-C; prints the URL (with its token) first. ``queue``: the one the
    page opens on (its header's filter changes it)."""
    import socket
    import webbrowser

    import uvicorn

    store = as_store(store)
    with store.open(create=False):
        pass  # a missing or newer store fails here, before the server starts
    review = WebReview(store, by, redact=redact)
    review.start = urlencode(_qs(queue or QueueFilter()))
    app = create_app(review)
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        raise InputError(f"cannot listen on {host}:{port}: {exc.strerror}") from exc
    sock.listen(128)  # connections wait in the backlog from now on, before uvicorn accepts
    bound = sock.getsockname()[1]
    shown_host = "127.0.0.1" if host in ("0.0.0.0", "::") else host
    url = f"http://{shown_host}:{bound}/?token={review.token}"
    if host not in ("127.0.0.1", "localhost", "::1"):
        warn(
            f"listening on {host}: anyone who can reach this machine and has the URL can label; "
            "the token is the only lock"
        )
    print(f"review in your browser: {url}", flush=True)
    info("Ctrl-C stops the server; every label is already saved.")
    if open_browser:
        webbrowser.open(url)
    config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off")
    server = uvicorn.Server(config)
    try:
        server.run(sockets=[sock])
    finally:
        sock.close()
