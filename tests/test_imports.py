"""What imports what: one package, one direction between stages, nothing heavy on model-free paths.

The stage folders are installed as ``goldmine.<stage>`` only; the stages depend on the core and on
no other stage (what two stages share, reading gold sets, runs and published versions, is the
core's). A command's module (``cli*``) composes stages and may call any of them; the library
modules below it may not reach back. Nor may modules import each other in a ring, between stages
or inside one.
"""

from __future__ import annotations

import ast
import importlib.util
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from goldmine.store import open_store

from helpers import ROOT, build, gold, qid

STAGES = ("ingest", "triage", "goldset", "eval")
# The core modules that compose stages, as a command module does: the CLI's entry, which registers
# every stage, and the Python API (goldmine.evaluate, compare, Store, testing), which calls them.
ENTRY_POINTS = ("cli.py", "__main__.py", "api.py", "inputs.py", "stored.py", "testing.py")
# Which stages a stage's library modules may import (besides the core, which all may).
ALLOWED: dict[str, set[str]] = {"ingest": set(), "triage": set(), "goldset": set(), "eval": set()}


def test_the_stage_folders_import_only_as_goldmine_stages() -> None:
    for stage in STAGES:
        assert importlib.util.find_spec(stage) is None, f"`import {stage}` resolves to a folder"
        assert importlib.util.find_spec(f"goldmine.{stage}") is not None


# slow: builds a wheel and installs it into a fresh virtualenv (a pip run, 10-20 s).
@pytest.mark.slow
def test_a_built_wheel_installs_goldmine_alone(tmp_path: Path) -> None:
    """Only ``goldmine`` lands at the top of site-packages: nothing named eval or ingest."""
    src = tmp_path / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, src / name)
    for folder in ("goldmine", *STAGES):
        shutil.copytree(ROOT / folder, src / folder, ignore=shutil.ignore_patterns("__pycache__"))
    code = "import sys; from setuptools import build_meta as b; print(b.build_wheel(sys.argv[1]))"
    built = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path)], cwd=src, capture_output=True, text=True
    )
    assert built.returncode == 0, built.stderr[-2000:]
    wheel = tmp_path / built.stdout.strip().splitlines()[-1]
    with zipfile.ZipFile(wheel) as zf:
        top = {name.split("/")[0] for name in zf.namelist()}
        names = set(zf.namelist())
    assert top == {"goldmine", "goldmine-0.1.0.dist-info"}, top
    assert {f"goldmine/{s}/__init__.py" for s in STAGES} <= names
    # A stage's own subpackages too: setuptools' ``packages`` list names each one.
    assert {"goldmine/ingest/traces/__init__.py", "goldmine/ingest/spark/__init__.py"} <= names
    assert "goldmine/py.typed" in names  # PEP 561: type checkers read the API's hints


def _imports(path: Path) -> set[str]:
    """Every module a file imports, at any depth (lazy imports count: they still depend)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return found


def _stage_of(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[0] == "goldmine" and parts[1] in STAGES else None


def test_stages_depend_on_the_core_and_on_no_other_stage() -> None:
    wrong: list[str] = []
    for stage in STAGES:
        for path in sorted((ROOT / stage).rglob("*.py")):  # subpackages too
            if path.name.startswith("cli"):
                continue
            for module in sorted(_imports(path)):
                other = _stage_of(module)
                if other and other != stage and other not in ALLOWED[stage]:
                    wrong.append(f"{path.relative_to(ROOT)} imports {module}")
    for path in sorted((ROOT / "goldmine").glob("*.py")):
        if path.name in ENTRY_POINTS:
            continue
        core = [m for m in sorted(_imports(path)) if _stage_of(m)]
        wrong += [f"goldmine/{path.name} imports {m}" for m in core]
    assert not wrong, "\n".join(wrong)


# --- no cycles: between stages, inside a stage ------------------------------------------------


def _modules() -> dict[str, Path]:
    """Every module of the package, by its import name (stage folders as ``goldmine.<stage>``)."""
    found: dict[str, Path] = {}
    for folder in ("goldmine", *STAGES):
        base = "goldmine" if folder == "goldmine" else f"goldmine.{folder}"
        # A stage's subpackages too (ingest/traces/): their modules import like any other.
        for path in sorted((ROOT / folder).rglob("*.py")):
            parts = path.relative_to(ROOT / folder).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found[".".join((base, *parts))] = path
    return found


def test_the_graph_sees_the_modules_of_a_stage_subpackage() -> None:
    graph = _module_graph()
    assert "goldmine.ingest.traces.spans" in graph["goldmine.ingest.traces.langfuse"]
    assert "goldmine.ingest.traces" in graph["goldmine.ingest.api"]


def _imported_modules(path: Path, modules: dict[str, Path]) -> set[str]:
    """The package's modules a file imports, at any depth (lazy and type-only imports count).

    ``from goldmine import signals`` names the module ``goldmine.signals``, not the package;
    ``from goldmine.readers import read_run`` names ``goldmine.readers``."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [
                f"{node.module}.{alias.name}"
                if f"{node.module}.{alias.name}" in modules else node.module
                for alias in node.names
            ]  # fmt: skip
        else:
            continue
        for name in names:
            while name and name not in modules:
                name = name.rpartition(".")[0]
            found.add(name)
    return found - {""}


def _module_graph() -> dict[str, set[str]]:
    """module -> the package's modules it imports."""
    modules = _modules()
    return {name: _imported_modules(path, modules) - {name} for name, path in modules.items()}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one node (Tarjan's, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None and child in graph:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while (top := stack.pop()) != node:
                    component.append(top)
                found.append(sorted([node, *component]))
    return sorted(c for c in found if len(c) > 1)


def _stage_node(module: str) -> str:
    """A module's place in the stage graph: its stage, the core, or the core's entry points."""
    stage = _stage_of(module)
    if stage:
        return f"goldmine.{stage}"
    is_entry = module == "goldmine" or f"{module.rsplit('.', 1)[-1]}.py" in ENTRY_POINTS
    return "goldmine (entry)" if is_entry else "goldmine"


def _stage_cycles() -> tuple[list[list[str]], dict[str, list[list[str]]]]:
    graph = _module_graph()
    between: dict[str, set[str]] = {}
    for module, deps in graph.items():
        between.setdefault(_stage_node(module), set()).update(
            _stage_node(d) for d in deps if _stage_node(d) != _stage_node(module)
        )
    inside = {}
    for node in sorted(between):
        sub = {m: {d for d in deps if _stage_node(d) == node}
               for m, deps in graph.items() if _stage_node(m) == node}  # fmt: skip
        inside[node] = _cycles(sub)
    return _cycles(between), inside


# The cycles inside a stage still there, each to be removed (and struck from here): none. The
# last, ingest's file reader dispatching to the formats that read lines through it, went when the
# dispatch moved to ingest.formats and ``Target`` to ingest.target.
KNOWN_INSIDE: dict[str, list[list[str]]] = {}


def test_no_import_cycle_between_stages_or_inside_one(capsys) -> None:
    between, inside = _stage_cycles()
    with capsys.disabled():
        print(f"\nimport cycles between stages: {len(between)}; inside stages: "
              f"{sum(len(c) for c in inside.values())}")  # fmt: skip
        for cycle in between:
            print("  between:", " <-> ".join(cycle))
        for node, cycles in inside.items():
            for cycle in cycles:
                print(f"  inside {node}:", " <-> ".join(cycle))
    assert between == []
    assert {n: c for n, c in inside.items() if c} == KNOWN_INSIDE


def test_the_cycle_finder_finds_a_ring_and_not_a_line() -> None:
    ring = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _cycles(ring) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": set()}) == []


def _reached(graph: dict[str, set[str]], start: str) -> set[str]:
    """``start`` and every package module it imports, directly or through others."""
    seen, todo = {start}, [start]
    while todo:
        for dep in graph.get(todo.pop(), set()) - seen:
            seen.add(dep)
            todo.append(dep)
    return seen


@pytest.mark.parametrize("start", ["goldmine.goldset.web", "goldmine.goldset.review"])
def test_the_page_and_the_review_session_import_no_terminal_ui(start: str) -> None:
    """The review session serves two faces; the page (and the session) carry none of the
    terminal's: its module, nor anything reading keys from a terminal (termios, tty)."""
    graph, modules = _module_graph(), _modules()
    reached = _reached(graph, start)
    assert "goldmine.goldset.review_tui" not in reached
    terminal = sorted(m for m in reached if _imports(modules[m]) & {"termios", "tty"})
    assert terminal == [], f"{start} reaches the terminal UI through {terminal}"


# --- nothing heavy where no model is needed -------------------------------------------------------

_PROBE = """
import sys
from goldmine.cli import main
try:
    main(sys.argv[1:])
except SystemExit as exc:
    if exc.code:
        print("EXIT", exc.code, file=sys.stderr)
print("LOADED:" + ",".join(m for m in sys.argv[0].split(",") if m in sys.modules))
"""
MODEL = "torch,sentence_transformers,transformers,bm25s,onnxruntime,openai,pyspark"


def _loaded(args: list[str], heavy: str = MODEL, cwd: Path | None = None) -> str:
    done = subprocess.run(
        [sys.executable, "-c", _PROBE.replace("sys.argv[0]", repr(heavy)), *args],
        capture_output=True, text=True, timeout=120, cwd=cwd,
    )  # fmt: skip
    assert "EXIT" not in done.stderr, (args, done.stderr)
    return done.stdout.strip().splitlines()[-1]


def test_importing_embed_and_the_retrievers_imports_no_model() -> None:
    code = (
        "import sys, goldmine.embed, goldmine.retrieval; "
        "print(sorted(m for m in ('torch', 'sentence_transformers', 'bm25s', 'Stemmer') "
        "if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


@pytest.fixture
def small_store(cli, db_path: Path) -> Path:
    """The gold-set sample store with one query verified as "no answer"."""
    build(db_path)
    with open_store(db_path) as con:  # the sample's triage rows, as a finished run left them
        con.execute(
            "INSERT INTO triage_runs (run_id, started_at, status) VALUES (1, now(), 'done')"
        )
    gold(cli, db_path, "add-query", "reset password", "--by", "t")
    gold(cli, db_path, "label", qid("reset password"), "--no-answer")
    return db_path


@pytest.mark.parametrize(
    "args",
    [
        ["status", "--json"],
        ["triage", "show", "--json"],
        ["gold", "list", "--json"],
        ["gold", "publish", "-m", "v", "--allow-partial"],
        ["gold", "drift", "--json"],
        ["gold", "verify"],
        ["gold", "stale", "--older-than", "1d"],
        ["gold", "agreement", "--json"],
        ["gold", "next", "--json"],
    ],
    ids=lambda a: " ".join(a[:2]),
)
def test_model_free_commands_import_no_model(small_store: Path, args: list[str]) -> None:
    assert _loaded(["--db", str(small_store), *args]) == "LOADED:"


def test_ingest_imports_no_model(tmp_path: Path) -> None:
    log = tmp_path / "log.jsonl"
    log.write_text('{"event_id": "e1", "query": "vpn", "ts": "2026-11-02T09:00:00"}\n')
    args = ["--db", str(tmp_path / "s.duckdb"), "ingest", "searchlog", str(log)]
    assert _loaded(args) == "LOADED:"


def test_eval_run_imports_nothing_heavy(tmp_path: Path) -> None:
    """`eval run` on a starter set starts in a fraction of a second: not even numpy or polars."""
    gold = tmp_path / "gold.jsonl"
    gold.write_text('{"query_id": "q1", "query": "a", "relevant": ["d1"]}\n')
    run = tmp_path / "run.trec"
    run.write_text("q1 Q0 d1 1 2.0 t\nq1 Q0 d2 2 1.0 t\n")
    heavy = MODEL + ",numpy,polars,pandas,scipy,numba,matplotlib,sklearn,pyarrow,pydantic"
    args = ["eval", "run", "-g", str(gold), "-r", str(run), "--db", str(tmp_path / "s.duckdb")]
    assert _loaded(args, heavy) == "LOADED:"


def test_eval_run_on_files_without_a_store_imports_no_store_or_retriever_client(tmp_path) -> None:
    """`eval run --no-store` on two files needs neither DuckDB nor the retrievers' HTTP client
    (goldmine.eval.sources and urllib.request were a tenth of a second of its start-up)."""
    gold = tmp_path / "gold.jsonl"
    gold.write_text('{"query_id": "q1", "query": "a", "relevant": ["d1"]}\n')
    run = tmp_path / "run.trec"
    run.write_text("q1 Q0 d1 1 2.0 t\nq1 Q0 d2 2 1.0 t\n")
    heavy = "duckdb,_duckdb,goldmine.eval.sources,urllib.request,http.client"
    heavy += ",goldmine.goldset.versions,goldmine.versions"
    args = ["eval", "run", "-g", str(gold), "-r", str(run), "--no-store"]
    assert _loaded(args, heavy) == "LOADED:"


def _stage_library_modules() -> list[Path]:
    """Each stage's modules below its commands (``cli*`` modules are the commands)."""
    return [
        path
        for stage in STAGES
        for path in sorted((ROOT / stage).rglob("*.py"))
        if not (path.name == "cli.py" or path.name.startswith("cli_"))
    ]


def test_stages_take_a_store_never_a_path() -> None:
    """The path is resolved once, at the command (``store_flag``): a stage's function takes a
    ``Store`` or a connection, so no parameter is a ``db`` path and no stage opens a path itself
    (``open_store``); it opens units of work through ``store.open``. Nor does a stage read the
    configuration: the command reads it and passes values in."""
    found = []
    for path in _stage_library_modules():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                names = [a.arg for a in (*node.args.args, *node.args.kwonlyargs)]
                if "db" in names:
                    found.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.name}(db)")
            if isinstance(node, ast.Call):
                called = node.func
                name = called.id if isinstance(called, ast.Name) else getattr(called, "attr", "")
                if name in ("open_store", "resolve_db_path", "settings", "load_config"):
                    found.append(f"{path.relative_to(ROOT)}:{node.lineno} {name}(...)")
    assert not found, "\n".join(found)
