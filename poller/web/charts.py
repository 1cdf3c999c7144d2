"""Small bar charts drawn on the server as SVG: no script, no library.

A chart is a row of bars, one a day, the oldest first; each bar has a ``<title>``
(the day and its value, shown on hover) and the chart a sentence for screen readers.
Colours come from the page's stylesheet (``.chart .bar``), so the light and dark
schemes both read; the drawing scales to its box, so it fits a phone's width.
"""

from __future__ import annotations

import datetime as dt
from typing import Callable, Sequence

from markupsafe import Markup

WIDTH, HEIGHT, GAP = 140, 40, 2  # the drawing's own units; the page sizes it


def bars(days: Sequence[dt.date], values: Sequence[float], what: str,
         shown: Callable[[float], str] = lambda v: f"{v:g}", css: str = "") -> Markup:
    """*values*, one a day of *days*, as bars; *what* names them ("turns a day")."""
    top = max(values, default=0) or 1
    step = WIDTH / max(len(values), 1)
    parts = []
    for i, (day, value) in enumerate(zip(days, values)):
        h = 0 if not value else max(1.0, HEIGHT * value / top)
        x = i * step + GAP / 2
        parts.append(Markup('<rect class="bar" x="{:.1f}" y="{:.1f}" width="{:.1f}" height="{:.1f}">'
                            '<title>{}: {}</title></rect>').format(
            x, HEIGHT - h, max(step - GAP, 1), h, day.isoformat(), shown(value)))
    total = sum(values)
    peak = max(range(len(values)), key=lambda i: values[i]) if values and total else None
    label = (f"{what} over the last {len(values)} days: {shown(total)} in all"
             + (f", most on {days[peak].isoformat()} ({shown(values[peak])})"
                if peak is not None else ""))
    return Markup('<svg class="chart {}" viewBox="0 0 {} {}" preserveAspectRatio="none" '
                  'role="img" aria-label="{}"><title>{}</title>'
                  '<line class="base" x1="0" y1="{}" x2="{}" y2="{}"></line>{}</svg>').format(
        css, WIDTH, HEIGHT, label, label, HEIGHT - 0.5, WIDTH, HEIGHT - 0.5,
        Markup("").join(parts))
