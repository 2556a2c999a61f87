"""What the TUI tests share: running an async pilot test without an asyncio pytest plugin,
and waiting (Textual's pilot) for the app to load its capture or for the compare view."""
from __future__ import annotations

import asyncio
import functools


def sync(fn):
    """Run an async test without an asyncio pytest plugin."""
    @functools.wraps(fn)
    def wrapper(*a, **kw):
        return asyncio.run(fn(*a, **kw))

    return wrapper


async def wait_loaded(pilot, app, *, steps: int = 300, settle: float = 0.05, must_load: bool = False) -> None:
    """Pause 50 ms at a time, ``steps`` times at the most, until ``app`` has loaded its capture
    or failed to; with ``must_load`` assert it loaded with no error; then pause ``settle`` s (0: not)."""
    for _ in range(steps):
        await pilot.pause(0.05)
        if app.loaded or app.load_error:
            break
    if must_load:
        assert app.loaded and app.load_error is None, app.load_error
    if settle:
        await pilot.pause(settle)


async def wait_compare(pilot, app, *, steps: int = 300, settle: float = 0.05):
    """As ``wait_loaded`` for the compare view: until the screen is a ``CompareScreen`` that has
    loaded or failed; it is returned (asserted a ``CompareScreen``, not asserted loaded)."""
    from wirefall.ui.tui.compare import CompareScreen

    for _ in range(steps):
        await pilot.pause(0.05)
        scr = app.screen
        if isinstance(scr, CompareScreen) and (scr.loaded or scr.error):
            break
    await pilot.pause(settle)
    assert isinstance(app.screen, CompareScreen)
    return app.screen
