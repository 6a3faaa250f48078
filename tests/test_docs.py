"""The documentation cannot drift from the command line.

The site in docs/ must build with ``mkdocs build --strict`` (which also fails on an internal link
or an image that does not resolve), and every command and option of ``goldmine`` must be named in
it: each option in a section of the docs that also names its command, so a new option nobody
described fails here rather than going unseen (as sqlite-utils' tests/test_docs.py does for its
commands).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import typer

from goldmine.cli import app

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
# Options every command shares, described once (getting started: "Every command takes …").
SHARED = {"--db", "--json", "--help"}


def _commands(command, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], object]]:
    """Every command of the tree, depth first, with its path from the root (root itself: ())."""
    yield path, command
    for name, sub in sorted(getattr(command, "commands", {}).items()):
        yield from _commands(sub, (*path, name))


def _options(command) -> list[tuple[str, ...]]:
    """Each option's spellings (``("-k", "--k")``, ``("--redact", "--no-redact")``)."""
    return [
        (*param.opts, *param.secondary_opts)
        for param in command.params
        if getattr(param, "param_type_name", "") == "option"
    ]


def _long(spellings: tuple[str, ...]) -> str:
    return next((s for s in spellings if s.startswith("--")), spellings[0])


def _tree() -> list[tuple[tuple[str, ...], object]]:
    return list(_commands(typer.main.get_command(app)))


def _leaves() -> list[tuple[str, ...]]:
    return [path for path, command in _tree() if path and not getattr(command, "commands", None)]


def _sections() -> list[str]:
    """The docs cut at every heading (a ``#`` line outside a fenced block), README included."""
    pages = [ROOT / "README.md", *sorted(DOCS.rglob("*.md"))]
    return [section for page in pages for section in _page_sections(page)]


def _page_sections(page: Path) -> Iterator[str]:
    """A page's sections, each with the text its parent sections hold before their first
    subsection: a ``### The two k's`` under ``## Scoring a run: `eval run` `` is that command's.
    """
    ancestors: list[tuple[int, str]] = []  # (level, own text) of the open parent headings
    level, current, fenced = 0, [], False
    for line in page.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            fenced = not fenced
        heading = None if fenced else re.match(r"(#+) ", line)
        if heading:
            yield "\n".join([text for _, text in ancestors] + current)
            level, own = len(heading.group(1)), (level, "\n".join(current))
            ancestors = [(lv, text) for lv, text in [*ancestors, own] if lv < level]
            current = []
        current.append(line)
    yield "\n".join([text for _, text in ancestors] + current)


def _names(path: tuple[str, ...], text: str) -> bool:
    """Whether text names the command: `gold draft`, or `goldmine add` for a top-level one."""
    words = r"\s+".join(map(re.escape, path))
    prefix = r"goldmine\s+(?:--db\s+\S+\s+)?" if len(path) == 1 else r"(?<![\w-])"
    return re.search(prefix + words + r"(?![\w-])", text) is not None


def _has_option(spellings: tuple[str, ...], text: str) -> bool:
    """Whether text shows the option in any of its spellings (`-k 10` counts for `--k`)."""
    return any(re.search(r"(?<![\w-])" + re.escape(s) + r"(?![\w-])", text) for s in spellings)


@pytest.mark.parametrize("path", _leaves(), ids=" ".join)
def test_every_command_is_documented(path: tuple[str, ...]) -> None:
    assert any(_names(path, section) for section in _sections()), (
        f"`goldmine {' '.join(path)}` is named nowhere in README.md or docs/"
    )


@pytest.mark.parametrize("path", _leaves(), ids=" ".join)
def test_every_option_is_documented_beside_its_command(path: tuple[str, ...]) -> None:
    command = dict(_tree())[path]
    near = [section for section in _sections() if _names(path, section)]
    missing = [
        _long(spellings)
        for spellings in _options(command)
        if _long(spellings) not in SHARED and not any(_has_option(spellings, s) for s in near)
    ]
    assert not missing, (
        f"goldmine {' '.join(path)}: {', '.join(missing)} not described in any section of the "
        "docs that names the command (goldmine … --help shows what they do)"
    )


def test_shared_and_root_options_are_documented() -> None:
    text = "\n".join(_sections())
    root = dict(_tree())[()]
    wanted = [(name,) for name in sorted(SHARED)] + _options(root)
    missing = [_long(s) for s in wanted if not _has_option(s, text)]
    assert not missing, f"not in the docs: {', '.join(missing)}"


def test_the_site_builds_strict(tmp_path: Path) -> None:
    """Strict: a warning (a link to a page or anchor that is not there, a missing image, a page
    left out of the nav, an API object mkdocstrings cannot find) fails the build."""
    if subprocess.run([sys.executable, "-m", "mkdocs", "--version"],
                      capture_output=True).returncode != 0:  # fmt: skip
        if os.environ.get("CI") == "true":
            pytest.fail("mkdocs is not installed (pip install -e '.[docs]'; make test does)")
        pytest.skip("mkdocs is not installed: pip install -e '.[docs]' (make test does)")
    site = tmp_path / "site"
    built = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
        cwd=ROOT, capture_output=True, text=True,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},  # Material's banner about its successor
    )  # fmt: skip
    assert built.returncode == 0, built.stderr[-4000:]
    assert (site / "index.html").is_file()
    assert (site / "getting-started" / "index.html").is_file()


def test_readme_links_resolve() -> None:
    """The README is read on the forge, outside the site: its relative links must name files."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    targets = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", readme)
    local = [t for t in targets if not re.match(r"[a-z]+:", t)]
    assert local, "the README links into docs/"
    broken = [t for t in local if not (ROOT / t).exists()]
    assert not broken, f"README.md links to files that are not there: {broken}"
