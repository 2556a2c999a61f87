"""``wirefall tui -i IFACE``: the TUI over a live capture (``analyzer.live.LiveSession``).

The ordinary streaming pass runs on the growing capture in the loader thread; the packet list grows
as it does while a file loads, and every ``LIVE_EVERY`` seconds the waterfall, connections and
statistics are rebuilt off the UI thread from the growing model and shown, so keys keep answering.
Ctrl+E stops capturing (Wireshark's key), Ctrl+S saves the capture with the secrets of its
connections in a Decryption Secrets Block.
"""
from __future__ import annotations

import os
import sys
import time

from rich.text import Text
from textual import work
from textual.binding import Binding
from textual.timer import Timer
from textual.widgets import Static

from wirefall.analyzer.safetext import printable

from .app import LOAD_SWITCH_INTERVAL, WirefallApp, build_waterfall, stats_text

LIVE_EVERY = 0.25  # seconds between rebuilds of the waterfall and connections while capturing
STATS_EVERY = 2.0  # the statistics (a TCP-analysis pass over the packets) less often


class LiveApp(WirefallApp):
    BINDINGS = [*WirefallApp.BINDINGS,
                Binding("ctrl+e", "stop_capture", "Stop capture"),
                Binding("ctrl+s", "save_capture", "Save")]

    def __init__(self, session, save_to: str | None = None, **kw) -> None:
        super().__init__(session.path, keylogs=session.keylogs, **kw)
        self.session = session
        self.save_to = save_to
        self.sub_title = printable(f"live: {session.capture.iface}" + (f" ({session.capture.bpf})" if session.capture.bpf else ""))
        self._live_timer: Timer | None = None
        self._stats_at = 0.0
        self.live_builds = 0  # rebuilds shown (tests wait on it)

    def on_mount(self) -> None:
        super().on_mount()
        self._live_timer = self.set_interval(LIVE_EVERY, self._live_tick)

    # the loader: the live pass instead of a file's
    @work(thread=True, exclusive=True, group="load")
    def load(self, an=None) -> None:
        from wirefall.analyzer.capture import PacketSource

        t = time.monotonic()

        def started(an) -> None:
            src = PacketSource(self.path)
            self.call_from_thread(self._started, an, src)

        switch = sys.getswitchinterval()
        sys.setswitchinterval(LOAD_SWITCH_INTERVAL)
        try:
            an = self.session.run(on_start=started)
        except Exception as e:  # noqa: BLE001 - a notice, never a crash
            self.call_from_thread(self._load_failed, str(e) or e.__class__.__name__)
            return
        finally:
            sys.setswitchinterval(switch)
        from wirefall.analyzer.detail import _frame_index

        _frame_index(an)
        self.wf, err = build_waterfall(an, self.wf_group, self.wf_sort)
        self.wf_by = {}
        self.stats_text = stats_text(an)
        self.call_from_thread(self._loaded, an, time.monotonic() - t)
        self.call_from_thread(self._capture_ended)

    def _capture_ended(self) -> None:
        if self._live_timer is not None:
            self._live_timer.stop()
        n = self.an.packets if self.an is not None else 0
        self.notify(f"capture stopped: {n:,} packets (Ctrl+S saves them with their keys)", timeout=8)

    # periodic views while capturing -------------------------------------------
    def _live_tick(self) -> None:
        if self.loaded or self.an is None:
            return
        self._live_build()

    @work(thread=True, exclusive=True, group="live")
    def _live_build(self) -> None:
        an = self.an
        if an is None:
            return
        try:
            wf, _err = build_waterfall(an, self.wf_group, self.wf_sort)
        except Exception:  # noqa: BLE001 - the model moved under us: the next tick builds again
            wf = None
        stats = None
        now = time.monotonic()
        if now - self._stats_at >= STATS_EVERY:
            self._stats_at = now
            stats = stats_text(an)
        self.call_from_thread(self._live_show, wf, stats)

    def _live_show(self, wf, stats) -> None:
        if self.loaded:
            return
        if wf is not None:
            self.wf = wf
            self.wf_by = {}
            try:
                self._fill_waterfall(self.wf_keep, keep_view=True)
            except Exception:  # noqa: BLE001
                pass
        try:
            self._fill_connections()
        except Exception:  # noqa: BLE001 - a connection half made: next tick
            pass
        if stats is not None:
            self.stats_text = stats
            self._fill_stats()
        self.live_builds += 1
        self._live_status()

    def _live_status(self) -> None:
        an, s = self.an, self.session
        if an is None:
            return
        idx = an.index
        n = max(min(len(idx.proto), len(idx.conn), len(idx.ts)) - 1, 0)
        dec = sum(1 for c in an.connections if (c.quic or c.tls) is not None and (c.quic or c.tls).decrypted)
        msg = (f"● capturing on {s.capture.iface}: {n:,} packets · {len(an.connections)} connections ({dec} decrypted) · "
               f"{len(an.exchanges)} requests · {len(s.keylog)} secrets · Ctrl+E stops, Ctrl+S saves")
        self.query_one("#status", Static).update(Text(printable(msg)))

    # keys ----------------------------------------------------------------------
    def action_stop_capture(self) -> None:
        if not self.session.stopped:
            self.session.stop()
            self.query_one("#status", Static).update("stopping the capture…")

    def action_save_capture(self) -> None:
        dest = self.save_to or os.path.abspath(time.strftime("wirefall-live-%Y%m%d-%H%M%S.pcapng"))
        self._save(dest)

    @work(thread=True, exclusive=True, group="save")
    def _save(self, dest: str) -> None:
        try:
            self.session.save(dest, self.an)
        except Exception as e:  # noqa: BLE001
            self.call_from_thread(self.notify, printable(f"cannot save: {e}"), severity="error", markup=False)
            return
        self.call_from_thread(self.notify, printable(f"saved {dest} (with the keys of its connections)"), markup=False)
        self.saved = dest

    def on_unmount(self) -> None:
        self.session.close()


def run_live(session, save_to: str | None = None, limits: dict | None = None) -> int:
    app = LiveApp(session, save_to=save_to, limits=limits)
    try:
        session.start()
    except Exception as e:  # noqa: BLE001 - LiveError: the tool's reason and the next step
        print(f"wirefall: {printable(str(e))}", file=sys.stderr)
        session.close()
        return 2
    app.run()
    return 1 if app.load_error else 0
