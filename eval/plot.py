"""Plots for ``eval history`` and ``eval compare``: a self-contained HTML page, or a PNG.

The HTML page holds inline SVG drawn here, a few dozen lines of it: no JavaScript, no CDN, nothing
fetched when the page is opened, so it can be attached to a CI run or a pull request as it is.
Hovering a point or a bar shows its run or query (SVG ``<title>``). PNG goes through matplotlib
when it is installed; it is not a dependency of goldmine, so without it a PNG path is refused up
front with one line saying what to do.
"""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from goldmine.errors import InputError
from goldmine.eval.history import gold_changes, metric_value, run_labels

if TYPE_CHECKING:
    from goldmine.eval.compare import Comparison

WIDTH = 760
GREEN = "#2e7d32"
RED = "#c62828"
GREY = "#757575"
BLUE = "#1f5fa8"
# Per-bar tooltips make a page of 7,000 queries heavy; above this many bars they are left out.
MAX_TOOLTIPS = 2000

_STYLE = (
    "body{font-family:system-ui,sans-serif;margin:24px;color:#222;max-width:900px}"
    "h1{font-size:20px}h2{font-size:16px;margin-top:28px}p{font-size:14px}"
    "svg{display:block;margin:8px 0}text{font-family:system-ui,sans-serif}"
    "table{border-collapse:collapse;font-size:13px}td,th{padding:2px 10px;text-align:right}"
    "td:first-child,th:first-child{text-align:left}"
)


def plot_kind(out: Path) -> str:
    """``html`` or ``png`` from the file name; refuses PNG early when matplotlib is absent."""
    suffix = out.suffix.lower()
    if suffix in (".html", ".htm"):
        return "html"
    if suffix == ".png":
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            raise InputError(
                f"{out}: PNG plots need matplotlib, which is not installed; "
                "write the plot as .html instead, or pip install matplotlib"
            ) from None
        return "png"
    raise InputError(f"{out}: --plot writes .html (self-contained) or .png; got {suffix or 'none'}")


# --- SVG ----------------------------------------------------------------------------------------


def _e(text: object) -> str:
    return html.escape(str(text), quote=True)


def nice_ticks(low: float, high: float, count: int = 5) -> list[float]:
    """Round tick values covering [low, high]: steps of 1, 2 or 5 times a power of ten."""
    if not (math.isfinite(low) and math.isfinite(high)):
        return [0.0, 1.0]
    if high - low < 1e-12:
        low, high = low - 0.5, high + 0.5
    raw = (high - low) / count
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= raw)
    start = math.floor(low / step + 1e-9) * step
    ticks = []
    value = start
    while value <= high + step * 1e-9 or len(ticks) < 2:
        ticks.append(round(value, 12))
        value += step
    if ticks[-1] < high - 1e-12:
        ticks.append(round(value, 12))
    return ticks


@dataclass
class _Frame:
    """The plot area of one chart and the y scale."""

    width: int
    height: int
    left: int
    right: int
    top: int
    bottom: int
    y_low: float
    y_high: float

    @property
    def inner_width(self) -> float:
        return self.width - self.left - self.right

    def y(self, value: float) -> float:
        span = self.y_high - self.y_low or 1.0
        inner = self.height - self.top - self.bottom
        return self.top + inner * (1 - (value - self.y_low) / span)

    def axes(self, ticks: Sequence[float], title: str, subtitle: str = "") -> list[str]:
        parts = [
            f'<svg xmlns="http://www.w3.org/2000/svg" width="{self.width}" '
            f'height="{self.height}" viewBox="0 0 {self.width} {self.height}" role="img">',
            f"<title>{_e(title)}</title>",
            f'<text x="{self.left}" y="18" font-size="14" font-weight="600">{_e(title)}</text>',
        ]
        if subtitle:
            parts.append(
                f'<text x="{self.width - self.right}" y="18" font-size="12" fill="{GREY}" '
                f'text-anchor="end">{_e(subtitle)}</text>'
            )
        for tick in ticks:
            y = self.y(tick)
            parts.append(
                f'<line x1="{self.left}" x2="{self.width - self.right}" y1="{y:.1f}" '
                f'y2="{y:.1f}" stroke="#e0e0e0"/>'
                f'<text x="{self.left - 6}" y="{y + 4:.1f}" font-size="11" fill="{GREY}" '
                f'text-anchor="end">{tick:g}</text>'
            )
        return parts


def line_chart_svg(
    title: str,
    labels: Sequence[str],
    values: Sequence[float | None],
    *,
    tooltips: Sequence[str] | None = None,
    marks: Sequence[tuple[int, str]] = (),
) -> str:
    """A trend: one point per run (``None`` leaves a gap), runs labelled under the axis.

    ``marks`` draws a dashed line before point ``i`` with a note (where the gold set changed).
    """
    present = [v for v in values if v is not None]
    ticks = nice_ticks(min(present, default=0.0), max(present, default=1.0))
    frame = _Frame(WIDTH, 300, 56, 20, 32, 96, ticks[0], ticks[-1])
    n = len(values)
    step = frame.inner_width / n if n else frame.inner_width

    def x(i: int) -> float:
        return frame.left + step * (i + 0.5)

    parts = frame.axes(ticks, title)
    for i, note in marks:
        xm = x(i) - step / 2
        parts.append(
            f'<line x1="{xm:.1f}" x2="{xm:.1f}" y1="{frame.top}" '
            f'y2="{frame.height - frame.bottom}" stroke="{GREY}" stroke-dasharray="4 3"/>'
            f'<text x="{xm + 3:.1f}" y="{frame.top + 10}" font-size="10" fill="{GREY}">'
            f"{_e(note)}</text>"
        )
    segment: list[str] = []
    segments = [segment]
    for i, value in enumerate(values):
        if value is None:
            segment = []
            segments.append(segment)
        else:
            segment.append(f"{x(i):.1f},{frame.y(value):.1f}")
    for seg in segments:
        if len(seg) > 1:
            parts.append(
                f'<polyline points="{" ".join(seg)}" fill="none" stroke="{BLUE}" stroke-width="2"/>'
            )
    for i, value in enumerate(values):
        if value is not None:
            tip = tooltips[i] if tooltips else f"{labels[i]}: {value:.4f}"
            parts.append(
                f'<circle cx="{x(i):.1f}" cy="{frame.y(value):.1f}" r="4" fill="{BLUE}">'
                f"<title>{_e(tip)}</title></circle>"
            )
    base = frame.height - frame.bottom + 14
    for i, label in enumerate(labels):
        short = label if len(label) <= 22 else label[:21] + "…"
        parts.append(
            f'<text x="{x(i):.1f}" y="{base}" font-size="11" text-anchor="end" '
            f'transform="rotate(-40 {x(i):.1f} {base})">{_e(short)}</text>'
        )
    parts.append("</svg>")
    return "".join(parts)


def delta_bars_svg(title: str, items: Sequence[tuple[str, float, str]], subtitle: str = "") -> str:
    """Per-query deltas, sorted from the largest win to the largest loss; ties are not drawn.

    ``items`` are ``(query id, delta, tooltip)``.
    """
    changed = sorted((i for i in items if i[1] != 0), key=lambda i: -i[1])
    top = max((abs(d) for _, d, _ in changed), default=1.0)
    ticks = nice_ticks(-top, top, 4)
    frame = _Frame(WIDTH, 240, 56, 20, 32, 24, ticks[0], ticks[-1])
    parts = frame.axes(ticks, title, subtitle)
    zero = frame.y(0.0)
    width = frame.inner_width / max(len(changed), 1)
    tips = len(changed) <= MAX_TOOLTIPS
    for i, (_, delta, tip) in enumerate(changed):
        x = frame.left + i * width
        y = min(zero, frame.y(delta))
        h = abs(frame.y(delta) - zero)
        colour = GREEN if delta > 0 else RED
        body = f"<title>{_e(tip)}</title>" if tips else ""
        parts.append(
            f'<rect x="{x:.2f}" y="{y:.1f}" width="{max(width - 0.5, 0.4):.2f}" '
            f'height="{max(h, 0.5):.1f}" fill="{colour}">{body}</rect>'
        )
    parts.append(
        f'<line x1="{frame.left}" x2="{frame.width - frame.right}" y1="{zero:.1f}" '
        f'y2="{zero:.1f}" stroke="#424242"/>'
    )
    if not changed:
        parts.append(
            f'<text x="{frame.left + frame.inner_width / 2:.0f}" y="{zero - 8:.0f}" '
            f'font-size="12" fill="{GREY}" text-anchor="middle">no query changed</text>'
        )
    parts.append("</svg>")
    return "".join(parts)


def intervals_svg(title: str, rows: Sequence[tuple[str, float, float, float, str]]) -> str:
    """One row per metric: the delta as a dot, its 95% interval as a bar, the verdict beside."""
    finite = [v for _, d, lo, hi, _ in rows for v in (d, lo, hi) if math.isfinite(v)]
    reach = max((abs(v) for v in finite), default=0.0) or 0.05
    left, right, top, row_h = 120, 150, 40, 26
    width = WIDTH
    height = top + row_h * len(rows) + 30
    inner = width - left - right

    def x(value: float) -> float:
        return left + inner * (value + reach) / (2 * reach)

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img"><title>{_e(title)}</title>',
        f'<text x="{left}" y="18" font-size="14" font-weight="600">{_e(title)}</text>',
        f'<line x1="{x(0):.1f}" x2="{x(0):.1f}" y1="{top - 10}" y2="{height - 24}" '
        f'stroke="{GREY}" stroke-dasharray="4 3"/>',
        f'<text x="{x(0):.1f}" y="{height - 8}" font-size="11" fill="{GREY}" '
        'text-anchor="middle">0</text>',
        f'<text x="{x(-reach):.1f}" y="{height - 8}" font-size="11" fill="{GREY}">'
        f"{-reach:+.3g}</text>",
        f'<text x="{x(reach):.1f}" y="{height - 8}" font-size="11" fill="{GREY}" '
        f'text-anchor="end">{reach:+.3g}</text>',
    ]
    for i, (name, delta, low, high, verdict) in enumerate(rows):
        y = top + row_h * i + row_h / 2
        colour = GREEN if verdict == "better" else RED if verdict == "worse" else GREY
        parts.append(
            f'<text x="{left - 10}" y="{y + 4:.1f}" font-size="12" text-anchor="end">'
            f"{_e(name)}</text>"
        )
        if math.isfinite(low) and math.isfinite(high):
            parts.append(
                f'<line x1="{x(low):.1f}" x2="{x(high):.1f}" y1="{y:.1f}" y2="{y:.1f}" '
                f'stroke="{colour}" stroke-width="3"/>'
            )
        parts.append(
            f'<circle cx="{x(delta):.1f}" cy="{y:.1f}" r="5" fill="{colour}">'
            f"<title>{_e(f'{name}: delta {delta:+.4f}, 95% CI [{low:+.4f}, {high:+.4f}]')}"
            "</title></circle>"
            f'<text x="{width - right + 10}" y="{y + 4:.1f}" font-size="12" fill="{colour}">'
            f"{delta:+.4f} {_e(verdict)}</text>"
        )
    parts.append("</svg>")
    return "".join(parts)


def html_page(title: str, intro: Sequence[str], sections: Sequence[tuple[str, str]]) -> str:
    body = "".join(f"<p>{_e(line)}</p>" for line in intro)
    body += "".join(f"<h2>{_e(head)}</h2>{svg}" for head, svg in sections)
    return (
        f'<!doctype html><html lang="en"><head><meta charset="utf-8"><title>{_e(title)}</title>'
        f"<style>{_STYLE}</style></head><body><h1>{_e(title)}</h1>{body}</body></html>\n"
    )


def _write(out: Path, text: str) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text, encoding="utf-8")


# --- history ------------------------------------------------------------------------------------


def write_history_plot(rows: Sequence[dict[str, str]], metrics: Sequence[str], out: Path) -> None:
    if not rows:
        raise InputError("the history is empty: nothing to plot")
    kind = plot_kind(out)
    labels = run_labels(rows)
    series = {m: [metric_value(r.get(m)) for r in rows] for m in metrics}
    marks = gold_changes(rows)
    if kind == "png":
        _history_png(labels, series, marks, out)
        return
    sections = []
    for metric, values in series.items():
        tips = [
            f"{label}: {metric} {v:.4f} ({r.get('n_queries') or '?'} queries, "
            f"{r.get('time', '')}, gold {(r.get('gold_hash') or '')[:12]})"
            if v is not None
            else f"{label}: no {metric}"
            for label, v, r in zip(labels, values, rows, strict=True)
        ]
        sections.append(
            (metric, line_chart_svg(metric, labels, values, tooltips=tips, marks=marks))
        )
    intro = [f"{len(rows)} runs, oldest first."]
    if marks:
        intro.append(
            "Dashed lines: the gold set changed there; means on either side are over "
            "different queries (compare the runs to pair them on the common ones)."
        )
    _write(out, html_page("Eval history", intro, sections))


def _history_png(
    labels: list[str],
    series: dict[str, list[float | None]],
    marks: list[tuple[int, str]],
    out: Path,
) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(
        len(series), 1, figsize=(9, 2.6 * len(series) + 1), sharex=True, squeeze=False
    )
    xs = list(range(len(labels)))
    for ax, (metric, values) in zip(axes[:, 0], series.items(), strict=True):
        ys = [math.nan if v is None else v for v in values]
        ax.plot(xs, ys, marker="o", color=BLUE)
        ax.set_title(metric, loc="left", fontsize=11)
        ax.grid(axis="y", color="#e0e0e0")
        for i, _note in marks:
            ax.axvline(i - 0.5, color=GREY, linestyle="--", linewidth=1)
    axes[-1, 0].set_xticks(xs, labels, rotation=40, ha="right", fontsize=8)
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=120)
    plt.close(fig)


# --- compare ------------------------------------------------------------------------------------


def write_compare_plot(comparison: Comparison, out: Path) -> None:
    kind = plot_kind(out)
    if kind == "png":
        _compare_png(comparison, out)
        return
    c = comparison
    rows = [(m.metric, m.delta, m.ci[0], m.ci[1], m.verdict) for m in c.metrics]
    sections = [("Delta per metric (B - A), 95% bootstrap interval", intervals_svg("", rows))]
    for m in c.metrics:
        items = [
            (q, d, f"{q}: {d:+.4f}" + (f"  {c.texts.get(q)}" if c.texts.get(q) else ""))
            for q, d in m.deltas.items()
        ]
        subtitle = f"B won {m.wins}, lost {m.losses}, tied {m.ties}"
        sections.append((f"{m.metric}: per-query win / loss", delta_bars_svg("", items, subtitle)))
    intro = [
        f"A: {c.label_a}. B: {c.label_b}. Paired on {c.n_queries} common queries"
        + (
            f" ({len(c.only_a)} only in A and {len(c.only_b)} only in B left out)."
            if c.only_a or c.only_b
            else "."
        ),
        f"Paired randomization test ({c.permutations:,} sign flips, seed {c.seed})"
        + (", p-values Holm-corrected across the metrics." if c.correction else "."),
    ]
    _write(out, html_page(f"Compare: {c.label_b} vs {c.label_a}", intro, sections))


def _compare_png(comparison: Comparison, out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    metrics = comparison.metrics
    fig, axes = plt.subplots(len(metrics) + 1, 1, figsize=(9, 2.4 * (len(metrics) + 1) + 0.5))
    forest = axes[0]
    for i, m in enumerate(metrics):
        colour = GREEN if m.verdict == "better" else RED if m.verdict == "worse" else GREY
        forest.plot([m.ci[0], m.ci[1]], [i, i], color=colour, linewidth=3)
        forest.plot([m.delta], [i], "o", color=colour)
    forest.axvline(0, color=GREY, linestyle="--", linewidth=1)
    forest.set_yticks(range(len(metrics)), [f"{m.metric} ({m.verdict})" for m in metrics])
    forest.invert_yaxis()
    forest.set_title(
        f"{comparison.label_b} vs {comparison.label_a}: delta, 95% CI", loc="left", fontsize=11
    )
    for ax, m in zip(axes[1:], metrics, strict=True):
        deltas = sorted((d for d in m.deltas.values() if d != 0), reverse=True)
        ax.bar(
            range(len(deltas)),
            deltas,
            width=1.0,
            color=[GREEN if d > 0 else RED for d in deltas],
        )
        ax.axhline(0, color="#424242", linewidth=1)
        ax.set_title(
            f"{m.metric}: B won {m.wins}, lost {m.losses}, tied {m.ties}", loc="left", fontsize=10
        )
        ax.set_xticks([])
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=120)
    plt.close(fig)
