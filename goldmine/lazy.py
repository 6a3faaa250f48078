"""Optional extras, checked before a command that needs one starts its work.

Heavy or optional libraries are imported inside the functions that use them, so a command that
does not need them never pays for them. A command that does need one calls ``require`` first, so
a missing extra is one line saying what to install, not an ImportError half-way through.
"""

from __future__ import annotations

from importlib.util import find_spec

from goldmine.errors import InputError

EXTRAS: dict[str, tuple[str, ...]] = {
    "web": ("starlette", "uvicorn", "jinja2"),
    "models": ("sentence_transformers", "bm25s"),
}


def missing(extra: str) -> list[str]:
    """The modules of an extra that cannot be imported here."""
    return [name for name in EXTRAS[extra] if find_spec(name) is None]


def require(extra: str) -> None:
    """Raise a one-line InputError naming the extra to install when part of it is missing."""
    absent = missing(extra)
    if absent:
        raise InputError(
            f"this needs goldmine[{extra}] ({', '.join(absent)} missing): "
            f"pip install 'goldmine[{extra}]'"
        )
