"""The HTTP under ``eval run --http``: one POST a query to a user's search service, answered as
such services answer in the wild.

The standard library's ``urllib`` carries it (proxies from the environment, HTTPS with the
system's certificates, no dependency), with what it lacks for a POST: a 307 or 308 redirect
(FastAPI's answer to a missing trailing slash, a moved API) is followed with the same method and
body, as the status asks; a 301, 302 or 303, which tell a client to come back with a GET and no
body, is an error naming where the service moved. An answer is read as its headers say: gzip
or deflate undone (a proxy may compress whatever it is asked), text decoded from the charset its
Content-Type names or by its byte-order mark, else as UTF-8, JSON's own.

``--timeout`` is one deadline for a request, its answer read in full: urllib's timeout limits
each read only, so a service sending a byte now and then held a query (and Ctrl-C) for as long as
it liked. When the deadline passes, the request's socket is shut, which returns a read blocked on
it at once; each retry has a deadline of its own.
"""

from __future__ import annotations

import codecs
import contextlib
import gzip
import http.client
import json
import re
import socket
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
import zlib
from dataclasses import dataclass
from typing import Any

from goldmine.endpoints import gist

ERROR_BYTES = 16_384  # of an HTTP error's body, what is read for its message


@dataclass(frozen=True)
class Answer:
    body: bytes
    content_type: str = ""
    content_encoding: str = ""

    def json(self) -> Any:
        """The answer as JSON, or ``NotJson`` saying what came back instead."""
        text = self.text()
        try:
            return json.loads(text)
        except ValueError:
            raise NotJson(self.content_type, text) from None

    def text(self) -> str:
        """The body as its headers say it is: uncompressed (gzip, deflate), decoded from the
        charset its Content-Type names, or by its byte-order mark, else UTF-8."""
        body = _uncompress(self.body, self.content_encoding)
        try:
            return _decode(body, self.content_type)
        except UnicodeDecodeError as exc:
            named = _CHARSET.search(self.content_type)
            raise Unreadable(
                f"the answer is not {exc.encoding} text (byte {body[exc.start]:#04x} at "
                f"{exc.start:,}); its Content-Type names "
                + (f"charset={named.group(1)}" if named else "no charset")
            ) from None


class Unreadable(ValueError):
    """An answer whose bytes cannot be read as text: compressed in a way the standard library
    does not read, or not in its charset."""


_CHARSET = re.compile(r"""charset\s*=\s*["']?([^"';\s]+)""", re.I)
_BOMS = ((codecs.BOM_UTF8, "utf-8-sig"), (codecs.BOM_UTF16_LE, "utf-16"),
         (codecs.BOM_UTF16_BE, "utf-16"))  # fmt: skip


def _uncompress(body: bytes, encoding: str) -> bytes:
    """A body a service compressed, whether it was asked to or not (a proxy that compresses
    everything); an encoding the standard library cannot read (br, zstd) is said by name."""
    kind = encoding.strip().lower()
    if kind in ("", "identity"):
        return body
    try:
        if kind in ("gzip", "x-gzip"):
            return gzip.decompress(body)
        if kind == "deflate":  # zlib-wrapped as the RFC says, or raw as some servers send it
            try:
                return zlib.decompress(body)
            except zlib.error:
                return zlib.decompress(body, -zlib.MAX_WBITS)
    except (OSError, EOFError, zlib.error) as exc:
        raise Unreadable(f"the answer is not valid {kind} ({exc})") from None
    raise Unreadable(
        f"the answer is encoded as {encoding}, which goldmine cannot read: have the service "
        "answer uncompressed or gzipped"
    )


def _decode(body: bytes, content_type: str) -> str:
    for bom, codec in _BOMS:
        if body.startswith(bom):
            return body.decode(codec)
    charset = _CHARSET.search(content_type)
    if charset:
        try:
            return body.decode(charset.group(1))
        except LookupError:  # a charset Python does not know: JSON's own, UTF-8
            pass
    return body.decode("utf-8")


class NotJson(ValueError):
    """An answer that is no JSON: an SSO login page, a proxy's error page, plain text."""

    def __init__(self, content_type: str, text: str) -> None:
        super().__init__(content_type, text)
        self.content_type, self.text = content_type, text

    def __str__(self) -> str:
        if not self.text.strip():
            return "the answer is not JSON (an empty body)"
        kind = self.content_type.partition(";")[0].strip() or "no Content-Type"
        return f"the answer is not JSON ({kind}: {gist(self.text)})"


_MESSAGE_KEYS = ("message", "reason", "detail", "error", "msg", "description", "title")


def _answer(body: bytes, headers: Any) -> Answer:
    headers = headers if headers is not None else {}
    return Answer(body, headers.get("Content-Type", ""), headers.get("Content-Encoding", ""))


def error_message(answer: Answer) -> str:
    """What an HTTP error's body says: the message where services put it (OpenAI's and
    Elasticsearch's ``error.message``/``error.reason``, FastAPI's ``detail``), else its gist."""
    try:
        text = answer.text()
    except ValueError:  # compressed past reading, or not in its charset: the bytes as they are
        text = answer.body.decode("utf-8", errors="replace")
    try:
        found = _message(json.loads(text))
    except ValueError:
        found = None
    return gist(found if found else text)


def _message(value: Any, depth: int = 0) -> str | None:
    if isinstance(value, str):
        return value or None
    if depth > 4:
        return None
    if isinstance(value, dict):
        for key in _MESSAGE_KEYS:
            found = _message(value.get(key), depth + 1)
            if found:
                return found
    if isinstance(value, list) and value:
        return _message(value[0], depth + 1)
    return None


class Moved(Exception):
    """A redirect a POST cannot follow: 301, 302 and 303 ask for a GET without the body."""

    def __init__(self, code: int, location: str) -> None:
        super().__init__(code, location)
        self.code, self.location = code, location

    def __str__(self) -> str:
        return (
            f"the service redirects to {self.location} (HTTP {self.code}), which turns the "
            f"POST into a GET without its body: give --http {self.location}"
        )


class Call:
    """One request's sockets and deadline: ``cut`` shuts them, ending any read under way."""

    def __init__(self, timeout: float) -> None:
        self.timeout = timeout
        self.end = time.monotonic() + timeout
        self.cut_short = False
        self._sockets: list[socket.socket] = []
        self._lock = threading.Lock()

    def remaining(self) -> float:
        return max(self.end - time.monotonic(), 0.001)

    def attach(self, sock: socket.socket) -> None:
        with self._lock:
            self._sockets.append(sock)
            if not self.cut_short:
                return
        _shut(sock)  # cut before the connection was made

    def cut(self) -> None:
        with self._lock:
            self.cut_short = True
            sockets = list(self._sockets)
        for sock in sockets:
            _shut(sock)


def _shut(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):  # closed already
        sock.shutdown(socket.SHUT_RDWR)


def _watched(base: type[http.client.HTTPConnection], call: Call | None):
    """A connection class of ``base`` that hands its socket to ``call`` once connected."""

    class Watched(base):  # type: ignore[valid-type, misc]
        def connect(self) -> None:
            super().connect()
            if call is not None:
                call.attach(self.sock)

    return Watched


class _Http(urllib.request.HTTPHandler):
    def http_open(self, req):  # noqa: ANN001 - urllib's
        return self.do_open(_watched(http.client.HTTPConnection, getattr(req, "call", None)), req)


class _Https(urllib.request.HTTPSHandler):
    def https_open(self, req):  # noqa: ANN001 - urllib's
        watched = _watched(http.client.HTTPSConnection, getattr(req, "call", None))
        return self.do_open(watched, req, context=self._context)


class _KeepPost(urllib.request.HTTPRedirectHandler):
    """307 and 308 followed with the same method, body and headers (the credentials only to the
    same host); 301, 302 and 303 refused as ``Moved``."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):  # noqa: ANN001 - urllib's
        if code not in (307, 308):
            fp.close()
            raise Moved(code, newurl)
        same_host = _host(newurl) == _host(req.full_url)
        kept = {
            name: value
            for name, value in req.header_items()
            if same_host or name.lower() not in ("authorization", "cookie")
        }
        new = urllib.request.Request(newurl, data=req.data, headers=kept, method=req.get_method())
        new.call = getattr(req, "call", None)  # type: ignore[attr-defined]
        return new


def _host(url: str) -> str:
    return urllib.parse.urlsplit(url).netloc.rpartition("@")[2].lower()


class Stopped(Exception):
    """The run is stopping (Ctrl-C): no request is made or waited for."""


class Session:
    """The requests of one run: urllib's usual handlers, with redirects followed as a POST
    needs them and each connection's socket known to its ``Call``, so that ``stop`` (Ctrl-C)
    ends every request under way and every wait at once, instead of letting them run out."""

    def __init__(self) -> None:
        self.opener = urllib.request.build_opener(_KeepPost(), _Http(), _Https())
        self.stopping = threading.Event()
        self._calls: set[Call] = set()
        self._lock = threading.Lock()

    def stop(self) -> None:
        self.stopping.set()
        with self._lock:
            calls = list(self._calls)
        for call in calls:
            call.cut()

    def sleep(self, seconds: float) -> None:
        """Wait before a retry, unless the run stops meanwhile."""
        if self.stopping.wait(seconds):
            raise Stopped

    def post(self, url: str, body: bytes, headers: dict[str, str], timeout: float) -> Answer:
        """POST ``body`` and return the answer, all within ``timeout`` seconds (else
        ``TimeoutError``); an HTTP error carries the start of its body as ``said``."""
        call = Call(timeout)
        with self._lock:
            if self.stopping.is_set():
                raise Stopped
            self._calls.add(call)
        try:
            return self._post(call, url, body, headers)
        finally:
            with self._lock:
                self._calls.discard(call)

    def _post(self, call: Call, url: str, body: bytes, headers: dict[str, str]) -> Answer:
        request = urllib.request.Request(url, data=body, headers=headers, method="POST")
        request.call = call  # type: ignore[attr-defined]
        timer = threading.Timer(call.timeout, call.cut)
        timer.daemon = True
        timer.start()
        late = f"timed out: no whole answer in {call.timeout:g} s (--timeout)"
        try:
            try:
                with self.opener.open(request, timeout=call.timeout) as response:
                    answer = _answer(response.read(), response.headers)
            except urllib.error.HTTPError as exc:  # its body, within the deadline too
                exc.said = error_message(_answer(exc.read(ERROR_BYTES), exc.headers))  # type: ignore[attr-defined]
                raise
        except Exception as exc:  # a read the deadline ended fails as it may: say why
            if self.stopping.is_set():
                raise Stopped from exc
            if call.cut_short:
                raise TimeoutError(late) from exc
            raise
        finally:
            timer.cancel()
        if call.cut_short:  # an answer read to the connection's close, cut short
            raise Stopped if self.stopping.is_set() else TimeoutError(late)
        return answer
