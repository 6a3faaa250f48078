"""The HTTP under ``eval run --http``: one POST a query to a user's search service, answered as
such services answer in the wild.

The standard library's ``urllib`` carries it (proxies from the environment, HTTPS with the
system's certificates, no dependency), with what it lacks for a POST: a 307 or 308 redirect
(FastAPI's answer to a missing trailing slash, a moved API) is followed with the same method and
body, as the status asks; a 301, 302 or 303, which tell a client to come back with a GET and no
body, is an error naming where the service moved.
"""

from __future__ import annotations

import urllib.parse
import urllib.request
from typing import Any


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
        return urllib.request.Request(newurl, data=req.data, headers=kept, method=req.get_method())


def _host(url: str) -> str:
    return urllib.parse.urlsplit(url).netloc.rpartition("@")[2].lower()


def opener() -> urllib.request.OpenerDirector:
    """urllib's usual handlers, with redirects followed as a POST needs them."""
    return urllib.request.build_opener(_KeepPost())


def post(
    client: urllib.request.OpenerDirector,
    url: str,
    body: bytes,
    headers: dict[str, str],
    timeout: float,
) -> Any:
    """POST ``body`` and return the raw answer's bytes."""
    request = urllib.request.Request(url, data=body, headers=headers, method="POST")
    with client.open(request, timeout=timeout) as response:
        return response.read()
