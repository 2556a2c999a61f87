"""The TUI on large captures: the packet → frames index built at once (numpy) equals the
frame-by-frame one, and from ``DEFER_VIEWS_PACKETS`` packets the waterfall and statistics
are built when their tab is opened, not before the first screen (scripts/tui/bench_tui.py
--cached measures a 1.2 M-packet capture)."""
from __future__ import annotations

from pathlib import Path

import pytest
from tuifix import sync

from wirefall.analyzer import detail
from wirefall.analyzer.pipeline import analyze

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "sample_captures" / "page"


def _sample(name: str) -> tuple[Path, Path]:
    p = PAGE / f"{name}.pcapng"
    if not p.exists():
        pytest.skip(f"{p} not present")
    return p, PAGE / f"{name}.keys"


def _by_frames(an) -> detail.PacketFrames:
    an.__dict__.pop("_wf_frame_index", None)
    old = detail.BULK_FRAMES
    detail.BULK_FRAMES = 1 << 62  # frame by frame
    try:
        return detail._frame_index(an)
    finally:
        detail.BULK_FRAMES = old
        an.__dict__.pop("_wf_frame_index", None)


@pytest.mark.parametrize("name", ["page-h1", "page-h2", "page-spdy", "page-h3"])
def test_bulk_frame_index_equals_frame_by_frame(name):
    path, keys = _sample(name)
    an = analyze(str(path), [str(keys)])
    ref = _by_frames(an)
    bulk = detail._bulk_index(an.frames, len(an.frames), an.index.conn, len(an.index.conn))
    spans = 0
    for n in range(0, an.packets + 2):
        assert bulk.get(n, ()) == ref.get(n, ()), n
        spans += sum(1 for i in ref.get(n, ()) if an.frames[i].packet != n)
    assert spans or name == "page-h3"  # frames spread over several packets are on each of them
    # frames indexed one by one after a bulk build go on from it (a capture still loading)
    an.__dict__.pop("_wf_frame_index", None)
    old = detail.BULK_FRAMES
    detail.BULK_FRAMES = 1
    try:
        frames = an.frames
        an.frames = frames[: len(frames) // 2]
        detail._frame_index(an)
        an.frames = frames
        grown = detail._frame_index(an)
    finally:
        detail.BULK_FRAMES = old
    assert all(grown.get(n, ()) == ref.get(n, ()) for n in range(0, an.packets + 2))


async def _until(pilot, cond, steps: int = 400) -> None:
    for _ in range(steps):
        await pilot.pause(0.05)
        if cond():
            return
    raise AssertionError("timed out")


@sync
async def test_tui_defers_waterfall_and_statistics_of_a_large_capture(monkeypatch):
    from textual.widgets import Static

    from wirefall.ui.tui import app as tui
    from wirefall.ui.tui.widgets import WaterfallView

    path, keys = _sample("page-h2")
    ref = tui.WirefallApp(str(path), [str(keys)])
    async with ref.run_test(size=(200, 50)) as pilot:
        await _until(pilot, lambda: ref.loaded)
        assert not ref.views_pending
        want_rows = [(r.exchange, r.url) for r in ref.query_one(WaterfallView).rows]
        want_stats = ref.stats_text.plain
    assert len(want_rows) == 13

    monkeypatch.setattr(tui, "DEFER_VIEWS_PACKETS", 1)  # this capture counts as large
    built = []
    real = tui.build_waterfall
    monkeypatch.setattr(tui, "build_waterfall", lambda *a, **kw: built.append(1) or real(*a, **kw))
    app = tui.WirefallApp(str(path), [str(keys)])
    async with app.run_test(size=(200, 50)) as pilot:
        await _until(pilot, lambda: app.loaded)
        assert app.views_pending == {"waterfall", "statistics"}
        assert app.query_one(tui.PacketList).count == app.an.packets  # the packet list is up
        assert not built and app.stats_text is None  # nothing built before a tab asks
        await pilot.press("2")
        await _until(pilot, lambda: "waterfall" not in app.views_pending)
        await pilot.pause(0.1)
        got = [(r.exchange, r.url) for r in app.query_one(WaterfallView).rows]
        assert got == want_rows and len(built) == 1
        assert app.stats_text is None  # the statistics wait for their own tab
        app.query_one(tui.TabbedContent).active = "statistics"
        await _until(pilot, lambda: "statistics" not in app.views_pending)
        await pilot.pause(0.1)
        assert app.stats_text.plain == want_stats
        assert str(app.query_one("#stats", Static).render()).startswith(want_stats.splitlines()[0][:20])


@sync
async def test_tui_has_a_large_capture_s_tcp_analysis_made_by_a_child(monkeypatch):
    """From DEFER_VIEWS_PACKETS packets the TUI has the TCP analysis (colouring, Info prefixes)
    made to the capture's end by a child process once the list is up, so a jump to the end does
    not run it: the analysis installed is the child's (no decoder of this process's pass) and
    equals a pass over the whole capture here."""
    from wirefall.analyzer.capture import PacketSource
    from wirefall.analyzer.tcp_analysis import tcp_analysis
    from wirefall.ui.tui import app as tui

    p = PAGE.parent / "lossy" / "page-spdy.pcapng"
    if not p.exists():
        pytest.skip(f"{p} not present")
    keys = p.with_suffix(".keys")
    from wirefall.analyzer.fields import tcp as tcp_fields

    monkeypatch.setattr(tui, "DEFER_VIEWS_PACKETS", 1)
    # (the colouring's filters run the analysis up to 4096 packets ahead: on this capture of a few
    # hundred the first screen would reach its end here, racing the child — as no capture of
    # DEFER_VIEWS_PACKETS would)
    monkeypatch.setattr(tcp_fields, "AHEAD", 0)
    app = tui.WirefallApp(str(p), [str(keys)])
    async with app.run_test(size=(200, 50)) as pilot:
        await _until(pilot, lambda: app.loaded)
        an = app.an
        assert an.packets > 200  # more than the first screen draws
        ta = lambda: an.__dict__.get("_wf_tcp_analysis")  # noqa: E731
        await _until(pilot, lambda: ta() is not None and ta().packets == an.packets)
        got = ta()
        assert got._decoder is None  # made by the child
        whole = tcp_analysis(analyze(str(p), [str(keys)]), PacketSource(str(p)))
        assert got.flags == whole.flags and got.dupack == whole.dupack and sum(1 for f in got.flags if f) > 20


@sync
async def test_tui_tells_of_a_cache_part_found_damaged_after_the_first_screen(monkeypatch, tmp_path):
    """A large capture reopened from the cache shows its first screen from the entry's summary
    (its request count stored there); its requests are read when the waterfall tab is first
    opened. Found damaged then, the TUI says so — a warning notified, the status line's count
    made again (0 requests, not the stored 13) — and the entry is gone, so the next open
    analyses the capture again (it kept the stored count and told nothing)."""
    from wirefall.analyzer import cache
    from wirefall.ui.tui import app as tui

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    path, keys = _sample("page-h2")
    cache.analyze_cached(str(path), [str(keys)])
    entry = cache.cache_dir(create=False) / (cache.cache_key(str(path), [str(keys)]) + cache.SUFFIX)
    blob = entry.read_bytes()
    _, _, body = cache._parts(blob)
    at = len(blob) - len(body) + bytes(body).index(bytes(cache._body_parts(body)["exchanges"])) + 20
    entry.write_bytes(blob[:at] + bytes(x ^ 0xFF for x in blob[at : at + 9]) + blob[at + 9 :])
    monkeypatch.setattr(tui, "DEFER_VIEWS_PACKETS", 1)  # this capture counts as large
    app = tui.WirefallApp(str(path), [str(keys)], use_cache=True)
    notes: list[str] = []
    real_notify = app.notify
    monkeypatch.setattr(app, "notify", lambda message, *a, **kw: notes.append(str(message)) or real_notify(message, *a, **kw))
    async with app.run_test(size=(200, 50)) as pilot:
        await _until(pilot, lambda: app.loaded)
        status = lambda: str(app.query_one("#status").render())  # noqa: E731
        assert " 13 requests" in status() and not any("unreadable" in n for n in notes)
        await pilot.press("2")
        await _until(pilot, lambda: "waterfall" not in app.views_pending)
        await pilot.pause(0.1)
        assert any("requests unreadable" in n and "the cache entry is removed" in n for n in notes), notes
        assert " 0 requests" in status(), status()
    assert not entry.exists()
    again, hit = cache.analyze_cached(str(path), [str(keys)])
    assert not hit and len(again.exchanges) == 13
