"""Benchmark of the TUI on a large capture: time to the first painted screen and time per key.

    .venv/bin/python scripts/tui/bench_tui.py [CAPTURE] [--packets N] [--keylog K]

Without CAPTURE it builds one of N packets (default 1,000,000) in /tmp by repeating the
packets of ../shared/captures/pageload-amazon/amazon1.cap.gz with shifted timestamps (the
repetitions look like retransmissions to TCP; what is measured here is the list, not the
dissection).  Analysis time is reported separately: the TUI shows a progress bar while it
runs.  Targets (issue 8): first screen <= 1 s after the analysis, each key <= 100 ms.
``--loading``: the TUI loads the capture itself; time to the first rows and keys while loading.
``--cached``: the TUI reopens the capture from the analysis cache (``--cache``; a first run
stores it through the TUI's own load, as a person does): time to the first rows (drawn from the
packet index, Info pending), to the whole first screen (Info, colours, detail: the frames unpacked
by the loader meanwhile) with the longest the UI thread was away in between, and until the
waterfall and statistics are ready (built after the first screen from ``app.DEFER_VIEWS_PACKETS``
packets).
``--terminal [N]``: as a person opens it: ``wirefall tui CAPTURE --cache`` launched N times
(default 5) in a tmux terminal of 200 × 60, timed from the launch (the interpreter's start
and imports included) to the first packet row on the screen (tmux's ``capture-pane``, polled
every 10 ms), to that row with its Info (not ``widgets.INFO_PENDING``), and the CPU the TUI had
used by its first row (``/proc``: what a loaded machine stretches, not what it costs). The first
launch of a capture not yet in the cache stores it and is left out.  It runs the tree the script
is in (``PYTHONPATH``): a copy of the tree can be measured while the work tree changes.
With ``--cold``: ``wirefall tui CAPTURE`` without ``--cache`` (the capture read from its start,
rows shown as they are read).  Each line says the load average (``os.getloadavg``) at its start;
the best of the runs is the figure to compare (a 2-core machine's other work only adds).
"""
from __future__ import annotations

import argparse
import asyncio
import gzip
import os
import struct
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))


def build_capture(out: str, n: int) -> None:
    src = ROOT.parent / "shared" / "captures" / "pageload-amazon" / "amazon1.cap.gz"
    data = gzip.open(src).read()
    e = "<" if data[:4] in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1") else ">"
    pkts = []
    p = 24
    while p + 16 <= len(data):
        sec, usec, cap, orig = struct.unpack_from(e + "IIII", data, p)
        pkts.append((sec, usec, cap, orig, data[p + 16 : p + 16 + cap]))
        p += 16 + cap
    span = pkts[-1][0] - pkts[0][0] + 1
    with open(out, "wb") as f:
        f.write(data[:24])
        i = 0
        rep = 0
        while i < n:
            for sec, usec, cap, orig, body in pkts:
                if i >= n:
                    break
                f.write(struct.pack(e + "IIII", sec + rep * span, usec, cap, orig) + body)
                i += 1
            rep += 1


async def bench(path: str, keylogs: list[str]) -> None:
    from wirefall.analyzer.pipeline import analyze
    from wirefall.ui.tui.app import WirefallApp
    from wirefall.ui.tui.widgets import PacketList, WaterfallView

    t = time.perf_counter()
    an = analyze(path, keylogs)
    print(f"analysis: {an.packets:,} packets, {len(an.connections):,} connections, {len(an.frames):,} frames in {time.perf_counter() - t:.2f} s")
    # as the app's loading worker does (WirefallApp.load): the derived views — frame index,
    # waterfall, statistics — and gc.freeze() off the UI thread, before the UI shows them
    import gc

    from wirefall.analyzer.detail import _frame_index
    from wirefall.ui.tui.app import build_waterfall, stats_text

    t = time.perf_counter()
    _frame_index(an)
    wf, _err = build_waterfall(an)
    st = stats_text(an)
    gc.collect()
    gc.freeze()
    print(f"derived views + gc.freeze: {time.perf_counter() - t:.2f} s (in the loading worker)")
    t = time.perf_counter()
    app = WirefallApp(path, keylogs, analysis=an)
    app.wf, app.stats_text = wf, st
    async with app.run_test(size=(200, 60)) as pilot:
        pl = app.query_one(PacketList)
        await pilot.pause()
        first = time.perf_counter() - t
        lines = pl.visible_lines()
        print(f"first screen: {first * 1000:.0f} ms ({len(lines)} rows painted; first: {lines[0][:80] if lines else '-'})")
        worst = {}
        # the work of the first screen without Textual's own start-up: fill every tab from
        # the analysis and paint the visible packet rows
        k = time.perf_counter()
        app._loaded(an, 0.0)
        for y in range(pl.scrollable_content_region.height):
            pl.render_line(y)
        fill = time.perf_counter() - k
        print(f"first screen work (fill tabs + paint rows, without Textual start-up): {fill * 1000:.0f} ms")
        for key, times in (("down", 50), ("pagedown", 20), ("up", 20), ("end", 1), ("home", 1), ("pageup", 5)):
            ms = []
            for _ in range(times):
                k = time.perf_counter()
                await pilot.press(key)
                await pilot.pause()
                ms.append((time.perf_counter() - k) * 1000)
            print(f"pilot key {key:<9} mean {sum(ms) / len(ms):6.1f} ms   worst {max(ms):6.1f} ms   (packet {pl.current_packet})")
        # The pilot's round trip above includes its own idle waits (~150 ms even on a
        # 22-packet capture); the work a key costs is: move the cursor, paint every visible
        # line (new lines are rendered from the file), decode the detail tree and bytes.
        h = pl.scrollable_content_region.height
        for name, step in (("down", 1), ("pagedown", h), ("end", pl.count), ("pageup", -h), ("home", -pl.count)):
            ms = []
            for _ in range(20 if abs(step) < pl.count else 1):
                k = time.perf_counter()
                pl.move_to(pl.cursor + step, notify=False)
                for y in range(h):
                    pl.render_line(y)
                app.show_packet(pl.current_packet)
                ms.append((time.perf_counter() - k) * 1000)
            worst[name] = max(ms)
            print(f"work of {name:<9} mean {sum(ms) / len(ms):6.2f} ms   worst {max(ms):6.2f} ms   (packet {pl.current_packet})")
        k = time.perf_counter()
        await pilot.press("2")
        await pilot.pause()
        wv = app.query_one(WaterfallView)
        print(f"waterfall tab: {(time.perf_counter() - k) * 1000:.1f} ms ({wv.count:,} rows)")
        for key in ("plus", "plus", "right", "minus"):
            k = time.perf_counter()
            await pilot.press(key)
            await pilot.pause()
            print(f"waterfall key {key:<6} {(time.perf_counter() - k) * 1000:6.1f} ms")
        ok = fill <= 1.0 and all(v <= 100 for k, v in worst.items() if k in ("down", "pagedown", "end", "pageup", "home"))
        print("targets met" if ok else "targets NOT met")


async def bench_loading(path: str, keylogs: list[str]) -> None:
    """The TUI loading the capture itself: time to the first rows (shown while the analysis
    goes on), and, while it goes on, how long a key takes to move the cursor and show the
    packet's detail tree and bytes (the loader thread competes for the GIL).  The pilot's
    own press() waits for the app to be idle, which it is not while loading (~2 s), so the
    key is pressed in a task and the effect is polled for."""
    from wirefall.ui.tui.app import WirefallApp
    from wirefall.ui.tui.widgets import PacketList

    t = time.perf_counter()
    app = WirefallApp(path, keylogs)
    async with app.run_test(size=(200, 60)) as pilot:
        pl = app.query_one(PacketList)
        while not pl.count and not app.loaded and time.perf_counter() - t < 120:
            await asyncio.sleep(0.005)
        first = time.perf_counter() - t
        print(f"while loading: first rows after {first * 1000:.0f} ms ({pl.count:,} packets shown; loaded={app.loaded})")
        await asyncio.sleep(0.3)
        for key in ("down", "pagedown", "down", "end", "up", "home", "pagedown") * 3:
            if app.loaded:
                break
            k = time.perf_counter()
            c0 = pl.current_packet
            task = asyncio.create_task(pilot.press(key))
            while pl.current_packet == c0 and time.perf_counter() - k < 10:
                await asyncio.sleep(0.001)
            moved = time.perf_counter() - k
            while (getattr(app, "_shown_packet", None) or (0,))[0] != pl.current_packet and time.perf_counter() - k < 10:
                await asyncio.sleep(0.001)
            shown = time.perf_counter() - k
            print(f"while loading: key {key:<9} cursor moved {moved * 1000:6.1f} ms, detail + bytes shown {shown * 1000:6.1f} ms"
                  f"   (packet {pl.current_packet:,} of {pl.count:,} read)")
            await task
        while not app.loaded and not app.load_error:
            await asyncio.sleep(0.2)
        print(f"while loading: loaded in the TUI after {time.perf_counter() - t:.1f} s; cursor kept on packet {pl.current_packet}")


async def bench_cached(path: str, keylogs: list[str]) -> None:
    from wirefall.analyzer.cache import analyze_cached
    from wirefall.ui.tui.app import WirefallApp
    from wirefall.ui.tui.widgets import PacketList

    from wirefall.analyzer.cache import cache_dir, cache_key, SUFFIX

    t = time.perf_counter()
    if not (cache_dir(create=False) / (cache_key(path, keylogs) + SUFFIX)).exists():
        # a miss: stored the way a person stores it, by the TUI's own load (its rows shown as
        # they come, its frames indexed one by one), not by analyze_cached alone
        app = WirefallApp(path, keylogs, use_cache=True)
        async with app.run_test(size=(200, 60)):
            while not app.loaded and not app.load_error and time.perf_counter() - t < 600:
                await asyncio.sleep(0.05)
        print(f"cache miss: analysed and stored by the TUI in {time.perf_counter() - t:.2f} s")
        t = time.perf_counter()
    _an, hit = analyze_cached(path, keylogs)
    print(f"cache {'hit' if hit else 'miss (stored now)'} in {time.perf_counter() - t:.2f} s")
    del _an
    import gc

    gc.collect()
    c0, t = time.process_time(), time.perf_counter()
    app = WirefallApp(path, keylogs, use_cache=True)
    async with app.run_test(size=(200, 60)) as pilot:
        pl = app.query_one(PacketList)
        while not pl.count and not app.load_error and time.perf_counter() - t < 300:
            await asyncio.sleep(0.005)
        print(f"first rows (cache hit, from the packet index: Info pending): {time.perf_counter() - t:.2f} s, "
              f"CPU {time.process_time() - c0:.2f} s (loaded={app.loaded})")
        # keys while the frames are read: the cursor moves at once (the loader holds the GIL only
        # between its steps); End takes the list to the last packet, whose row waits for the TCP
        # analysis to the end (the loader has a child process make it before the rows are drawn)
        if not app.loaded and os.environ.get("BENCH_END_WHILE_PENDING"):
            k = time.perf_counter()
            await pilot.press("end")
            print(f"End while the frames are read: {(time.perf_counter() - k) * 1000:.0f} ms (packet {pl.current_packet:,})")
        # how long the UI thread was away while the loading goes on: the gaps between the ticks
        # of a 10 ms timer of the app's (a key waits as long), from the first rows' paint on
        ticks: list[float] = []
        painted = asyncio.Event()
        app.call_after_refresh(painted.set)
        await painted.wait()
        timer = app.set_interval(0.01, lambda: ticks.append(time.perf_counter()))
        while not app.loaded and not app.load_error and time.perf_counter() - t < 300:
            await asyncio.sleep(0.005)
        await pilot.pause()
        timer.stop()
        worst = max((b - a for a, b in zip(ticks, ticks[1:])), default=0.0)
        lines = pl.visible_lines()
        print(f"first screen whole (Info, colours, detail): {time.perf_counter() - t:.2f} s, CPU {time.process_time() - c0:.2f} s "
              f"({len(lines)} rows painted; views deferred: {app.views_pending}; from the first rows, the UI thread "
              f"away at most {worst * 1000:.0f} ms at a time)")
        # from DEFER_VIEWS_PACKETS packets a child process makes the TCP analysis to the end
        # (app._tcp_in_child): the keys below wait for it, so End is timed with it ready
        an = app.an
        k = time.perf_counter()
        while time.perf_counter() - k < 120:
            ta = an.__dict__.get("_wf_tcp_analysis")
            if ta is not None and ta.packets >= an.packets:
                break
            await asyncio.sleep(0.05)
        print(f"TCP analysis to the last packet ready {time.perf_counter() - k:.2f} s after the first screen")
        for key in ("down", "pagedown", "end", "home"):
            k = time.perf_counter()
            await pilot.press(key)
            await pilot.pause()
            print(f"pilot key {key:<9} {(time.perf_counter() - k) * 1000:6.0f} ms")
        k = time.perf_counter()
        await pilot.press("2")  # the waterfall tab: built now (deferred views), off the UI thread
        while "waterfall" in app.views_pending and time.perf_counter() - k < 300:
            await asyncio.sleep(0.05)
        await pilot.pause()
        print(f"waterfall tab opened → drawn: {time.perf_counter() - k:.2f} s")


def bench_terminal(path: str, keylogs: list[str], runs: int, cold: bool = False) -> None:
    import re
    import shlex
    import shutil
    import subprocess

    if not shutil.which("tmux"):
        sys.exit("--terminal needs tmux")
    exe = Path(sys.executable).with_name("wirefall")
    # (the tree this script is in, not only the installed one: a copy of the tree can be measured
    # while the work tree changes, as other edits to analyzer/ change the cache key)
    cmd = " ".join(shlex.quote(a) for a in ["env", f"PYTHONPATH={ROOT}", str(exe), "tui", path, *([] if cold else ["--cache"]),
                                             *[x for k in keylogs for x in ("--keylog", k)]])
    first_row = re.compile(r"^ +1 +\d")  # (packet 1's row: its number, then its time)
    from wirefall.ui.tui import widgets

    # (a row drawn from the packet index before its frames are read; a tree before that has none)
    pending = getattr(widgets, "INFO_PENDING", "\0")[:12]

    def cpu(pid: int | None) -> float | None:
        """CPU seconds (user + system, all threads) the process has used so far (Linux)."""
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        except (OSError, ValueError, IndexError):
            return None

    def launch(limit: float, until: Path | None = None) -> tuple[float | None, float | None, float | None]:
        """Seconds from the launch to the first row, to the first row with its Info (not
        ``INFO_PENDING``), and the CPU seconds the TUI had used when its first row was seen (what
        a loaded machine stretches, not what it costs); ``until``: then wait (up to ``limit``) for
        that file to exist before the terminal is closed (a miss's cache entry, written by the
        app's loader once the whole capture is read, after its first rows)."""
        session = f"wirefall-bench-{os.getpid()}"
        subprocess.run(["tmux", "kill-session", "-t", session], stderr=subprocess.DEVNULL)
        t = time.perf_counter()
        subprocess.run(["tmux", "new-session", "-d", "-s", session, "-x", "200", "-y", "60", cmd], check=True)
        pid = subprocess.run(["tmux", "display-message", "-p", "-t", session, "#{pane_pid}"], capture_output=True, text=True).stdout.strip()
        first = info = used = None
        try:
            while time.perf_counter() - t < limit:
                if info is None:
                    pane = subprocess.run(["tmux", "capture-pane", "-p", "-t", session], capture_output=True, text=True).stdout
                    row = next((line for line in pane.splitlines() if first_row.match(line)), None)
                    if row is not None:
                        now = time.perf_counter() - t
                        if first is None:
                            first, used = now, cpu(int(pid) if pid.isdigit() else None)
                        if pending not in row:
                            info = now
                if info is not None and (until is None or until.exists()):
                    break
                time.sleep(0.01 if info is None else 0.5)
            return first, info, used
        finally:
            subprocess.run(["tmux", "kill-session", "-t", session], stderr=subprocess.DEVNULL)

    from wirefall.analyzer.cache import SUFFIX, cache_dir, cache_key

    entry = cache_dir(create=False) / (cache_key(path, keylogs) + SUFFIX)
    if not cold and not entry.exists():
        t, _, _ = launch(900, until=entry)
        print(f"first launch (a cache miss, stored now; left out): {'-' if t is None else f'{t:.2f} s'}"
              f" ({'stored' if entry.exists() else 'NOT stored'})")
        time.sleep(2)
    what = "cold" if cold else "cached"
    shown, filled, cpus = [], [], []
    for _ in range(runs):
        load = os.getloadavg()[0]
        t, i, c = launch(60)
        print(f"  {what} launch → first row: {'-' if t is None else f'{t:.2f} s'}, its Info: {'-' if i is None else f'{i:.2f} s'}"
              f", CPU to the first row: {'-' if c is None else f'{c:.2f} s'} (load {load:.2f})", flush=True)
        if t is not None:
            shown.append(t)
        if i is not None:
            filled.append(i)
        if c is not None:
            cpus.append(c)
        time.sleep(1)  # (the previous launch's process ends)

    def runs_text(ts: list[float]) -> str:
        return (", ".join(f"{t:.2f}" for t in ts) + f" s (best {min(ts):.2f} s, median {sorted(ts)[len(ts) // 2]:.2f} s)") if ts else "-"

    print(f"{what}: launch → first packet row on the screen, {len(shown)} of {runs} runs: {runs_text(shown)}")
    print(f"{what}: launch → first row with its Info, {len(filled)} of {runs} runs: {runs_text(filled)}")
    print(f"{what}: CPU used by the TUI up to its first row, {len(cpus)} of {runs} runs: {runs_text(cpus)}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("capture", nargs="?")
    ap.add_argument("--packets", type=int, default=1_000_000)
    ap.add_argument("--keylog", action="append", default=[])
    ap.add_argument("--loading", action="store_true", help="measure the TUI while it loads the capture (rows while loading)")
    ap.add_argument("--cached", action="store_true", help="measure the TUI reopening the capture from the analysis cache")
    ap.add_argument("--terminal", type=int, nargs="?", const=5, metavar="N",
                    help="launch `wirefall tui --cache` N times in tmux: time to the first row on the screen")
    ap.add_argument("--cold", action="store_true", help="with --terminal: launch without --cache")
    a = ap.parse_args()
    path = a.capture
    if path is None:
        path = f"/tmp/wirefall-bench-{a.packets}.pcap"
        if not os.path.exists(path):
            t = time.perf_counter()
            build_capture(path, a.packets)
            print(f"built {path} ({os.path.getsize(path) / 1e6:.0f} MB) in {time.perf_counter() - t:.1f} s")
    if a.terminal:
        bench_terminal(path, a.keylog, a.terminal, a.cold)
    elif a.cached:
        asyncio.run(bench_cached(path, a.keylog))
    elif a.loading:
        asyncio.run(bench_loading(path, a.keylog))
    else:
        asyncio.run(bench(path, a.keylog))


if __name__ == "__main__":
    main()
