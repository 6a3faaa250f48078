"""A scripted chat-completions server on 127.0.0.1 for the model tests and the benchmark.

It speaks the OpenAI chat-completions protocol (``POST /v1/chat/completions``) over real HTTP, in
a thread of the test process; the only fake is the model. A ``responder(body, n)`` function, given
the request's JSON body and how many times this same request was seen before (0 the first
time), returns a :class:`Reply`: the answer's text, or an HTTP status with headers, a delay, a
raw body that is not OpenAI-shaped at all, a body dripped out slowly, or no answer at all until the
server closes. Every request is kept in ``server.requests``.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass
class Reply:
    content: str | None = None  # the model's answer text (choices[0].message.content)
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0  # seconds before answering (a timeout, or latency)
    raw: str | None = None  # a body sent as is, instead of an OpenAI-shaped one
    drip: float = 0.0  # seconds between the body's pieces (a trickle no read timeout catches)
    hang: bool = False  # never answer: hold the connection until the server closes
    prompt_tokens: int = 50
    completion_tokens: int = 10


Responder = Callable[[dict, int], Reply]


def user_data(body: dict) -> dict:
    """The JSON object goldmine puts in the last user message (between the data markers)."""
    text = body["messages"][-1]["content"]
    match = re.search(r"<data>\s*(\{.*\})\s*</data>", text, re.S)
    return json.loads(match.group(1)) if match else {}


def default_responder(body: dict, n: int) -> Reply:
    """A plausible model: questions from a passage, and a grade by shared words for a judge."""
    data = user_data(body)
    if "passage" in data and "query" not in data:
        title = data.get("title") or "this"
        count = int(data.get("n_questions", 2))
        questions = [{"question": f"how do i {title.lower()} ({i + 1})"} for i in range(count)]
        return Reply(json.dumps({"questions": questions}))
    if "query" in data:
        query_words = set(re.findall(r"\w+", data["query"].lower()))
        passage_words = set(re.findall(r"\w+", data["passage"].lower()))
        shared = len(query_words & passage_words)
        grade = 2 if shared >= 2 else 1 if shared == 1 else 0
        return Reply(json.dumps({"grade": grade, "reason": f"{shared} words in common"}))
    return Reply(json.dumps({"error": "unknown prompt"}))


class _Handler(BaseHTTPRequestHandler):
    server: FakeServer  # type: ignore[assignment]
    protocol_version = "HTTP/1.1"  # keep-alive: a connection per client slot, as real servers
    disable_nagle_algorithm = True  # headers and body are two writes: no 40 ms delayed-ACK stall

    def log_message(self, *args) -> None:  # quiet
        pass

    def do_POST(self) -> None:  # noqa: N802
        length = int(self.headers.get("content-length", 0))
        body = json.loads(self.rfile.read(length) or b"{}")
        server = self.server
        with server.lock:
            key = json.dumps(body.get("messages"), sort_keys=True)
            n = server.seen[key]
            server.seen[key] += 1
            server.requests.append(
                {"path": self.path, "body": body, "auth": self.headers.get("authorization")}
            )
        reply = server.responder(body, n)
        if reply.hang:
            server.closing.wait()
            return
        if reply.delay:
            time.sleep(reply.delay)
        if reply.raw is not None:
            payload = reply.raw.encode()
        elif reply.status != 200:
            payload = json.dumps({"error": {"message": f"scripted {reply.status}"}}).encode()
        else:
            payload = json.dumps(
                {
                    "id": f"chatcmpl-{len(server.requests)}",
                    "object": "chat.completion",
                    "created": int(time.time()),
                    "model": body.get("model"),
                    "choices": [
                        {
                            "index": 0,
                            "message": {"role": "assistant", "content": reply.content},
                            "finish_reason": "stop",
                        }
                    ],
                    "usage": {
                        "prompt_tokens": reply.prompt_tokens,
                        "completion_tokens": reply.completion_tokens,
                        "total_tokens": reply.prompt_tokens + reply.completion_tokens,
                    },
                }
            ).encode()
        try:
            self.send_response(reply.status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(payload)))
            for name, value in reply.headers.items():
                self.send_header(name, value)
            self.end_headers()
            if not reply.drip:
                self.wfile.write(payload)
            for start in range(0, len(payload), 16) if reply.drip else ():
                self.wfile.write(payload[start : start + 16])
                self.wfile.flush()
                if server.closing.wait(reply.drip):
                    return
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (a timeout)


class FakeServer(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 64

    def __init__(self, responder: Responder = default_responder) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.responder = responder
        self.requests: list[dict] = []
        self.seen: Counter = Counter()
        self.lock = threading.Lock()
        self.closing = threading.Event()  # set on exit: hanging and dripping handlers end
        self.thread = threading.Thread(target=self.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"

    def __enter__(self) -> FakeServer:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.closing.set()
        self.shutdown()
        self.server_close()


def serve(responder: Responder = default_responder) -> FakeServer:
    return FakeServer(responder)


def interrupted(args: list[str], server: FakeServer, requests: int) -> tuple[int, str]:
    """Run ``goldmine *args`` in a subprocess, send it Ctrl-C (SIGINT) once ``server`` has seen
    ``requests`` requests and their answers have had time to arrive; its exit code and stderr."""
    import os
    import signal
    import subprocess
    import sys

    child = subprocess.Popen(
        [sys.executable, "-m", "goldmine", *args],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "COLUMNS": "200"},
    )  # fmt: skip
    deadline = time.monotonic() + 60
    while len(server.requests) < requests and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.5)
    child.send_signal(signal.SIGINT)
    try:
        _, err = child.communicate(timeout=30)
    finally:
        child.kill()
    return child.returncode, err
