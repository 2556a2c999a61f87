"""What a person saw using the TUI on the sample captures (a review): each test failed before
its fix."""
from __future__ import annotations

import re
from pathlib import Path

from tuifix import sync, wait_loaded

from wirefall.ui.tui.app import WirefallApp
from wirefall.ui.tui.widgets import WaterfallView

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "sample_captures" / "page"


def _h2() -> tuple[str, list[str]]:
    return str(PAGE / "page-h2.pcapng"), [str(PAGE / "page-h2.keys")]


def _ticks(axis: str) -> list[str]:
    return re.findall(r"┊(\S+)", axis)


@sync
async def test_waterfall_axis_follows_a_terminal_resize():
    """Opened in 80 columns then widened to 200, the axis kept its 80-column ticks (one
    label, "0ms", over a 140-column bar) until a zoom key redrew it."""
    app = WirefallApp(*_h2())
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_loaded(pilot, app, must_load=True)
        await pilot.press("2")
        await pilot.pause(0.2)
        narrow = _ticks(str(app.query_one("#wf-axis").render()))
        await pilot.resize_terminal(200, 50)
        await pilot.pause(0.3)
        wv = app.query_one(WaterfallView)
        axis = str(app.query_one("#wf-axis").render())
        assert len(axis.rstrip()) > 150, axis
        assert len(_ticks(axis)) > len(narrow) + 2, (narrow, axis)
        assert axis == wv.axis_text()
