"""What stands between the review page's server (``web.py``) and a request that is not the page's.

The page's only writes are JSON POSTs its own script sends. Anything else reaching a write is a
bug in another program or an attack: it gets a 4xx with a one-line reason in JSON, never a 500
(and a traceback in the reviewer's terminal), and it writes nothing.

- **Bodies** are read up to ``MAX_BODY`` bytes, parsed once, and checked field by field against
  what the page sends (``action_fields``, ``rater_name``) before any session or store sees them.
- **Origin.** A browser names the page that sent a POST in ``Origin`` (the page's fetches always
  do; a form may send only ``Referer``). A write naming any other origin is refused, so a page
  elsewhere cannot use a reviewer's cookie even where SameSite and the custom header would not
  hold (an old browser, a plugin). A request with neither header does not come from a browser
  page: curl and scripts send none; it is let through, since it still needs the token.
- **Headers** on every response, errors and static files too (``SecurityHeaders`` wraps the whole
  app, outside Starlette's own error handler): a CSP that allows only the page's own script and
  style files (the templates carry no inline script, handler or style attribute), no framing, no
  MIME sniffing, no Referer leaving the page (its URL may have held the token).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

MAX_BODY = 64 * 1024  # the bound of a note too (the terminal's notes are not cut)
_MAX_VERSION = 2**63 - 1  # a version is a BIGINT history id

CSP = "; ".join(
    [
        "default-src 'none'",
        "script-src 'self'",
        "style-src 'self'",
        "img-src 'self'",
        "connect-src 'self'",
        "form-action 'self'",
        "frame-ancestors 'none'",
        "base-uri 'none'",
    ]
)
SECURITY_HEADERS = {
    "content-security-policy": CSP,
    "x-frame-options": "DENY",
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
}

# The actions on an item and the fields each needs beyond query_id and version.
ITEM_ACTIONS: dict[str, tuple[str, ...]] = {
    "grade": ("chunk_id", "grade"),
    "accept": ("chunk_id",),
    "add": ("chunk_id",),
    "note": ("note",),
    "rest": (),
    "no-answer": (),
    "unsure": (),
    "skip": (),
    "reject": (),
}
QUEUE_ACTIONS = ("reload", "undo")  # no item: they act on the session
_TEXT_FIELDS = ("query_id", "chunk_id", "note", "tag", "status", "assignee", "mode")


class Refusal(Exception):
    """A request the page never sends: ``status`` and a one-line ``reason``."""

    def __init__(self, reason: str, status: int = 400):
        super().__init__(reason)
        self.reason = reason
        self.status = status


class SecurityHeaders:
    """ASGI wrapper adding ``SECURITY_HEADERS`` to every response the app (or its errors) sends."""

    def __init__(self, app: Callable):
        self.app = app

    async def __call__(self, scope: dict, receive: Callable, send: Callable) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message: dict) -> None:
            if message["type"] == "http.response.start":
                from starlette.datastructures import MutableHeaders

                headers = MutableHeaders(scope=message)
                for name, value in SECURITY_HEADERS.items():
                    headers.setdefault(name, value)
            await send(message)

        await self.app(scope, receive, send_with_headers)


def token_gate(app: Callable, allowed: Callable, refuse: Callable) -> Callable:
    """An ASGI app serving ``app`` only to requests ``allowed`` passes, ``refuse()`` to others."""
    from starlette.requests import Request

    async def gated(scope: dict, receive: Callable, send: Callable) -> None:
        target = app if allowed(Request(scope)) else refuse()
        await target(scope, receive, send)

    return gated


def check_origin(request: Any) -> None:
    """Refuse (403) a write whose ``Origin`` (else ``Referer``) is not the page's own origin."""
    own = f"{request.url.scheme}://{request.url.netloc}".lower()
    origin = request.headers.get("origin")
    if origin is None:
        referer = request.headers.get("referer")
        if referer is None:
            return  # not sent by a browser page (curl, a script): the token still applies
        parts = urlsplit(referer)
        origin = f"{parts.scheme}://{parts.netloc}"
    if origin.lower() != own:
        raise Refusal(
            f"refused: a write from another origin ({origin[:100]!r}); this page is {own}", 403
        )


async def read_object(request: Any) -> dict:
    """The body as a JSON object, read no further than ``MAX_BODY`` bytes."""
    too_large = f"the body is too large (the limit is {MAX_BODY:,} bytes)"
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > MAX_BODY:
        raise Refusal(too_large)
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_BODY:
            raise Refusal(too_large)
    try:
        data = json.loads(bytes(body))
    except UnicodeDecodeError as exc:
        raise Refusal(f"the body is not UTF-8 text (byte {exc.start})") from exc
    except json.JSONDecodeError as exc:
        raise Refusal(f"the body is not JSON: {exc.msg} at byte {exc.pos}") from exc
    except (ValueError, RecursionError) as exc:  # a number past int()'s digits, deep nesting
        raise Refusal("the body is not JSON: nested too deep or a number too long") from exc
    if not isinstance(data, dict):
        raise Refusal(f"the body is a JSON {_kind(data)}, not an object")
    return data


def action_fields(data: dict) -> dict:
    """The page's action, checked: every field of the type the page sends, the needed ones there.

    Returns the fields with ``version`` and ``grade`` as ints; absent or null optional fields
    are left out. Raises ``Refusal`` naming the first field that is wrong.
    """
    action = data.get("action")
    if not isinstance(action, str) or action not in (*ITEM_ACTIONS, *QUEUE_ACTIONS):
        known = ", ".join((*ITEM_ACTIONS, *QUEUE_ACTIONS))
        raise Refusal(f"action must be one of {known}")
    fields: dict[str, Any] = {"action": action}
    for name in _TEXT_FIELDS:
        if data.get(name) is not None:
            fields[name] = _text(data, name)
    if data.get("cluster") is not None:
        fields["cluster"] = _cluster(data["cluster"])
    if action in QUEUE_ACTIONS:
        return fields
    for name in ("query_id", *ITEM_ACTIONS[action]):
        if not fields.get(name) and name != "grade":
            raise Refusal(f"{action} needs a {name}")
    fields["version"] = _version(data.get("version"))
    if action == "grade":
        fields["grade"] = _grade(data.get("grade"))
    return fields


def rater_name(data: dict) -> str:
    """The name the rater box sent (its pattern is the page's to check)."""
    name = data.get("rater")
    if not isinstance(name, str):
        raise Refusal("rater must be a string")
    return name.strip()


def _text(data: dict, name: str) -> str:
    value = data[name]
    if not isinstance(value, str):
        raise Refusal(f"{name} must be a string, not a JSON {_kind(value)}")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:  # a lone surrogate escape (\ud800) parses, but is no text
        raise Refusal(f"{name} is not valid text") from exc
    return value


def _cluster(value: Any) -> str | int:
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise Refusal(f"cluster must be a number or a string, not a JSON {_kind(value)}")
    if isinstance(value, int) and not -(2**63) <= value < 2**63:
        raise Refusal("cluster is out of range")
    return value


def _version(value: Any) -> int:
    if isinstance(value, str) and value.isascii() and value.isdigit() and len(value) < 20:
        value = int(value)  # the page sends the data attribute's text
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= _MAX_VERSION:
        raise Refusal("version must be the item's version the page showed: reload the page")
    return value


def _grade(value: Any) -> int:
    if isinstance(value, str) and value in ("0", "1", "2"):
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or value not in (0, 1, 2):
        raise Refusal("a grade is 0, 1 or 2")
    return value


def _kind(value: Any) -> str:
    names = {dict: "object", list: "array", str: "string", bool: "boolean", type(None): "null"}
    return names.get(type(value), "number")
