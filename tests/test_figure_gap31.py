"""A row's duration text stands apart from its bar (session 31's web review: "25.3 ms (+253 ms
preconnect)" began on its bar's last pixels; WebPageTest leaves a gap): in every figure the text
right of a bar begins ``LABEL_GAP_PX`` after the bar's end, a text left of a bar ends that far
before its start."""
from __future__ import annotations

import pytest
from conftest import SAMPLES

from wirefall.analyzer import waterfall
from wirefall.analyzer.pipeline import analyze
from wirefall.ui import figures


@pytest.mark.parametrize("name", ["page-h2", "page-h3", "bg-mixed"])
def test_duration_text_keeps_a_gap_from_its_bar(name):
    cap = SAMPLES / "page" / f"{name}.pcapng"
    if not cap.exists():
        pytest.skip(f"{cap} not here")
    an = analyze(str(cap), keylogs=[str(cap.with_suffix(".keys"))])
    wf = waterfall.build(an)
    fig = figures.waterfall_figure(wf, hover=False)
    dur = next(t for t in fig.data if t.name == "duration")
    lo, hi = fig.layout.xaxis.range
    ms_per_px = (hi - lo) / (fig.layout.width - fig.layout.margin.l - fig.layout.margin.r)
    # each row's bar, as drawn: the bar traces' extent per row (base .. base + x)
    ends: dict[int, float] = {}
    starts: dict[int, float] = {}
    for t in fig.data:
        if t.type != "bar" or t.orientation != "h" or t.base is None:
            continue
        for y, b, x in zip(t.y, t.base, t.x):
            if b is None or x is None:
                continue
            ends[y] = max(ends.get(y, float("-inf")), b + x)
            starts[y] = min(starts.get(y, float("inf")), b)
    checked = 0
    for x, y, text, pos in zip(dur.x, dur.y, dur.text, dur.textposition):
        if "→" in text or "←" in text or y not in ends:
            continue  # (at the view's edge: no bar end beside it)
        if pos == "middle right":
            assert (x - ends[y]) / ms_per_px >= figures.LABEL_GAP_PX - 0.5, (name, y, text)
        else:
            assert (starts[y] - x) / ms_per_px >= figures.LABEL_GAP_PX - 0.5 or x >= ends[y], (name, y, text)
        checked += 1
    assert checked >= 5
