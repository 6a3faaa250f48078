"""What the tests share: paths, the CLI (in-process or not), a pseudo-terminal, small stores, files.

Imported as ``helpers`` (pytest puts tests/ on the path; the checkout itself is not, so the stage
folders are reachable only as ``goldmine.<stage>``).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import os
import pty
import re
import select
import subprocess
import sys
import tempfile
import time
import traceback
import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import duckdb
import polars as pl
import pytest

from goldmine.goldset.items import query_id_for
from goldmine.store import open_store, transaction
from goldmine.text import normalize_query, sha256_text

ROOT = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("GOLDMINE_SHARED", ROOT.parent / "shared"))


def run_cli(*args: str, cwd: Path | None = None, env: dict | None = None,
            input: str | None = None, subprocess: bool = False):  # fmt: skip
    """Run the ``goldmine`` command; returns a CompletedProcess (text).

    In this process (``goldmine.cli.main``) by default: a subprocess costs ~0.5 s of imports, most
    of the fast lane's time. ``subprocess=True`` (or ``GOLDMINE_TEST_SUBPROCESS=1`` for every
    call) starts ``python -m goldmine`` instead, which a test about start-up, imports, locks
    between processes or signals needs.
    """
    forced = os.environ.get("GOLDMINE_TEST_SUBPROCESS", "") not in ("", "0")
    # PYTHONPATH and the like act only when an interpreter starts (a test hiding a package).
    if subprocess or forced or any(name.startswith("PYTHON") for name in env or {}):
        return run_cli_subprocess(*args, cwd=cwd, env=env, input=input)
    return run_cli_in_process(*args, cwd=cwd, env=env, input=input)


def run_cli_subprocess(*args: str, cwd: Path | None = None, env: dict | None = None,
                       input: str | None = None) -> subprocess.CompletedProcess:  # fmt: skip
    """Run ``python -m goldmine`` in a real subprocess; returns CompletedProcess (text)."""
    full_env = {**os.environ, "COLUMNS": "200", **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "goldmine", *args],
        cwd=cwd,
        env=full_env,
        capture_output=True,
        text=True,
        input=input,
        timeout=600,
    )


def run_cli_in_process(*args: str, cwd: Path | None = None, env: dict | None = None,
                       input: str | None = None) -> subprocess.CompletedProcess:  # fmt: skip
    """``goldmine.cli.main(args)`` in this process, seen as a subprocess would be: its own stdout
    and stderr, the exit code, an uncaught exception as a traceback on stderr and exit 1, and
    nothing of the call left behind (environment, folder, cached consoles and settings, the
    root's ``--db``, the commands ``main`` prunes from a group)."""
    from click.testing import CliRunner

    full_env = {"COLUMNS": "200", **(env or {})}
    with CliRunner().isolation(env=full_env) as (out, err, _), _stdin(input), \
            contextlib.chdir(cwd or Path.cwd()), _fresh_cli_state(args):  # fmt: skip
        code = _call_main(list(args))
        sys.stdout.flush()
        sys.stderr.flush()
    return subprocess.CompletedProcess(
        ["goldmine", *args],
        code,
        out.getvalue().decode("utf-8", "replace"),
        err.getvalue().decode("utf-8", "replace"),
    )


@contextlib.contextmanager
def _stdin(text: str | None) -> Iterator[None]:
    """``text`` on a stdin with a file descriptor, as a pipe has (``gold review`` reads keys
    from the descriptor); no input reads as an empty stream."""
    with tempfile.TemporaryFile("w+", encoding="utf-8") as stream:
        stream.write(text or "")
        stream.seek(0)
        saved, sys.stdin = sys.stdin, stream
        try:
            yield
        finally:
            sys.stdin = saved


@contextlib.contextmanager
def _fresh_cli_state(args: tuple[str, ...]) -> Iterator[None]:
    """Process-wide state a command sets up once per process, reset around one in-process call."""
    from goldmine import config, output
    from goldmine.options import state

    argv = sys.argv

    def reset() -> None:
        output.console.cache_clear()  # rich consoles read COLUMNS and the streams when made
        output.err_console.cache_clear()
        config._load.cache_clear()
        state.db = None
        embed = sys.modules.get("goldmine.embed")
        if embed is not None:  # a command's model load is its own, counted in its usage
            # no gc.collect: a whole-heap collect per command was most of the suite's time
            embed.release_encoders(collect=False)
            embed._LOAD_SECONDS.clear()

    reset()
    sys.argv = ["goldmine", *args]  # the store's holder file names the command from it
    try:
        with _only_its_stages(args):
            yield
    finally:
        sys.argv = argv
        reset()


@contextlib.contextmanager
def _only_its_stages(args: tuple[str, ...]) -> Iterator[None]:
    """The root app as ``python -m goldmine ARGS`` builds it: the stages main() registers for
    these arguments and no other (typer builds every registered command on each call, ~10 ms
    each); main() itself puts back a group's commands after keeping only the invoked one."""
    import goldmine.cli as cli

    app = cli._app
    cli.register_stages()  # once per process; only some are shown to each call
    stage = cli._STAGE_OF.get(cli._command_name(list(args)) or "")
    stages = (stage,) if stage else cli._STAGES

    def wanted(name: object) -> bool:  # a name no stage claims stays
        return cli._STAGE_OF.get(name if isinstance(name, str) else "", stage) in stages

    groups, commands = list(app.registered_groups), list(app.registered_commands)
    app.registered_groups = [g for g in groups if wanted(_group_name(g))]
    app.registered_commands = [c for c in commands if wanted(c.name or c.callback.__name__)]
    try:
        yield
    finally:
        app.registered_groups, app.registered_commands = groups, commands


def _group_name(group: Any) -> object:
    """The name a group is invoked by: its own, else its Typer's (``add_typer(ingest_app)``)."""
    if isinstance(group.name, str) or group.typer_instance is None:
        return group.name
    return group.typer_instance.info.name


def _call_main(args: list[str]) -> int:
    """main()'s exit code as the interpreter would give it."""
    from goldmine.cli import main

    try:
        main(args)
    except SystemExit as exc:
        if exc.code is None or isinstance(exc.code, int):
            return exc.code or 0
        print(exc.code, file=sys.stderr)
        return 1
    except Exception:  # a subprocess would print it and exit 1; Ctrl-C still stops pytest
        traceback.print_exc()
        return 1
    return 0


def unavailable(what: str, reason: str) -> None:
    """Skip a test whose tool is missing here, saying why; under CI=true (where make installs
    the browser and the spark extra) fail instead, so a missing install step cannot pass."""
    if os.environ.get("CI"):
        pytest.fail(f"{what} tests cannot run in CI: {reason}")
    pytest.skip(reason)


def qid(text: str) -> str:
    """The id of a query whose text is already in normal form (the review tests' queries)."""
    return query_id_for(text)


def norm_qid(text: str) -> str:
    return query_id_for(normalize_query(text))


def gold(cli, db: Path, *args: str, ok: bool = True, input: str | None = None,
         env: dict | None = None):  # fmt: skip
    """``goldmine --db DB gold ARGS``; asserts success unless ``ok`` is False."""
    result = cli("--db", str(db), "gold", *args, input=input, env=env)
    if ok:
        assert result.returncode == 0, result.stderr
    return result


def shown(cli, db: Path, text: str) -> dict:
    return json.loads(gold(cli, db, "show", qid(text), "--json").stdout)


# --- a terminal ----------------------------------------------------------------------------------

ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07]*\x07|\r")


class Terminal:
    """A child process on a pty; ``expect`` waits for text on its screen, ``send`` types."""

    def __init__(self, *args: str, env: dict):
        master, slave = pty.openpty()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "goldmine", *args],
            stdin=slave,
            stdout=slave,
            stderr=slave,
            env=env,
            start_new_session=True,
        )
        os.close(slave)
        self.fd = master
        self.raw = b""
        self.pos = 0

    @property
    def screen(self) -> str:
        return ANSI.sub("", self.raw.decode("utf-8", "replace"))

    def _read(self, timeout: float) -> bool:
        ready, _, _ = select.select([self.fd], [], [], timeout)
        if not ready:
            return False
        try:
            data = os.read(self.fd, 65536)
        except OSError:  # the child closed the terminal
            return False
        self.raw += data
        return bool(data)

    def expect(self, text: str, timeout: float = 60) -> str:
        deadline = time.monotonic() + timeout
        while True:
            screen = self.screen
            found = screen.find(text, self.pos)
            if found >= 0:
                seen = screen[self.pos : found + len(text)]
                self.pos = found + len(text)
                return seen
            if time.monotonic() > deadline or (
                not self._read(0.2) and self.proc.poll() is not None
            ):
                pytest.fail(f"never saw {text!r}; the screen after it was:\n{screen[self.pos :]}")

    def send(self, keys: str) -> None:
        time.sleep(0.15)  # let the loop switch the terminal to one-key mode
        os.write(self.fd, keys.encode())

    def wait(self) -> int:
        while self._read(0.2) or self.proc.poll() is None:
            pass
        os.close(self.fd)
        return self.proc.returncode


# --- eval files ----------------------------------------------------------------------------------


def write_gold(path: Path, n: int) -> Path:
    lines = [
        json.dumps({"query_id": f"q{i}", "query": f"question {i}", "relevant": [f"d{i}"]})
        for i in range(n)
    ]
    path.write_text("\n".join(lines) + "\n")
    return path


def write_run(path: Path, n: int, hit_at: dict[int, int] | None = None, default: int = 1) -> Path:
    """Query i gets its relevant d{i} at rank hit_at.get(i, default) (0: not returned)."""
    lines = []
    for i in range(n):
        rank_of = (hit_at or {}).get(i, default)
        docs = [f"x{i}_{j}" for j in range(9)]
        if rank_of:
            docs.insert(rank_of - 1, f"d{i}")
        lines += [f"q{i} Q0 {d} {r} {20 - r} t" for r, d in enumerate(docs, start=1)]
    path.write_text("\n".join(lines) + "\n")
    return path


def eval_run(cli, gold: Path, run: Path, db: Path, label: str, history: Path | None = None) -> None:
    args = [
        "eval",
        "run",
        "--gold",
        str(gold),
        "--run",
        str(run),
        "--db",
        str(db),
        "--label",
        label,
        "--metrics",
        "recall@1,recall@5,mrr",
    ]
    if history is not None:
        args += ["--history", str(history)]
    result = cli(*args)
    assert result.returncode == 0, result.stderr


# --- triage: raw search events -------------------------------------------------------------------

T0 = datetime(2026, 11, 2, 9, 0, 0)


def add_searches(con, rows, batch_id=1):
    """rows: (event_id, session, seconds after T0, query, num_results, clicked, feedback)."""
    for event_id, session, sec, query, num, clicked, feedback in rows:
        con.execute(
            """INSERT INTO search_events (event_id, batch_id, source, ts, session_id, query,
                                          num_results, result_ids, clicked_ids, feedback)
               VALUES (?, ?, 'searchlog', ?, ?, ?, ?, ?, ?, ?)""",
            [
                event_id,
                batch_id,
                T0 + timedelta(seconds=sec),
                session,
                query,
                num,
                [f"d{i}" for i in range(num or 0)],
                clicked,
                feedback,
            ],
        )


TRIAGE_QUERIES = {
    "card": [
        "Where is my card?",
        "my card has not arrived",
        "When will my card arrive?",
        "card still not delivered",
        "how long does card delivery take",
        "I have not recieved my card yet",
        "I have not received my card yet",
    ],
    "pin": [
        "How do I change my PIN?",
        "change pin number",
        "I want to reset my PIN",
        "where can i change my pin",
        "PIN change at ATM",
    ],
    "refund": [
        "I want a refund",
        "how do I get my money back",
        "refund for a purchase",
        "request a refund for an item",
        "can I get a refund",
    ],
}


def load_queries(con, texts, start=0):
    rows = []
    for n, text in enumerate(texts, start):
        rows.append((f"q{n}", f"s{n}", n * 400, text, 0 if n % 4 == 0 else 5, [], None))
        rows.append((f"r{n}", f"s{n}x", n * 400, text, 5, ["d1"], None))
    add_searches(con, rows)


# --- a sample store for the gold-set tests -------------------------------------------------------
# Written with SQL straight into the tables the other stages own, so the gold-set tests depend on
# their schemas only, not on their commands.

CHUNKS = {
    "kb-reset-1": (
        "Reset your password",
        "To reset your password open Settings, choose Security "
        "and press Reset password. A link is emailed to you and expires in one hour.",
    ),
    "kb-reset-2": (
        "Password rules",
        "Passwords need twelve characters. You cannot reuse any of your last five passwords.",
    ),
    "kb-sso-1": (
        "Single sign-on (SSO)",
        "SSO lets your team sign in with Okta or Azure AD. An "
        "admin enables SSO under Settings, Authentication, SAML.",
    ),
    "kb-vpn-1": (
        "VPN access",
        "The VPN client connects you to the office network. Install it "
        "from the portal and sign in with your company account.",
    ),
    "kb-vpn-2": (
        "VPN on mobile",
        "On iOS and Android, install the VPN app from the store and "
        "scan the QR code shown in the portal to configure the mobile VPN.",
    ),
    "kb-invoice-1": (
        "Download invoices",
        "Invoices are under Billing, History. Each invoice can "
        "be downloaded as a PDF or sent by email to the billing contact.",
    ),
    "kb-invoice-2": (
        "Change billing address",
        "Update the billing address under Billing, Details; it appears on the next invoice.",
    ),
    "kb-2fa-1": (
        "Two-factor authentication (2FA)",
        "Turn on 2FA under Security. You can use an "
        "authenticator app or SMS codes; keep your recovery codes safe.",
    ),
    "kb-export-1": (
        "Export your data",
        "Export all projects as a ZIP file under Settings, Data, "
        "Export. Large exports are emailed when ready.",
    ),
    "kb-api-1": (
        "API keys",
        "Create an API key under Developer settings. Keys can be scoped to "
        "read or write and revoked at any time.",
    ),
}

# norm text, cluster, n_events, failure_rate, tags
QUERIES = [
    ("reset password", 1, 400, 0.10, ["keyword"]),
    ("how do i reset my password", 1, 120, 0.20, ["question"]),
    ("pasword reset", 1, 30, 0.60, ["keyword", "typo"]),
    ("vpn setup", 2, 150, 0.30, ["acronym", "keyword"]),
    ("and on mobile", 2, 20, 0.50, ["follow-up"]),
    ("download invoice", 3, 90, 0.05, ["keyword"]),
    ("invoice pdf", 3, 40, 0.10, ["keyword"]),
    ("sso okta", 4, 35, 0.70, ["acronym", "keyword"]),
    ("how to turn on 2fa", 5, 25, 0.40, ["acronym", "question"]),
    ("export my data", 6, 12, 0.20, ["keyword"]),
    ("api key scopes", 7, 8, 0.25, ["acronym", "keyword"]),
    ("refund in bitcoin", 8, 3, 1.00, ["no-answer-likely", "keyword"]),
    ("dark mode", 9, 2, 1.00, ["no-answer-likely", "keyword"]),
    ("change billing address", 10, 2, 0.00, ["keyword"]),
]


def build(db: Path, chunks: dict[str, tuple[str, str]] | None = None) -> None:
    """A fresh store with snapshot 1 of CHUNKS, the triage rows and a little raw traffic."""
    with open_store(db) as con, transaction(con):
        add_snapshot(con, chunks or CHUNKS)
        clusters: dict[int, list] = {}
        for text, cluster, n, rate, tags in QUERIES:
            failed = round(n * rate)
            con.execute(
                """INSERT INTO triage_queries (norm_query, query, cluster_id, n_events,
                       n_sessions, sources, first_seen, last_seen, n_zero_results, n_no_click,
                       n_failed, failure_rate, tags)
                   VALUES (?, ?, ?, ?, ?, ['searchlog'], ?, ?, ?, ?, ?, ?, ?)""",
                [
                    normalize_query(text),
                    text,
                    cluster,
                    n,
                    n,
                    datetime(2026, 1, 5),
                    datetime(2026, 11, 30),
                    failed // 2,
                    failed - failed // 2,
                    failed,
                    rate,
                    tags,
                ],
            )
            clusters.setdefault(cluster, []).append((text, n, failed, tags))
        for cluster, rows in clusters.items():
            volume = sum(r[1] for r in rows)
            failed = sum(r[2] for r in rows)
            con.execute(
                """INSERT INTO triage_clusters (cluster_id, label, volume, n_variants, n_failed,
                       failure_rate, priority, tags)
                   VALUES (?, ?, ?, ?, ?, ?, ?, ?)""",
                [
                    cluster,
                    max(rows, key=lambda r: r[1])[0],
                    volume,
                    len(rows),
                    failed,
                    failed / volume,
                    failed,
                    sorted({t for r in rows for t in r[3]}),
                ],
            )
        events = [
            ("e1", "s1", datetime(2026, 11, 1, 9, 0), "Reset password"),
            ("e2", "s2", datetime(2026, 11, 2, 9, 0), "reset password!"),
            ("e3", "s3", datetime(2026, 11, 3, 9, 0), "VPN setup"),
            ("e4", "s3", datetime(2026, 11, 3, 9, 1), "and on mobile?"),
            ("e5", "s4", datetime(2026, 11, 4, 9, 0), "pasword reset"),
        ]
        turns = [
            (0, "user", "do you have a vpn"),
            (1, "assistant", "Yes: see VPN access in the portal."),
            (2, "user", "and on mobile?"),
        ]
        for turn, role, text in turns:
            con.execute(
                "INSERT INTO chat_turns (conversation_id, turn, batch_id, ts, role, text)"
                " VALUES ('c1', ?, 1, ?, ?, ?)",
                [turn, datetime(2026, 11, 5, 10, turn), role, text],
            )
        for event_id, session, ts, query in events:
            con.execute(
                "INSERT INTO search_events (event_id, batch_id, ts, session_id, query)"
                " VALUES (?, 1, ?, ?, ?)",
                [event_id, ts, session, query],
            )


def add_snapshot(con, chunks: dict[str, tuple[str, str]]) -> int:
    """A new corpus snapshot (the next id) holding ``chunks``; returns its id."""
    snapshot_id = con.execute(
        "SELECT coalesce(max(snapshot_id), 0) + 1 FROM corpus_snapshots"
    ).fetchall()[0][0]
    rows = sorted((cid, sha256_text(text)) for cid, (_, text) in chunks.items())
    con.execute(
        "INSERT INTO corpus_snapshots VALUES (?, 1, ?, ?, ?, NULL)",
        [snapshot_id, datetime(2026, 11, 1), sha256_text(json.dumps(rows)), len(chunks)],
    )
    for chunk_id, (title, text) in chunks.items():
        con.execute(
            "INSERT INTO chunks VALUES (?, ?, ?, ?, NULL, ?, ?, NULL)",
            [snapshot_id, chunk_id, chunk_id.rsplit("-", 1)[0], title, text, sha256_text(text)],
        )
    return snapshot_id


# --- a corpus snapshot ---------------------------------------------------------------------------


def store_corpus(con, chunks, *, label: str = "test") -> int:
    """Insert a corpus snapshot directly (independent of `goldmine ingest corpus`)."""
    snapshot_id = (
        con.execute("SELECT coalesce(max(snapshot_id), 0) + 1 FROM corpus_snapshots").fetchall()
    )[0][0]
    frame = pl.DataFrame(
        [(cid, title, text, sha256_text(text)) for cid, title, text in chunks],
        schema=["chunk_id", "title", "text", "text_hash"],
        orient="row",
    )
    with transaction(con):
        con.execute(
            "INSERT INTO corpus_snapshots VALUES (?, 0, ?, ?, ?, ?)",
            [snapshot_id, dt.datetime.now(), f"hash-{snapshot_id}", len(chunks), label],
        )
        con.register("new_chunks", frame)
        con.execute(
            "INSERT INTO chunks (snapshot_id, chunk_id, title, text, text_hash) "
            "SELECT ?, chunk_id, title, text, text_hash FROM new_chunks",
            [snapshot_id],
        )
        con.unregister("new_chunks")
    return snapshot_id


# --- search logs as files ------------------------------------------------------------------------


_TRACES_CHILD = (
    "import json, sys; from goldmine.ingest import api; from goldmine.store import open_store\n"
    "with open_store(sys.argv[2]) as con:\n"
    "    print(json.dumps(api.traces(con, [sys.argv[1]]).total))\n"
    "    print(json.dumps(con.execute('SELECT line, reason FROM rejects').fetchall()))\n"
    "hwm = [l for l in open('/proc/self/status') if l.startswith('VmHWM:')][0].split()[1]\n"
    "print(int(hwm) // 1024)\n"
)


def traces_under_limit(path: Path, db: Path, limit: str) -> tuple[dict, list, int]:
    """``api.traces`` of one file in a child under GOLDMINE_MEMORY_LIMIT ``limit`` on one thread:
    the totals, the rejects' (line, reason) and the child's peak RSS in MB (VmHWM)."""
    env = {**os.environ, "GOLDMINE_MEMORY_LIMIT": limit, "GOLDMINE_THREADS": "1"}
    done = subprocess.run(
        [sys.executable, "-c", _TRACES_CHILD, str(path), str(db)],
        capture_output=True, text=True, env=env, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    total, rejected, peak_mb = (json.loads(x) for x in done.stdout.splitlines())
    return total, rejected, peak_mb


def write_jsonl(path: Path, rows: list[dict | str | bytes]) -> Path:
    with path.open("wb") as handle:
        for row in rows:
            if isinstance(row, dict):
                row = json.dumps(row)
            handle.write(row if isinstance(row, bytes) else row.encode())
            handle.write(b"\n")
    return path


# The benchmark search log (bench/bench_ingest.py, bench/bench_spark.py, tests/test_spark.py):
# seeded, 1M events by default, ~50k distinct queries, sessions of six, a click on a third, 2%
# negative feedback, 1% of queries carrying an email or phone number.
SEARCHLOG_SEED = 7

_SEARCHLOG_EVENTS = """
SELECT
    printf('ev-%09d', i) AS event_id,
    (TIMESTAMP '2026-11-16 00:00:00' + to_microseconds((i * 600000)::BIGINT))::VARCHAR AS ts,
    printf('s%08d', i // 6) AS session_id,
    printf('u%06d', hash(i // 6 + $seed) % 200000) AS user_id,
    (['how do i', 'where is', 'cancel', 'refund', 'change', 'track', 'return', 'vacation',
      'invoice', 'pto'])[(hash(i + $seed) % 10)::BIGINT + 1]
      || ' ' || (['order', 'parcel', 'policy', 'days', 'address', 'card', 'label', 'payslip'])
      [(hash(i * 7 + $seed) % 8)::BIGINT + 1]
      || ' ' || (hash(i * 13 + $seed) % 625)::VARCHAR
      || CASE WHEN hash(i + 3 * $seed) % 100 = 0 THEN ' for jane.doe@example.com'
              WHEN hash(i + 5 * $seed) % 100 = 0 THEN ' call +44 20 7946 0958' ELSE '' END
      AS query,
    list_transform(range(10), lambda r: printf('doc-%d', hash(i + r * 31 + $seed) % 40000))
      AS result_ids,
    10 AS num_results,
    CASE WHEN hash(i * 3 + $seed) % 3 = 0 THEN [printf('doc-%d', hash(i + $seed) % 40000)]
         ELSE []::VARCHAR[] END AS clicked_ids,
    CASE WHEN hash(i * 11 + $seed) % 50 = 0 THEN 'negative' END AS feedback
FROM range($start, $stop) t(i)
"""


SEARCHLOG_FILES = ("jsonl", "parquet", "overlap", "new_half")


def generate_searchlog(
    out: Path, n: int, names: tuple[str, ...] = SEARCHLOG_FILES
) -> dict[str, Path]:
    """The bench files, made once per size (their names carry it); ``names`` picks some."""
    out.mkdir(parents=True, exist_ok=True)
    files = {
        "jsonl": out / f"events_{n}.jsonl",
        "parquet": out / f"events_{n}.parquet",
        "overlap": out / f"events_{n}_overlap.jsonl",
        "new_half": out / f"events_{n}_new_half.jsonl",
    }
    ranges = {
        "jsonl": (0, n),
        "parquet": (0, n),
        "overlap": (n // 2, n + n // 2),
        "new_half": (n, n + n // 2),
    }
    files = {name: path for name, path in files.items() if name in names}
    con = duckdb.connect()
    for name, path in files.items():
        if path.exists():
            continue
        start, stop = ranges[name]
        con.execute(
            "CREATE OR REPLACE TEMP TABLE gen AS " + _SEARCHLOG_EVENTS,
            {"seed": SEARCHLOG_SEED, "start": start, "stop": stop},
        )
        tmp = path.with_suffix(path.suffix + ".tmp")
        fmt = "parquet" if name == "parquet" else "json"
        # COPY takes no parameters for its target; the path is this script's own.
        con.execute(f"COPY gen TO '{str(tmp).replace(chr(39), chr(39) * 2)}' (FORMAT {fmt})")
        tmp.rename(path)
    con.close()
    return files


def trec_session_track_jsonl(xml_path: Path, out: Path) -> dict[str, int]:
    """The 2012 session track as a search log: one event per interaction (query, ranked
    ClueWeb ids shown, the ids at the clicked ranks in click order)."""
    counts = {"sessions": 0, "events": 0, "shown": 0, "clicks": 0}
    rows = []
    for session in ET.parse(xml_path).getroot().iter("session"):
        counts["sessions"] += 1
        for inter in session.iter("interaction"):
            by_rank = {r.get("rank"): r.findtext("clueweb09id") for r in inter.iter("result")}
            shown = [by_rank[k] for k in sorted(by_rank, key=int)]
            clicks = [by_rank[c.findtext("rank")] for c in inter.iter("click")]
            rows.append(
                {
                    "event_id": f"{session.get('num')}-{inter.get('num')}",
                    "timestamp": f"2012-06-01T{inter.get('starttime')}",
                    "session_id": session.get("num"),
                    "query": inter.findtext("query"),
                    "results": shown,
                    "clicks": clicks,
                }
            )
            counts["events"] += 1
            counts["shown"] += len(shown)
            counts["clicks"] += len(clicks)
    write_jsonl(out, rows)
    return counts


def reader_records(read: Callable[[duckdb.DuckDBPyConnection], None]) -> tuple[list[tuple], bool]:
    """``gm_raw`` (line, raw, err) as ``read(con)`` makes it on a fresh prepared connection,
    and whether the line reader's table of lines (``gm_lines``) was made: a log reader that
    reads in one statement is held to its reader of a table of lines with it."""
    from goldmine.ingest import batch

    con = duckdb.connect()
    batch.prepare(con)
    read(con)
    rows = con.execute("SELECT line, raw, err FROM gm_raw ORDER BY line, raw, err").fetchall()
    tables = {r[0] for r in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()}
    con.close()
    return rows, "gm_lines" in tables


def records_alike(
    one: Callable[[duckdb.DuckDBPyConnection], None],
    by_line: Callable[[duckdb.DuckDBPyConnection], None],
) -> list[tuple]:
    """The records of a log reader that reads in one statement (``one``, which must make no
    table of lines), equal to those of its reader of a table of lines (``by_line``)."""
    rows, lines_made = reader_records(one)
    assert not lines_made  # read in one statement
    assert rows == reader_records(by_line)[0]
    return rows


# --- a corpus from the wild, drafted on one query (review in the terminal and the page) --------

ESCAPES = "\x1b[2J\x1b[H\x1b]0;owned\x07"
WILD = {
    "docs/setup#install?v=2&x=%20y": ("Install", "Install the VPN client from the portal."),
    "kb article 12": ("", "The VPN profile for kb article twelve."),
    "ünïcødé/章节-3": ("请求", "VPN 设置 — the VPN in Chinese."),
    "L" * 600: ("T" * 300, "A VPN chunk whose id is six hundred characters long."),
    "007": ("Agent", "The VPN for agents."),
    "7": ("Seven", "The VPN for seven."),
    "nul\x00id": ("nul", "A VPN chunk whose id holds a NUL."),
    "cr\rid": ("cr", "A VPN chunk whose id holds a CR."),
    "esc": (f"{ESCAPES}red title", f"{ESCAPES} the VPN passage \x1b[31mred\x1b[0m ‏עברית 🎉"),
    "html": ("<b>t</b>", "<script>alert('x')</script><img src=x onerror=alert(1)> vpn"),
    "rtl": ("עברית", "איך מגדירים VPN בטלפון?"),
    'it\'s "quoted" & <tagged>': ("quotes", "A VPN chunk whose id holds quotes and markup."),
}
QUERY_WILD = "vpn setup"


def wild_store(db: Path) -> str:
    """The sample store with the wild chunks drafted, in this order, on one query; its id."""
    from goldmine.goldset.items import add_draft

    build(db, chunks=WILD)
    gold(run_cli, db, "add-query", QUERY_WILD)
    with open_store(db) as con, transaction(con):
        for chunk_id in WILD:
            assert add_draft(con, qid(QUERY_WILD), chunk_id, "test", source="bm25")
    return qid(QUERY_WILD)


def stored_turns(db_path: Path, columns: str) -> list[tuple]:
    """The stored chat turns' ``columns`` (an SQL list), in conversation and turn order."""
    from goldmine.store import open_store

    with open_store(db_path) as con:
        return con.execute(
            f"SELECT {columns} FROM chat_turns ORDER BY conversation_id, turn"
        ).fetchall()


def refused(tmp_path: Path, *args: str) -> str:
    """Run ``goldmine ingest *args``, which must fail on its input: exit 2, no traceback, no
    store left; returns stderr."""
    db = tmp_path / "store.duckdb"
    result = run_cli("--db", str(db), "ingest", *args)
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    assert not db.exists()
    return result.stderr
