"""Runs that come from a retriever rather than a file: a Python callable, an HTTP endpoint, or a
built-in baseline over the stored corpus.

Each asks for the top k of every gold query and returns a ``Run`` keyed by gold query id. A query
whose retrieval fails (the callable raises, the endpoint times out or answers 500 after its retries)
is recorded in ``Run.errors`` and reported: never a crash, never a silent zero.
"""

from __future__ import annotations

import asyncio
import base64
import dataclasses
import hashlib
import http.client
import importlib
import inspect
import json
import math
import numbers
import re
import sys
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from goldmine.endpoints import SECRET_NAME, is_http_url, retry_after, secret_pair, shown_url
from goldmine.errors import InputError
from goldmine.eval.http_client import Moved, NotJson, Session, Unreadable
from goldmine.gold import Gold, Run, id_text
from goldmine.output import progress
from goldmine.readers import RESULT_ID_KEYS, RESULT_NESTED, dedupe, user_id
from goldmine.store import Store, as_store
from goldmine.text import norm_sql, normalize_query

Results = list[tuple[str, float | None]]


def gold_queries(gold: Gold) -> list[tuple[str, str]]:
    """(query id, query text) for every gold query; a retriever needs the text."""
    missing = [q.query_id for q in gold.queries.values() if not q.query]
    if missing:
        raise InputError(
            f"the gold set has no query text for {len(missing)} queries (e.g. {missing[0]}); a "
            "retriever needs the text: use a gold JSONL with 'query', or a published version",
            path=gold.source,
        )
    return [(q.query_id, q.query or "") for q in gold.queries.values()]


# Where services put the list of results: goldmine's own, Elasticsearch/OpenSearch (hits.hits),
# LangChain (documents), Pinecone (matches), Qdrant (result, points), Vespa (root.children).
_LISTS = ("results", "hits", "documents", "data", "matches", "result", "points", "root", "children")
_SCORES = ("score", "_score", "relevance", "relevance_score", "similarity")


def normalize_results(value: Any, json_path: str | None = None) -> Results:
    """Ids, ``(id, score)`` pairs, ``{id, score}`` objects, or an object holding such a list
    where a search service puts it (``_LISTS``; ``hits.hits`` for OpenSearch; Chroma's ``ids``
    of a single query) or under ``json_path`` (dotted). An object's id is its ``chunk_id``, else
    its ``id``/``_id``, else its ``doc_id``, each looked for beside it first and then in its
    nested fields (``_NESTED``); a Vespa document id is read as the id the user gave."""
    if json_path:
        for part in json_path.split("."):
            if not isinstance(value, dict) or part not in value:
                raise ValueError(f"the response has no {json_path!r}")
            value = value[part]
    taken: list[str] = list(json_path.split(".")) if json_path else []
    while isinstance(value, dict):
        if isinstance(value.get("ids"), list):  # Chroma: one list of ids per query sent
            ids = value["ids"]
            value = ids[0] if len(ids) == 1 and isinstance(ids[0], list) else ids
            break
        key = next((k for k in _LISTS if k in value), None)
        if key is None:
            found = _list_path(value)
            hint = (
                f"; the list at {'.'.join([*taken, found])} may be it: pass --json-path "
                f"{'.'.join([*taken, found])}"
                if found
                else "; pass --json-path"
            )
            raise ValueError(
                "the response is an object without 'results', 'hits', 'matches' or another "
                f"list of results{hint}"
            )
        taken.append(key)
        value = value[key]
    if hasattr(value, "tolist") and not isinstance(value, list | tuple):
        value = value.tolist()  # a numpy row of ids, as faiss's index.search gives them
    elif isinstance(value, Iterator):
        value = list(value)  # a generator: a retriever that yields its hits
    if not isinstance(value, list | tuple):
        raise ValueError(f"expected a list of ids or of {{id, score}}, got {_json_kind(value)}")
    return [_result(item) for item in value]


def _list_path(value: Any, depth: int = 4) -> str | None:
    """The dotted path to the first non-empty list inside ``value``, breadth first (GraphQL's
    ``data.Get.Chunk``, a wrapper's ``response.docs``): what --json-path would name."""
    level = [("", value)]
    for _ in range(depth):
        deeper = []
        for path, node in level:
            for key, child in node.items() if isinstance(node, dict) else ():
                where = f"{path}.{key}" if path else str(key)
                if isinstance(child, list) and child:
                    return where
                deeper.append((where, child))
        level = deeper
    return None


def _json_kind(value: Any) -> str:
    """A value named as JSON names it (null, an object), not as Python does (NoneType, dict)."""
    if value is None:
        return "null"
    names = {bool: "a boolean", str: "a string", dict: "an object", int: "a number"}
    return names.get(type(value), "a number" if isinstance(value, float) else type(value).__name__)


def _result(item: Any) -> tuple[str, float | None]:
    # numpy's int64 and a whole float (184.0) are ids as Python's int is (goldmine.inputs)
    if isinstance(item, str | bytes | numbers.Real) and not isinstance(item, bool):
        return id_text(item, "a result"), None
    item = _as_record(item)
    if isinstance(item, list | tuple) and len(item) == 2:
        return id_text(item[0], "a result"), float(item[1])
    if not isinstance(item, dict):
        raise ValueError(f"a result must be an id, (id, score) or {{id, score}}: {item!r}")
    doc = _result_id(item)
    if doc is None:
        raise ValueError(f"a result object has no id: {item!r}")
    score = next((item[k] for k in _SCORES if item.get(k) is not None), None)
    return doc, None if score is None else float(score)


def _as_record(item: Any) -> Any:
    """A Python retriever's hit object as the dict its fields make: a named tuple, a dataclass,
    or a client's model (Qdrant's ScoredPoint, LangChain's Document: pydantic, ``model_dump``).
    Anything else as it is."""
    if hasattr(item, "_asdict") and isinstance(item, tuple):
        return item._asdict()
    if dataclasses.is_dataclass(item) and not isinstance(item, type):
        return {f.name: getattr(item, f.name) for f in dataclasses.fields(item)}
    dump = getattr(item, "model_dump", None)
    if callable(dump) and not isinstance(item, type):
        record = dump()
        return record if isinstance(record, dict) else item
    return item


def _result_id(item: dict) -> str | None:
    nested = [v for k in RESULT_NESTED if isinstance(v := item.get(k), dict)]
    for keys in RESULT_ID_KEYS:
        for where in (item, *nested):
            found = next((where[k] for k in keys if where.get(k) is not None), None)
            if found is not None:
                return str(user_id(str(found)))
    return None


def build_run(
    gold: Gold, results: dict[str, Results], errors: dict[str, str], source: str, fmt: str
) -> Run:
    """A Run from per-query results; repeated ids counted once; a content hash for history."""

    ids = {qid: [doc for doc, _ in res] for qid, res in results.items()}
    scored = all(s is not None for res in results.values() for _, s in res)
    scores = {q: [float(s) for _, s in res] for q, res in results.items()} if scored else None
    digest = hashlib.sha256(
        json.dumps(results, sort_keys=True, separators=(",", ":")).encode()
    ).hexdigest()
    run = Run(ids, source, digest, fmt, scores=scores, errors=errors)
    run.texts = {qid: gold.queries[qid].query or "" for qid in ids}
    return dedupe(run)


# ----------------------------------------------------------------------------- callable


def load_callable(spec: str) -> Callable[..., Any]:
    """``module:function`` or ``path/to/file.py:function``; the working directory is importable."""
    module_name, sep, func_name = spec.rpartition(":")
    if not sep or not module_name or not func_name:
        raise InputError(f"--retriever must be module:function, got {spec!r}")
    cwd = str(Path.cwd())
    if cwd not in sys.path:
        sys.path.insert(0, cwd)
    try:
        if module_name.endswith(".py"):
            path = Path(module_name)
            spec_ = importlib.util.spec_from_file_location(path.stem, path)
            if spec_ is None or spec_.loader is None:
                raise ImportError(f"cannot load {path}")
            module = importlib.util.module_from_spec(spec_)
            spec_.loader.exec_module(module)
        else:
            module = importlib.import_module(module_name)
    except Exception as exc:  # the user's module may raise anything while importing
        raise InputError(f"cannot import {module_name!r}: {exc}") from exc
    func = getattr(module, func_name, None)
    if not callable(func):
        raise InputError(f"{module_name!r} has no function {func_name!r}")
    return func


def _answered(answer: Any) -> Results:
    """A Python retriever's answer: what an HTTP one answers, or ``{doc: score}`` (a pytrec_eval
    run's row), ranked by score as trec_eval ranks; None is named as Python names it."""
    if answer is None:
        raise ValueError("returned None, not a list of ids or (id, score) pairs")
    if (
        isinstance(answer, dict)
        and answer
        and all(isinstance(v, numbers.Real) and not isinstance(v, bool) for v in answer.values())
    ):
        answer = sorted(answer.items(), key=lambda pair: (pair[1], str(pair[0])), reverse=True)
    return normalize_results(answer)


def _check_signature(func: Callable[..., Any], name: str) -> None:
    """A function that cannot take (query, k) is told so once, not as each query's TypeError."""
    try:
        signature = inspect.signature(func)
    except (TypeError, ValueError):  # a builtin without one: its call will say
        return
    try:
        signature.bind("query", 10)
    except TypeError:
        raise InputError(
            f"{name} is called as f(query, k) (or f(queries, k) for a batch); it takes {signature}"
        ) from None


def _wants_batch(func: Callable[..., Any]) -> bool:
    """A function whose first parameter is named ``queries`` takes the whole list."""
    try:
        params = list(inspect.signature(func).parameters)
    except (TypeError, ValueError):
        return False
    return bool(params) and params[0] in ("queries", "batch", "texts")


def _awaited(func: Callable[..., Any], stack: ExitStack) -> Callable[..., Any]:
    """``func``, its answer awaited where it is a coroutine (an ``async def`` retriever, as
    async vector-store clients are), on one event loop for the whole run. Where this thread
    runs a loop already (Jupyter's), that loop cannot wait here: the run's loop gets a thread."""
    runner: list[Callable[[Any], Any]] = []

    def call(*args: Any) -> Any:
        answer = func(*args)
        if not inspect.isawaitable(answer):
            return answer
        if not runner:
            runner.append(_loop_for(stack))
        return runner[0](answer)

    return call


def _loop_for(stack: ExitStack) -> Callable[[Any], Any]:
    """What runs a coroutine to its end: an event loop in this thread, or, where this thread
    runs one already, in a thread of its own (opened, used and closed there)."""
    loop = asyncio.Runner()
    try:
        asyncio.get_running_loop()
    except RuntimeError:  # no loop in this thread: the usual case
        stack.callback(loop.close)
        return loop.run
    pool = stack.enter_context(ThreadPoolExecutor(1))
    stack.callback(lambda: pool.submit(loop.close).result())  # before the pool shuts down
    return lambda awaitable: pool.submit(loop.run, awaitable).result()


def run_callable(
    gold: Gold, spec: str | Callable[..., Any], k: int, *, batch: bool | None = None
) -> Run:
    """A run from ``spec`` (``module:function``, or the function itself from Python) called
    with each gold query's text and ``k``."""
    with ExitStack() as stack:
        return _run_callable(gold, spec, k, batch, stack)


def _run_callable(
    gold: Gold, spec: str | Callable[..., Any], k: int, batch: bool | None, stack: ExitStack
) -> Run:
    raw = spec if callable(spec) else load_callable(spec)
    spec = spec if isinstance(spec, str) else getattr(spec, "__qualname__", type(spec).__name__)
    _check_signature(raw, spec)
    func = _awaited(raw, stack)
    queries = gold_queries(gold)
    results: dict[str, Results] = {}
    errors: dict[str, str] = {}
    if batch if batch is not None else _wants_batch(raw):
        try:
            answers = func([text for _, text in queries], k)
            if len(answers) != len(queries):
                raise ValueError(f"returned {len(answers)} result lists for {len(queries)} queries")
            for (qid, _), answer in zip(queries, answers, strict=True):
                results[qid] = _answered(answer)
        except Exception as exc:  # the user's code: report, don't crash
            raise InputError(f"{spec} failed on the batch: {type(exc).__name__}: {exc}") from exc
        return build_run(gold, results, errors, spec, "callable")
    with progress(f"retrieving with {spec}", total=len(queries)) as advance:
        for qid, text in queries:
            try:
                results[qid] = _answered(func(text, k))
            except Exception as exc:  # one failing query is an error row, not a crash
                errors[qid] = f"{type(exc).__name__}: {exc}"
            advance()
    return build_run(gold, results, errors, spec, "callable")


# ----------------------------------------------------------------------------- HTTP


@dataclass(frozen=True)
class HttpOptions:
    url: str
    body_template: str | None = None  # JSON with "{query}" and "{k}" placeholders
    json_path: str | None = None
    concurrency: int = 8
    timeout: float = 10.0
    retries: int = 2
    backoff: float = 0.2
    headers: tuple[tuple[str, str], ...] = ()

    def check(self) -> None:
        """Refuse, before any request, what no server could answer: a URL that is no http(s)
        address (without one, every query failed as if the server were down), a timeout that
        is no positive number of seconds, a template that never sends the query."""
        if not is_http_url(self.url):
            raise InputError(
                f"--http must be an http:// or https:// URL with a host, got {self.shown_url!r} "
                "(e.g. http://localhost:8080/search)"
            )
        if not math.isfinite(self.timeout) or self.timeout <= 0:
            raise InputError(f"--timeout must be a number of seconds above 0, not {self.timeout}")
        if not _holds_query(parse_template(self.body_template)):
            raise InputError(
                f'--http-body must hold "{{query}}" where the query goes, got {self.body_template}'
            )

    @property
    def shown_url(self) -> str:
        """The URL as shown and kept: a password in it and every key-like query parameter as
        *** (``endpoints.shown_url``)."""
        return shown_url(self.url)

    def request(self) -> tuple[str, dict[str, str]]:
        """The URL to ask and the headers to send: a user and password in the URL (as
        Elasticsearch's examples write it) go as Basic auth, unless --header gives one."""
        parts = urllib.parse.urlsplit(self.url)
        headers = {"Content-Type": "application/json", **dict(self.headers)}
        if parts.username is None and parts.password is None:
            return self.url, headers
        if not any(name.lower() == "authorization" for name in headers):
            pair = f"{urllib.parse.unquote(parts.username or '')}:"
            pair += urllib.parse.unquote(parts.password or "")
            headers["Authorization"] = "Basic " + base64.b64encode(pair.encode()).decode()
        bare = parts._replace(netloc=parts.netloc.rpartition("@")[2])
        return urllib.parse.urlunsplit(bare), headers

    def secrets(self) -> list[str]:
        """What must never show in a message: the URL's password and key-like parameters'
        values, and the values of headers that carry credentials."""
        parts = urllib.parse.urlsplit(self.url)
        found = [urllib.parse.unquote(parts.password or "")]
        found += [
            urllib.parse.unquote_plus(pair.partition("=")[2])
            for pair in parts.query.split("&")
            if secret_pair(pair)
        ]
        for name, value in self.headers:
            if SECRET_NAME.search(name) or name.lower() in ("authorization", "cookie"):
                found += [value, value.partition(" ")[2]]  # "Bearer sk-…" and "sk-…"
        return sorted({f for f in found if len(f) >= 4}, key=len, reverse=True)


def scrub(text: str, secrets: Sequence[str]) -> str:
    """``text`` with every secret in it as ***: a server may echo what it was sent."""
    for secret in secrets:
        text = text.replace(secret, "***")
    return text


def _holds_query(template: Any) -> bool:
    if isinstance(template, dict):
        return any(_holds_query(v) for v in template.values())
    if isinstance(template, list):
        return any(_holds_query(v) for v in template)
    return isinstance(template, str) and "{query}" in template


def parse_headers(items: Sequence[str]) -> tuple[tuple[str, str], ...]:
    headers = []
    for item in items:
        name, sep, value = item.partition(":")
        if not sep or not name.strip():
            raise InputError(f"--header takes 'Name: value', got {item!r}")
        headers.append((name.strip(), value.strip()))
    return tuple(headers)


_PLACEHOLDER = re.compile(r"\{(query|k)\}")


def _fill(template: Any, query: str, k: int) -> Any:
    """Substitute placeholders in a parsed JSON template: "{k}" alone becomes a number. One pass
    over the template's own text: a query holding "{k}" or "{query}" is sent as written."""
    if isinstance(template, dict):
        return {key: _fill(value, query, k) for key, value in template.items()}
    if isinstance(template, list):
        return [_fill(value, query, k) for value in template]
    if template == "{k}":
        return k
    if isinstance(template, str):
        values = {"query": query, "k": str(k)}
        return _PLACEHOLDER.sub(lambda m: values[m.group(1)], template)
    return template


def parse_template(template: str | None) -> Any:
    if template is None:
        return {"query": "{query}", "k": "{k}"}
    try:
        return json.loads(template)
    except ValueError as exc:
        bare = re.search(r'(?<!")\{(query|k)\}(?!")', template)
        hint = (
            f'; write "{{{bare.group(1)}}}" in quotes: alone in its string it is sent as a '
            f"{'number' if bare.group(1) == 'k' else 'string'}"
            if bare
            else ""
        )
        raise InputError(f"--http-body is not valid JSON: {exc}{hint}") from exc


def _post(session: Session, options: HttpOptions, body: bytes) -> Any:
    url, headers = options.request()
    return session.post(url, body, headers, options.timeout).json()


def _retryable(exc: Exception) -> bool:
    if isinstance(exc, urllib.error.HTTPError):
        return exc.code >= 500 or exc.code == 429
    # http.client's HTTPException: a connection closed mid-answer (IncompleteRead), a garbled
    # status line: as transient as a dropped connection.
    return isinstance(
        exc, urllib.error.URLError | TimeoutError | OSError | http.client.HTTPException
    )


def _ask(session: Session, options: HttpOptions, template: Any, query: str, k: int) -> Results:
    body = json.dumps(_fill(template, query, k)).encode("utf-8")
    attempt = 0
    while True:
        try:
            return normalize_results(_post(session, options, body), options.json_path)
        except Exception as exc:  # classified below: retried, or raised as the query's error
            if attempt >= options.retries or not _retryable(exc):
                raise
            session.sleep(_pause(exc, options.backoff * (2**attempt)))
            attempt += 1


def _pause(exc: Exception, backoff: float) -> float:
    """The wait before a retry: what a 429's or 503's Retry-After asks (up to a minute), else
    the backoff; retrying sooner than a rate limit allows is refused again."""
    if isinstance(exc, urllib.error.HTTPError) and exc.headers is not None:
        asked = retry_after(exc.headers)
        if asked is not None:
            return asked
    return backoff


def _describe(exc: Exception) -> str:
    if isinstance(exc, Moved):
        return str(exc)
    if isinstance(exc, urllib.error.HTTPError) and 300 <= exc.code < 400:  # urllib gave up
        return f"HTTP {exc.code}: the service redirects in a loop (or more than 10 times)"
    if isinstance(exc, urllib.error.HTTPError):
        status = f"HTTP {exc.code} {' '.join(str(exc.reason).split())}"
        said = getattr(exc, "said", "")
        return status if said.lower() in status.lower() else f"{status}: {said}"
    if isinstance(exc, NotJson | Unreadable) or type(exc) is ValueError:  # the answer's shape
        return str(exc)
    if isinstance(exc, urllib.error.URLError):
        return f"connection failed: {exc.reason}"
    if isinstance(exc, http.client.IncompleteRead):
        got = len(exc.partial)
        whole = f" of {got + exc.expected:,} bytes" if exc.expected is not None else " bytes"
        return f"the connection closed mid-answer ({got:,}{whole})"
    if isinstance(exc, http.client.RemoteDisconnected):
        return "the connection closed before an answer"
    if isinstance(exc, TimeoutError):
        return str(exc) if str(exc).startswith("timed out") else "timed out"
    return f"{type(exc).__name__}: {exc}"


def run_http(gold: Gold, options: HttpOptions, k: int) -> Run:
    queries = gold_queries(gold)
    template = parse_template(options.body_template)
    results: dict[str, Results] = {}
    errors: dict[str, str] = {}

    def one(item: tuple[str, str]) -> tuple[str, Results | None, str | None]:
        qid, text = item
        try:
            return qid, _ask(session, options, template, text, k), None
        except Exception as exc:  # recorded as the query's error row
            return qid, None, scrub(_describe(exc), secrets)

    secrets = options.secrets()
    session = Session()
    with (
        progress(f"querying {options.shown_url}", total=len(queries)) as advance,
        ThreadPoolExecutor(max_workers=max(1, options.concurrency)) as pool,
    ):
        try:
            for qid, answer, error in pool.map(one, queries):
                if error is not None:
                    errors[qid] = error
                else:
                    results[qid] = answer or []
                advance()
        except BaseException:  # Ctrl-C: end the requests under way, not wait them out
            session.stop()
            raise
    return build_run(gold, results, errors, options.shown_url, "http")


# ----------------------------------------------------------------------------- baselines


def run_baseline(gold: Gold, kind: str, k: int, store: Store | None = None) -> Run:
    """The built-in BM25, dense or hybrid retriever over the store's current corpus."""
    from goldmine.retrieval import build_retriever

    if kind not in ("bm25", "dense", "hybrid"):
        raise InputError(f"--baseline must be bm25, dense or hybrid, got {kind!r}")
    queries = gold_queries(gold)
    with as_store(store).open(create=False) as con:
        retriever = build_retriever(con, kind)
        answers: Sequence[Results] = retriever.search([text for _, text in queries], k)
    results = {qid: list(answer) for (qid, _), answer in zip(queries, answers, strict=True)}
    return build_run(gold, results, {}, f"baseline:{kind}", "baseline")


# ----------------------------------------------------------------------------- traces

# Each retrieval production made (``ingest traces``), the normalized query it answered and the
# scores it showed. ``norm`` is NULL for non-ASCII text, normalized in Python (triage's rule).
_TRACE_RETRIEVALS = """
SELECT e.event_id, e.ts, e.query, e.result_ids, t.scores, {norm} AS norm
FROM search_events e LEFT JOIN trace_retrievals t USING (event_id)
WHERE e.source = 'traces' AND (?::TIMESTAMP IS NULL OR e.ts >= ?::TIMESTAMP)
  AND (?::TIMESTAMP IS NULL OR e.ts < ?::TIMESTAMP)
"""


def run_traces(
    gold: Gold, store: Store | None, since: datetime | None = None, until: datetime | None = None
) -> Run:
    """What production retrieved for each gold query: the latest stored trace retrieval (in
    ``[since, until)``) whose query normalizes to the gold query's text, as triage groups
    queries. Gold queries production did not ask are absent (see ``asked_in_traces``)."""

    wanted: dict[str, list[str]] = {}
    for q in gold.queries.values():
        if q.query:
            wanted.setdefault(normalize_query(q.query), []).append(q.query_id)
    window = [since, since, until, until]
    sql = _TRACE_RETRIEVALS.format(norm=norm_sql("e.query"))
    with as_store(store).open(create=False) as con:
        others = con.execute(
            f"SELECT DISTINCT query FROM ({sql}) WHERE norm IS NULL", window
        ).fetchall()
        texts = [r[0] for r in others]
        rows = con.execute(
            f"""SELECT coalesce(r.norm, n.norm) AS gm_norm,
                       arg_max(r.result_ids, (coalesce(r.ts, '-infinity'), r.event_id)),
                       arg_max(r.scores, (coalesce(r.ts, '-infinity'), r.event_id))
                FROM ({sql}) r
                LEFT JOIN (SELECT unnest(?::VARCHAR[]) AS query, unnest(?::VARCHAR[]) AS norm) n
                    ON r.norm IS NULL AND n.query = r.query
                WHERE coalesce(r.norm, n.norm) IN (SELECT unnest(?::VARCHAR[]))
                GROUP BY gm_norm""",
            [*window, texts, [normalize_query(t) for t in texts], list(wanted)],
        ).fetchall()
    results: dict[str, Results] = {}
    for norm, ids, scores in rows:
        ids = ids or []
        shown = scores if scores and len(scores) == len(ids) else [None] * len(ids)
        for qid in wanted[norm]:
            results[qid] = list(zip(ids, shown, strict=True))
    label = "traces" + (f" since {since:%Y-%m-%d}" if since else "")
    label += f" until {until:%Y-%m-%d}" if until else ""
    if not results:
        raise InputError(
            f"no trace retrieval in the store matches a gold query ({label}): import the "
            "application's traces with goldmine ingest traces, or widen --since/--until"
        )
    return build_run(gold, results, {}, label, "traces")


def asked_in_traces(gold: Gold, run: Run) -> tuple[Gold, str]:
    """The gold restricted to the queries production asked: a query no one asked in the window
    says nothing of the production retriever. The same version and hash, so the run lists
    beside the offline runs of that gold."""
    from dataclasses import replace

    asked = {qid: q for qid, q in gold.queries.items() if qid in run.results}
    note = (
        f"{run.source}: production retrieved for {len(asked)} of the gold's "
        f"{len(gold.queries)} queries (the latest retrieval of each); the "
        f"{len(gold.queries) - len(asked)} not asked are not scored"
    )
    return replace(gold, queries=asked, frame=None), note


# ----------------------------------------------------------------------------- saving


def write_run_file(run: Run, path: Path, tag: str = "goldmine") -> None:
    """Write a run as a TREC run file, or JSONL when the name ends in .jsonl/.json."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as handle:
        if path.suffix.lower() in (".jsonl", ".json", ".ndjson"):
            for qid, ids in run.results.items():
                scores = (run.scores or {}).get(qid)
                results = (
                    [{"id": d, "score": s} for d, s in zip(ids, scores, strict=True)]
                    if scores
                    else ids
                )
                handle.write(json.dumps({"query_id": qid, "results": results}) + "\n")
            return
        for qid, ids in run.results.items():
            scores = (run.scores or {}).get(qid)
            if not scores or any(a <= b for a, b in zip(scores, scores[1:], strict=False)):
                # No scores, or ties trec_eval would reorder: a strictly descending score from the
                # rank keeps the order the retriever gave.
                scores = [float(len(ids) - i) for i in range(len(ids))]
            for rank, (doc, score) in enumerate(zip(ids, scores, strict=True), start=1):
                handle.write(f"{qid} Q0 {doc} {rank} {score!r} {tag}\n")
