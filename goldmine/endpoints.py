"""What goldmine's two HTTP clients share: ``eval run --http`` asking a user's search service
(``eval/http_client.py``, the standard library) and the model calls of ``gold draft --judge
llm`` and ``gold synth`` (``goldmine/llm.py``, httpx): whether an address is one to ask, the wait
a 429 or 503 asks for, and a body said in a few words. One rule each, so the two say the same."""

from __future__ import annotations

import html
import re
import time
from urllib.parse import unquote_plus, urlsplit, urlunsplit

RETRY_AFTER_MAX_S = 60.0  # a longer Retry-After is not waited for: backoff instead


def is_http_url(url: str) -> bool:
    """Whether ``url`` is an http(s) address with a host. Without one every request failed,
    each retried with backoff, as if the server were down: the callers refuse it at once."""
    parts = urlsplit(url)
    return parts.scheme.lower() in ("http", "https") and bool(parts.hostname)


# A query parameter or header whose value is a credential: key, api_key, x-api-key,
# subscription-key, access_token, client_secret, password, sig (Azure's signed URLs), auth.
SECRET_NAME = re.compile(
    r"(?i)(?:^|[-_.])(?:api[-_]?key|key|token|secret|password|passwd|pwd|sig|signature|auth"
    r"|credentials?)$"
)


def secret_pair(pair: str) -> bool:
    """Whether a query string's ``name=value`` carries a credential."""
    name, sep, value = pair.partition("=")
    return bool(sep and value and SECRET_NAME.search(unquote_plus(name)))


def shown_url(url: str) -> str:
    """``url`` as shown and kept (messages, the store, a history file that goes into the
    user's repository): a password in it and every key-like query parameter as ***."""
    parts = urlsplit(url)
    netloc = parts.netloc
    if parts.password is not None:
        netloc = f"{parts.username}:***@{netloc.rpartition('@')[2]}"
    query = "&".join(
        f"{pair.partition('=')[0]}=***" if secret_pair(pair) else pair
        for pair in parts.query.split("&")
    )
    return urlunsplit(parts._replace(netloc=netloc, query=query))


def retry_after(headers) -> float | None:
    """The wait a 429/503 asks for (``retry-after-ms``, ``retry-after`` in seconds or as an HTTP
    date), if it is one to honour: any mapping of headers whose ``in`` ignores case (httpx's,
    or urllib's ``email.message.Message``)."""
    from email.utils import parsedate_to_datetime

    wait = None
    try:
        if "retry-after-ms" in headers:
            wait = float(headers["retry-after-ms"]) / 1000
        elif "retry-after" in headers:
            value = headers["retry-after"]
            try:
                wait = float(value)
            except ValueError:
                wait = parsedate_to_datetime(value).timestamp() - time.time()
    except (TypeError, ValueError):
        return None
    return wait if wait is not None and 0 < wait <= RETRY_AFTER_MAX_S else None


_TITLE = re.compile(r"<title[^>]*>(.*?)</title>", re.I | re.S)
_TAG = re.compile(r"<[^>]+>")


def gist(text: str, limit: int = 200) -> str:
    """A few words of a body: an HTML page's title (else its text), the start of anything
    else, on one line."""
    title = _TITLE.search(text)
    if title:
        text = title.group(1)
    elif text.lstrip().startswith("<"):
        text = _TAG.sub(" ", text)
    text = " ".join(html.unescape(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
