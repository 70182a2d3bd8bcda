"""The budget chart: inline SVG drawn on the server (no JavaScript, no chart library).

Every number and label is escaped; the SVG is safe to embed as is.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape
from typing import Any

_WIDTH = 720
_HEIGHT = 200
_LEFT = 48
_BOTTOM = 24
_TOP = 16


def _label(value: float) -> str:
    return f"{value:,.0f}"


def _svg(height: int, title: str, kind: str, parts: list[str]) -> str:
    """An SVG image of ``parts`` titled ``title`` (escaped here)."""
    head = (
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {_WIDTH} {height}" '
        f'role="img" aria-label="{escape(title)}" class="{kind}"><title>{escape(title)}</title>'
    )
    return "".join([head, *parts, "</svg>"])


def bar_chart(
    title: str,
    buckets: Sequence[dict[str, Any]],
    limit: int,
    *,
    forecast: float | None = None,
    tick_every: int = 6,
) -> str:
    """An SVG bar chart of request counts against a limit."""
    peak = max([limit, forecast or 0, *(bucket["requests"] for bucket in buckets)], default=1)
    top = peak * 1.1 or 1
    plot_w = _WIDTH - _LEFT - 8
    plot_h = _HEIGHT - _TOP - _BOTTOM
    step = plot_w / max(len(buckets), 1)

    def y(value: float) -> float:
        return _TOP + plot_h * (1 - value / top)

    parts = [
        f'<line x1="{_LEFT}" y1="{_TOP + plot_h}" x2="{_WIDTH - 8}" y2="{_TOP + plot_h}" '
        'class="axis"/>',
        f'<text x="{_LEFT - 4}" y="{y(0):.1f}" class="tick" text-anchor="end">0</text>',
    ]
    for index, bucket in enumerate(buckets):
        count = int(bucket["requests"])
        x = _LEFT + index * step
        height = plot_h * count / top
        over = " over" if count > limit else ""
        parts.append(
            f'<rect x="{x + 1:.1f}" y="{y(count):.1f}" width="{max(step - 2, 1):.1f}" '
            f'height="{height:.1f}" class="bar{over}"><title>{escape(str(bucket["start"]))}: '
            f"{count} request(s)</title></rect>"
        )
        if index % tick_every == 0:
            stamp = str(bucket["start"])[11:16]
            parts.append(f'<text x="{x:.1f}" y="{_HEIGHT - 6}" class="tick">{escape(stamp)}</text>')
    parts += [
        f'<line x1="{_LEFT}" y1="{y(limit):.1f}" x2="{_WIDTH - 8}" y2="{y(limit):.1f}" '
        'class="limit"/>',
        f'<text x="{_LEFT - 4}" y="{y(limit) + 4:.1f}" class="tick limit-label" '
        f'text-anchor="end">{_label(limit)}</text>',
    ]
    if forecast is not None:
        parts.append(
            f'<line x1="{_LEFT}" y1="{y(forecast):.1f}" x2="{_WIDTH - 8}" '
            f'y2="{y(forecast):.1f}" class="forecast"><title>forecast: '
            f"{forecast:,.1f} per bucket</title></line>"
        )
    return _svg(_HEIGHT, title, "chart", parts)


def day_gauge(used: int, limit: int, forecast: float | None = None) -> str:
    """An SVG bar of the rolling day's requests against the daily limit."""
    height, left = 44, _LEFT
    span = _WIDTH - left - 8
    top = max(limit, used, forecast or 0) * 1.05 or 1

    def x(value: float) -> float:
        return left + span * value / top

    over = " over" if used > limit else ""
    title = f"last 24 h: {used:,} of {limit:,} requests"
    parts = [
        f'<rect x="{left}" y="8" width="{span}" height="18" class="track"/>',
        f'<rect x="{left}" y="8" width="{x(used) - left:.1f}" height="18" class="bar{over}"/>',
        f'<line x1="{x(limit):.1f}" y1="2" x2="{x(limit):.1f}" y2="32" class="limit"/>',
        f'<text x="{x(limit):.1f}" y="42" class="tick" text-anchor="end">'
        f"{_label(limit)}/day</text>",
    ]
    if forecast is not None:
        parts.append(
            f'<line x1="{x(forecast):.1f}" y1="4" x2="{x(forecast):.1f}" y2="30" '
            f'class="forecast"><title>forecast: {forecast:,.0f} a day</title></line>'
        )
    return _svg(height, title, "chart gauge", parts)
