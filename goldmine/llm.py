"""One client for any OpenAI-compatible chat-completions endpoint: a hosted API, vLLM, llama.cpp's
server, Ollama.

Settings come from ``[llm]`` in goldmine.toml (``base_url``, ``model``, ``api_key_env``: the name
of an environment variable holding the key, never the key itself; ``timeout``, ``max_retries``,
``max_failures``, ``concurrency``, ``json_mode``), a command's ``--base-url``/``--model``/
``--concurrency``/``--timeout``/``--max-failures`` over them.

The HTTP is ``httpx2`` (the ``goldmine[llm]`` extra), the client the ``openai`` package itself
sends with, used directly: one POST of a chat completion is all we need from it, and ``openai``
on top costs more than it gives (``bench/bench_llm.py``): its import is 0.5-1 s of a run's
start-up, 1,000 requests took 1.7 s of CPU through it against 1.0 s through ``httpx2`` alone
(imports included), and its typed API was half a second of garbage collection at exit. The
retries are the ones users of OpenAI-compatible servers know from OpenAI's clients: 408/409/429
and 5xx (or as ``x-should-retry`` says), connection errors and timeouts, with exponential backoff
and jitter (0.5 s doubling to 8 s), honouring ``Retry-After``/``retry-after-ms`` up to a minute.
Every HTTP request is counted, so retries show in the totals. Requests run ``concurrency`` at a
time on one asyncio loop, with a progress bar.

``timeout`` is one deadline per request, for everything it takes: connecting, reading and every
retry with its wait (30 s unless set). A per-read timeout alone let a server that never answers
hold a run for minutes (60 s times five attempts for each pair), and one that sends a byte now and
then hold it for ever. A wait that would pass the deadline is not waited: the request fails there,
naming the endpoint and ``--timeout``. And a run stops asking after ``max_failures`` requests in a
row (5 unless set; 0: never) got no answer from the endpoint (no reply, a refused connection, an
HTTP error, a body that is no chat completion): a down endpoint costs a deadline or two, not one
per pair. An answer that breaks the schema does not count: the endpoint works, the model erred.

An answer is parsed strictly: the message text must be one JSON object (no prose, no code fence,
no key twice: which of two grades counts is a guess; a reasoning model's one leading
``<think>…</think>`` block, which servers without a reasoning parser leave in it, is set
aside) that a small JSON-Schema subset accepts (types, required keys, no other keys, enums,
bounds).
Anything else is a failed answer with its reason, kept by the caller, never guessed at and not
retried (a model asked again at temperature 0 says the same).

Prompts are files (``<name>.v<N>.txt`` in ``goldmine/goldset/prompts``) with a system part, a
user part and the answer's schema; a prompt's version is its name and number plus a hash of the
whole file, so any edit gives a new version and a cached answer of the old one is not reused. The
data a prompt carries (a passage, a query) goes in the user message as one JSON object inside
``<data>…</data>``, with ``<`` and ``>`` escaped, so no text in it can close the block or pose as
the instructions.
"""

from __future__ import annotations

import json
import os
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from goldmine.config import load_config
from goldmine.endpoints import gist, is_http_url, retry_after, shown_url
from goldmine.errors import InputError
from goldmine.output import progress, warn
from goldmine.text import sha256_text

PROMPTS = Path(__file__).resolve().parent.parent / "goldset" / "prompts"
DEFAULT_TIMEOUT = 30.0  # seconds for a whole request: connect, read and retries
DEFAULT_RETRIES = 4
DEFAULT_MAX_FAILURES = 5  # endpoint failures in a row that end a run's asking
DEFAULT_CONCURRENCY = 4
KEEP_CHARS = 65_536  # of an answer's text, what gold_llm_calls keeps (a longer one is cut)
# A body past this is not read on: a model's answer is a few KB, and a server sending gigabytes
# would hold them all in memory.
MAX_BODY_BYTES = 64 << 20
_NO_KEY = "none"  # local servers (Ollama, vLLM, llama.cpp) take any key; the client needs one


def _prompts_dir() -> Path:
    """The prompt files, from the installed package (or the checkout)."""
    try:
        from importlib.resources import files

        return Path(str(files("goldmine.goldset") / "prompts"))
    except (ModuleNotFoundError, TypeError):
        return PROMPTS


# --- settings ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Settings:
    base_url: str
    model: str
    api_key_env: str | None = None
    timeout: float = DEFAULT_TIMEOUT  # the deadline of a whole request, retries included
    max_retries: int = DEFAULT_RETRIES
    max_failures: int = DEFAULT_MAX_FAILURES  # 0: never give up
    concurrency: int = DEFAULT_CONCURRENCY
    json_mode: bool = True  # send response_format {"type": "json_object"}
    temperature: float = 0.0
    price_in_per_mtok: float | None = None  # [llm]: what a million prompt tokens cost
    price_out_per_mtok: float | None = None  # and a million completion tokens

    def api_key(self) -> str:
        if not self.api_key_env:
            return _NO_KEY
        value = os.environ.get(self.api_key_env)
        if not value:
            raise InputError(
                f"[llm] api_key_env names ${self.api_key_env}, which is not set: "
                f"export {self.api_key_env}=... (or remove api_key_env for a local server)"
            )
        return value

    @property
    def endpoint(self) -> str:
        return self.base_url.rstrip("/")

    @property
    def shown_endpoint(self) -> str:
        """The endpoint as messages, --json and the store show it: a password or a key in its
        address as *** (``endpoints.shown_url``)."""
        return shown_url(self.endpoint)


def settings(
    base_url: str | None = None,
    model: str | None = None,
    concurrency: int | None = None,
    *,
    timeout: float | None = None,
    max_failures: int | None = None,
) -> Settings:
    """The model settings: flags > ``[llm]`` in goldmine.toml > defaults."""

    config = load_config()  # checked when loaded: a key written in the file is refused there
    where = f"[llm] in {config.path}" if config.path else "goldmine.toml [llm]"
    typed = config.settings.llm
    base_url = base_url or typed.base_url
    model = model or typed.model
    if not base_url:
        raise InputError(f"no model endpoint: give --base-url or set base_url in {where}")
    if not model:
        raise InputError(f"no model name: give --model or set model in {where}")
    _check_url(str(base_url))
    concurrency = concurrency or typed.concurrency or DEFAULT_CONCURRENCY
    if concurrency < 1:
        raise InputError("--concurrency must be at least 1")
    timeout = _first(timeout, typed.timeout, DEFAULT_TIMEOUT)
    if timeout <= 0:
        raise InputError(f"--timeout must be more than 0 seconds, not {timeout:g}")
    max_failures = int(_first(max_failures, typed.max_failures, DEFAULT_MAX_FAILURES))
    if max_failures < 0:
        raise InputError("--max-failures must be 0 (never give up) or more")
    return Settings(
        base_url=str(base_url),
        model=str(model),
        api_key_env=typed.api_key_env,
        timeout=float(timeout),
        max_retries=DEFAULT_RETRIES if typed.max_retries is None else typed.max_retries,
        max_failures=max_failures,
        concurrency=concurrency,
        json_mode=typed.json_mode,
        temperature=typed.temperature,
        price_in_per_mtok=typed.price_in_per_mtok,
        price_out_per_mtok=typed.price_out_per_mtok,
    )


def _check_url(url: str) -> None:
    """An endpoint that is no http(s) address is bad input, said at once (``is_http_url``)."""
    if not is_http_url(url):
        raise InputError(
            f"--base-url must be an http:// or https:// URL with a host, got {shown_url(url)!r} "
            "(e.g. http://127.0.0.1:11434/v1 for Ollama)"
        )


def _first(*values):
    """The first value that is set (0 is a value: ``--max-failures 0``)."""
    return next(v for v in values if v is not None)


# --- prompts -----------------------------------------------------------------------------------


_SECTION = re.compile(r"^=== (system|user|schema) ===\s*$", re.M)


@dataclass(frozen=True)
class Prompt:
    name: str
    version: str  # "<name>.v<N>-<sha256 of the file, 10 hex>"
    system: str
    user: str  # holds {data}
    schema: dict
    path: Path

    @classmethod
    def from_file(cls, path: Path) -> Prompt:

        text = path.read_text(encoding="utf-8")
        parts = _SECTION.split(text)
        sections = dict(zip(parts[1::2], (p.strip() for p in parts[2::2]), strict=True))
        missing = {"system", "user", "schema"} - set(sections)
        if missing:
            raise InputError(f"prompt file lacks === {', '.join(sorted(missing))} ===", path=path)
        if "{data}" not in sections["user"]:
            raise InputError("the user part must hold {data}", path=path)
        stem = path.name.removesuffix(".txt")
        return cls(
            name=stem.split(".")[0],
            version=f"{stem}-{sha256_text(text)[:10]}",
            system=sections["system"],
            user=sections["user"],
            schema=json.loads(sections["schema"]),
            path=path,
        )

    def messages(self, data: dict) -> list[dict]:
        return [
            {"role": "system", "content": self.system},
            {"role": "user", "content": self.user.replace("{data}", data_block(data))},
        ]


def data_block(data: dict) -> str:
    """The data as one JSON object in ``<data>`` markers; ``<``/``>`` escaped inside it."""
    text = json.dumps(data, ensure_ascii=False, sort_keys=True)
    text = text.replace("<", "\\u003c").replace(">", "\\u003e")
    return f"<data>\n{text}\n</data>"


def load_prompt(name: str) -> Prompt:
    """The newest version of a prompt: ``<name>.v<N>.txt`` with the highest N."""
    found = []
    for path in _prompts_dir().glob(f"{name}.v*.txt"):
        match = re.fullmatch(rf"{re.escape(name)}\.v(\d+)\.txt", path.name)
        if match:
            found.append((int(match.group(1)), path))
    if not found:
        raise InputError(f"no prompt file {name}.v<N>.txt in {_prompts_dir()}")
    return Prompt.from_file(max(found)[1])


# --- strict answers ----------------------------------------------------------------------------

_TYPES: dict[str, Any] = {
    "object": dict,
    "array": list,
    "string": str,
    "number": (int, float),
    "boolean": bool,
}


def validate(value: Any, schema: dict, where: str = "") -> str | None:
    """The first way ``value`` breaks ``schema`` (a JSON-Schema subset), or None."""
    at = f"{where}: " if where else ""
    kind = schema.get("type")
    if kind == "integer":
        if isinstance(value, bool) or not isinstance(value, int):
            return f"{at}not an integer"
    elif kind and (
        not isinstance(value, _TYPES[kind]) or (kind == "number" and isinstance(value, bool))
    ):
        return f"{at}not {'an' if kind[0] in 'ao' else 'a'} {kind}"
    if "enum" in schema and value not in schema["enum"]:
        return f"{at}{json.dumps(value)} is not one of {schema['enum']}"
    if isinstance(value, str):
        if len(value) > schema.get("maxLength", len(value)):
            return f"{at}longer than {schema['maxLength']} characters"
        if len(value.strip()) < schema.get("minLength", 0):
            return f"{at}shorter than {schema['minLength']} characters"
    if isinstance(value, int | float) and not isinstance(value, bool):
        if "minimum" in schema and value < schema["minimum"]:
            return f"{at}{value} is below {schema['minimum']}"
        if "maximum" in schema and value > schema["maximum"]:
            return f"{at}{value} is above {schema['maximum']}"
    if isinstance(value, list):
        if len(value) > schema.get("maxItems", len(value)):
            return f"{at}more than {schema['maxItems']} items"
        if len(value) < schema.get("minItems", 0):
            return f"{at}fewer than {schema['minItems']} items"
        for i, item in enumerate(value):
            problem = validate(item, schema.get("items", {}), f"{where}[{i}]")
            if problem:
                return problem
    if isinstance(value, dict):
        props = schema.get("properties", {})
        for key in schema.get("required", []):
            if key not in value:
                return f"missing {where + '.' if where else ''}{key}"
        if schema.get("additionalProperties") is False:
            extra = sorted(set(value) - set(props))
            if extra:
                return f"unexpected key {', '.join(extra)}" + (f" in {where}" if where else "")
        for key, sub in props.items():
            if key in value:
                problem = validate(value[key], sub, f"{where}.{key}" if where else key)
                if problem:
                    return problem
    return None


class _DuplicateKey(ValueError):
    pass


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict:
    """An object's pairs as a dict, refused if a key comes twice (``json`` keeps the last)."""
    out = dict(pairs)
    if len(out) < len(pairs):
        seen: set[str] = set()
        twice = next(k for k, _ in pairs if k in seen or seen.add(k))
        raise _DuplicateKey(f"duplicate key {json.dumps(twice)}")
    return out


# A reasoning model's thinking, when the server leaves it in the message (no reasoning parser):
# one block before the answer, set aside; the answer after it is read as strictly as ever.
_THINKING = re.compile(r"\A\s*<think>.*?</think>", re.S)


def parse(content: str | None, schema: dict) -> tuple[dict | None, str | None]:
    """(data, None) for a strict answer, else (None, why)."""
    if content is not None:
        content = _THINKING.sub("", content, count=1)
    if content is None or not content.strip():
        return None, "empty answer"
    try:
        value = json.loads(content, object_pairs_hook=_no_duplicates)
    except json.JSONDecodeError as exc:
        return None, f"not JSON ({exc.msg} at character {exc.pos})"
    except _DuplicateKey as exc:
        return None, f"not one JSON answer ({exc})"
    if not isinstance(value, dict):
        return None, "not a JSON object"
    problem = validate(value, schema)
    return (None, f"does not follow the schema: {problem}") if problem else (value, None)


# --- asking ------------------------------------------------------------------------------------


@dataclass
class Ask:
    key: str  # the caller's id for this request (a cache key)
    messages: list[dict]
    schema: dict


@dataclass
class Answer:
    key: str
    data: dict | None
    error: str | None
    content: str | None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    attempts: int = 1
    seconds: float = 0.0
    reached: bool = True  # the endpoint gave a chat completion (right or wrong), not a failure

    @property
    def ok(self) -> bool:
        return self.error is None


@dataclass
class Usage:
    calls: int = 0  # answers asked for
    requests: int = 0  # HTTP requests sent, retries included
    failed: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0
    cached: int = 0  # answers the caller's cache held (no request)
    not_asked: int = 0  # asks left when the run gave up (asked again next run)
    gave_up: str | None = None  # why the run stopped asking, if it did
    cut: int = 0  # answers longer than KEEP_CHARS (kept cut in gold_llm_calls)
    reasons: dict[str, int] = field(default_factory=dict)
    cost: float | None = None  # at the [llm] prices (``price``); None: no price set
    embed_load_seconds: float | None = None  # loading the embedding model, if the run did

    @property
    def retries(self) -> int:
        return max(self.requests - self.calls, 0)

    def price(self, s: Settings) -> None:
        """The run's cost at ``s``'s prices per million tokens, when either is set."""
        if s.price_in_per_mtok is None and s.price_out_per_mtok is None:
            return
        self.cost = (
            self.prompt_tokens * (s.price_in_per_mtok or 0.0)
            + self.completion_tokens * (s.price_out_per_mtok or 0.0)
        ) / 1e6

    def summary(self) -> str:
        text = (
            f"{self.calls:,} calls, {self.requests:,} requests ({self.retries:,} retried), "
            f"{self.failed:,} failed, {self.prompt_tokens:,} prompt + "
            f"{self.completion_tokens:,} completion tokens, {self.seconds:.1f} s"
        )
        if self.cached:
            text += f"; {self.cached:,} from the cache"
        if self.embed_load_seconds:
            text += f"; embedding model loaded in {self.embed_load_seconds:.1f} s"
        if self.cost is not None:
            text += f"; cost {self.cost:.4f} at the [llm] prices per million tokens"
        return text

    def as_dict(self) -> dict:
        return {
            "calls": self.calls,
            "requests": self.requests,
            "retries": self.retries,
            "failed": self.failed,
            "cached": self.cached,
            "not_asked": self.not_asked,
            "gave_up": self.gave_up,
            "cut": self.cut,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "seconds": round(self.seconds, 3),
            "embed_load_seconds": (
                None if self.embed_load_seconds is None else round(self.embed_load_seconds, 3)
            ),
            "cost": self.cost,
            "failure_reasons": self.reasons,
        }


def _reason_kind(error: str) -> str:
    """A failure reason without its particulars, for the totals ("not JSON", "HTTP 503")."""
    return re.split(r" \(|: ", error, maxsplit=1)[0]


# --- the HTTP: retries as OpenAI's clients do them --------------------------------------------

RETRY_STATUS = frozenset({408, 409, 429})  # and every 5xx
BACKOFF_FIRST_S, BACKOFF_MAX_S = 0.5, 8.0


def _backoff(retry: int) -> float:
    """Exponential backoff with jitter: 0.5 s doubling to 8 s, less up to a quarter."""
    import random

    return min(BACKOFF_FIRST_S * 2 ** (retry - 1), BACKOFF_MAX_S) * (1 - 0.25 * random.random())


def _status_error(response, message: str) -> str:
    """'HTTP 503 from the endpoint: <the server's message>'."""
    try:
        error = json.loads(message).get("error")
        if isinstance(error, dict) and error.get("message"):
            message = str(error["message"])
    except (ValueError, AttributeError):
        pass
    return f"HTTP {response.status_code} from the endpoint: {message[:200]}"


def _key_hint(s: Settings) -> str:
    """What a 401 should make a user check: which variable the key came from, or that none
    was sent."""
    if s.api_key_env:
        return f"; the key sent is ${s.api_key_env}'s ([llm] api_key_env)"
    return "; no key was sent: set [llm] api_key_env to the variable that holds it"


def _masked(text: str, key: str) -> str:
    """The endpoint's body with the key as ***: some servers echo the key they refused, and
    what the body says is printed (an error) and kept in the store (a body that is no chat
    completion). Masked whole, before any of it is cut short."""
    return text if key == _NO_KEY or len(key) < 4 else text.replace(key, "***")


def _should_retry(response) -> bool:
    told = response.headers.get("x-should-retry")
    if told in ("true", "false"):
        return told == "true"
    return response.status_code in RETRY_STATUS or response.status_code >= 500


async def _post(
    http, payload: bytes, s: Settings, key: str = _NO_KEY
) -> tuple[str | None, str | None, int]:
    """POST one chat completion, retried on 408/409/429/5xx, connection errors and timeouts,
    all within ``s.timeout`` seconds. Returns (the body, None, attempts) or (None, why,
    attempts)."""
    import asyncio

    import httpx2

    loop = asyncio.get_running_loop()
    end = loop.time() + s.timeout
    no_answer = f"no answer from {s.shown_endpoint} in {s.timeout:g} s; --timeout to wait longer"
    attempt, hops, url = 0, 0, "chat/completions"
    while True:
        attempt += 1
        wait = None
        try:
            # The whole attempt, not each read: a server dripping a byte at a time resets a
            # read timeout for ever.
            async with asyncio.timeout_at(end):
                response, text = await _send(http, url, payload, s)
        except (TimeoutError, httpx2.TimeoutException):
            return None, no_answer, attempt
        except httpx2.TransportError as exc:
            error = f"cannot reach the endpoint ({exc or type(exc).__name__})"[:300]
        else:
            if text is None:
                return None, f"the endpoint's answer is past {MAX_BODY_BYTES:,} bytes", attempt
            text = _masked(text, key)
            moved = _redirect(response, hops)
            if isinstance(moved, str) and response.status_code in (307, 308):
                url, hops, attempt = moved, hops + 1, attempt - 1  # not a retry: the same ask
                continue
            if moved is not None:
                return None, moved.message, attempt
            if response.status_code < 300:
                return text, None, attempt
            error = _status_error(response, text)
            if response.status_code == 401:
                error += _key_hint(s)
            if not _should_retry(response):
                return None, error, attempt
            wait = retry_after(response.headers)
        if attempt > s.max_retries:
            return None, error, attempt
        pause = wait if wait is not None else _backoff(attempt)
        if loop.time() + pause >= end:
            late = f"{error}; no retry within the {s.timeout:g} s deadline (--timeout)"
            return None, late, attempt
        await asyncio.sleep(pause)


MAX_HOPS = 5  # redirects followed for one request


@dataclass(frozen=True)
class _Moved:
    message: str


def _redirect(response, hops: int) -> str | _Moved | None:
    """Where a redirect sends the request: a 307's or 308's target, POSTed again as the status
    asks (httpx follows none by default, so each failed as "HTTP 307 from the endpoint: ");
    a 301, 302 or 303, which turn a POST into a GET, as a failure naming the endpoint to give.
    None when the answer is no redirect."""
    location = response.headers.get("location")
    if not 300 <= response.status_code < 400 or not location:
        return None
    target = str(response.url.join(location))
    if response.status_code in (307, 308) and hops < MAX_HOPS:
        return target
    if response.status_code in (307, 308):
        return _Moved(f"more than {MAX_HOPS} redirects (the last to {target})")
    base = target.removesuffix("/chat/completions")
    return _Moved(
        f"the endpoint redirects to {target} (HTTP {response.status_code}), which turns the "
        f"POST into a GET: give --base-url {base}"
    )


async def _send(http, url: str, payload: bytes, s: Settings):
    """POST ``payload`` to ``url`` (relative to the endpoint, or a redirect's target) and read
    the answer; the key goes to the endpoint's own host only."""
    import httpx2

    request = http.build_request("POST", url, content=payload)
    if request.url.host != httpx2.URL(s.endpoint).host:
        del request.headers["authorization"]
    response = await http.send(request, stream=True)
    try:
        return response, await _read_capped(response)
    finally:
        await response.aclose()


async def _read_capped(response) -> str | None:
    """The body as text, or None once it passes MAX_BODY_BYTES (the rest is not read)."""
    chunks, size = [], 0
    async for chunk in response.aiter_bytes():
        size += len(chunk)
        if size > MAX_BODY_BYTES:
            return None
        chunks.append(chunk)
    return b"".join(chunks).decode(response.encoding or "utf-8", errors="replace")


def _answer(ask: Ask, text: str | None, error: str | None, attempts: int, start: float) -> Answer:
    """The model's answer read strictly from the endpoint's body (or the failure)."""
    seconds = time.monotonic() - start
    if error is not None:
        return Answer(ask.key, None, error, None, attempts=attempts, seconds=seconds, reached=False)
    try:
        completion = _streamed(text) if _SSE.match(text) else json.loads(text)
        choice = completion["choices"][0]
        message = choice["message"]
        content = message["content"]
        tokens = completion.get("usage") or {}
    except (ValueError, KeyError, IndexError, TypeError, AttributeError):
        why = _not_a_completion(text)
        return Answer(
            ask.key, None, why, text[:2000], attempts=attempts, seconds=seconds, reached=False
        )
    content, error = _content_text(content)
    data = None
    if error is None:
        data, error = parse(content, ask.schema)
    if error is not None:
        error = _why_no_answer(choice, message, content) or error
    return Answer(
        ask.key,
        data,
        error,
        content,
        prompt_tokens=int(tokens.get("prompt_tokens") or 0),
        completion_tokens=int(tokens.get("completion_tokens") or 0),
        attempts=attempts,
        seconds=seconds,
    )


def _why_no_answer(choice: dict, message: dict, content: str | None) -> str | None:
    """What the endpoint says of an answer that failed, when it says more than the text does:
    cut at the token limit (a reasoning model that spent them thinking), or a tool called
    instead of an answer written. None when it says nothing more."""
    if choice.get("finish_reason") == "length":
        _, why = parse(content, {"type": "object"})
        said = why or "no JSON answer"
        return f"the answer was cut at the model's token limit (finish_reason length): {said}"
    calls = message.get("tool_calls") if isinstance(message, dict) else None
    if not (content or "").strip() and isinstance(calls, list) and calls:
        names = ", ".join(
            str((c.get("function") or {}).get("name", "?")) for c in calls if isinstance(c, dict)
        )
        return f"the model called a tool ({names}) instead of answering in text"
    return None


def _not_a_completion(text: str) -> str:
    """Why a body is no chat completion, in its own words: an error object sent with a 200
    (its message), else its first words (an HTML page's title)."""
    try:
        error = json.loads(text).get("error")
    except (ValueError, AttributeError):
        error = None
    if isinstance(error, dict) and error.get("message"):
        error = error["message"]
    if isinstance(error, str) and error:
        return f"the endpoint answered an error: {error[:200]}"
    said = gist(text, 80)
    return "the endpoint's answer is not a chat completion" + (f" ({said})" if said else "")


# A body of server-sent events: "data: {chunk}" lines (a ": comment" or "event:" line first).
_SSE = re.compile(r"\A\s*(?:data|event|id|retry)?:")


def _streamed(text: str) -> dict:
    """A chat completion streamed as server-sent events (some gateways stream every answer,
    asked or not), put back together: the chunks' deltas joined into one message, the last
    finish reason, the usage a chunk carried."""
    content: list[str] = []
    finish, usage = None, None
    for line in text.splitlines():
        if not line.startswith("data:") or line[5:].strip() == "[DONE]":
            continue
        chunk = json.loads(line[5:])
        usage = chunk.get("usage") or usage
        for choice in chunk.get("choices") or []:
            if choice.get("index", 0) == 0:
                piece = (choice.get("delta") or {}).get("content")
                content.append(piece if isinstance(piece, str) else "")
                finish = choice.get("finish_reason") or finish
    message = {"role": "assistant", "content": "".join(content)}
    return {"choices": [{"message": message, "finish_reason": finish}], "usage": usage}


def _content_text(content: Any) -> tuple[str | None, str | None]:
    """The message's text, and None; or what it holds instead, and why it is no answer. A list
    of parts (``[{"type": "text", "text": …}]``, a reasoning model's thinking beside it) is its
    text parts in order."""
    if content is None or isinstance(content, str):
        return content, None
    if isinstance(content, list) and all(isinstance(p, dict) for p in content):
        texts = [
            p["text"]
            for p in content
            if p.get("type") in ("text", "output_text") and isinstance(p.get("text"), str)
        ]
        return "".join(texts), None
    held = json.dumps(content, ensure_ascii=False)[:2000]
    kind = {dict: "an object", list: "a list", bool: "a boolean"}.get(type(content), "a number")
    return held, f"the message's content is not text ({kind})"


async def _ask_all(
    s: Settings, asks: list[Ask], usage: Usage, advance, done: dict[int, Answer]
) -> list[Answer]:
    import asyncio

    import httpx2

    key = s.api_key()
    headers = {
        "authorization": f"Bearer {key}",
        "content-type": "application/json",
        "accept": "application/json",
        "user-agent": "goldmine",
    }
    http = httpx2.AsyncClient(
        base_url=s.endpoint + "/",
        headers=headers,
        timeout=s.timeout,
        # A plain-HTTP endpoint (a local server) has no certificate to check: loading the CA
        # bundle for it is 50-100 ms before the first request. HTTPS is verified as ever.
        verify=not s.endpoint.startswith("http://"),
        limits=httpx2.Limits(
            max_connections=s.concurrency, max_keepalive_connections=s.concurrency
        ),
    )
    gate = asyncio.Semaphore(s.concurrency)
    extra: dict[str, Any] = {"response_format": {"type": "json_object"}} if s.json_mode else {}
    sent = 0  # HTTP requests, retries included
    streak = _Streak(s.max_failures, len(asks))

    async def one(place: int, ask: Ask) -> Answer | None:
        nonlocal sent
        body = {"model": s.model, "messages": ask.messages, "temperature": s.temperature} | extra
        async with gate:
            if streak.gave_up:
                return None  # not asked: the endpoint is down (in-flight ones finish)
            start = time.monotonic()
            try:
                text, error, attempts = await _post(http, json.dumps(body).encode(), s, key)
            finally:
                advance(1)
            sent += attempts
            answer = _answer(ask, text, error, attempts, start)
            streak.record(answer)
            done[place] = answer
            return answer

    try:
        answers = await asyncio.gather(*(one(i, a) for i, a in enumerate(asks)))
    finally:
        usage.requests += sent
        await http.aclose()
    asked = [a for a in answers if a is not None]
    if len(asked) < len(asks):  # gave up with asks left (not when the last ones failed)
        usage.not_asked = len(asks) - len(asked)
        usage.gave_up = (
            f"gave up after {s.max_failures} consecutive failures (the last: {streak.last}); "
            f"{usage.not_asked:,} not asked"
        )
    return asked


class _Streak:
    """Endpoint failures in a row, in the order answers come back; a reached endpoint resets
    the count. The first failure is said at once when more asks wait, not only at the end."""

    def __init__(self, limit: int, total: int) -> None:
        self.limit, self.total = limit, total
        self.count, self.seen, self.last = 0, 0, ""
        self.gave_up = False

    def record(self, answer: Answer) -> None:
        if answer.reached:
            self.count = 0
            return
        self.count, self.seen, self.last = self.count + 1, self.seen + 1, answer.error or ""
        if self.seen == 1 and self.total > 1:
            warn(f"first failure: {self.last}")
        if self.limit and self.count >= self.limit:
            self.gave_up = True


def ask_all(
    s: Settings, asks: list[Ask], *, description: str = "asking the model"
) -> tuple[list[Answer], Usage]:
    """Every ask answered (in order), ``s.concurrency`` at a time, with a bar; and the totals.
    After ``s.max_failures`` endpoint failures in a row, only the asks already asked: the rest
    are counted in ``usage.not_asked``, and ``usage.gave_up`` says why."""
    import asyncio

    usage = Usage()
    if not asks:
        return [], usage
    start = time.monotonic()
    done: dict[int, Answer] = {}  # by the ask's place: what came back, should Ctrl-C come
    try:
        with progress(f"{description} ({s.model})", total=len(asks)) as advance:
            answers = asyncio.run(_ask_all(s, asks, usage, advance, done))
    except KeyboardInterrupt as exc:
        answers = [done[i] for i in sorted(done)]
        _totals(usage, answers, start)
        raise AnswersCut(answers, usage) from exc
    _totals(usage, answers, start)
    return answers, usage


class AnswersCut(KeyboardInterrupt):
    """Ctrl-C while asking: the ``answers`` already received (in the asks' order) and their
    ``usage``, for a caller to keep what was paid for before it stops. One that does not catch
    it stops as at any Ctrl-C."""

    def __init__(self, answers: list[Answer], usage: Usage) -> None:
        super().__init__()
        self.answers, self.usage = answers, usage


def _totals(usage: Usage, answers: list[Answer], start: float) -> None:
    """``usage``'s totals over ``answers``, asked from ``start`` (time.monotonic) on."""
    usage.seconds = time.monotonic() - start
    usage.calls = len(answers)
    for a in answers:
        usage.cut += len(a.content or "") > KEEP_CHARS
        usage.prompt_tokens += a.prompt_tokens
        usage.completion_tokens += a.completion_tokens
        if not a.ok:
            usage.failed += 1
            kind = _reason_kind(a.error or "")
            usage.reasons[kind] = usage.reasons.get(kind, 0) + 1
