"""``wirefall tui -i IFACE``: the TUI over a live capture (``analyzer.live.LiveSession``).

The ordinary streaming pass runs on the growing capture in the loader thread; the packet list grows
as it does while a file loads, and every ``LIVE_EVERY`` seconds the waterfall, connections and
statistics are rebuilt off the UI thread from the growing model and shown, so keys keep answering.
Ctrl+E stops capturing (Wireshark's key), Ctrl+S saves the capture with the secrets of its
connections in a Decryption Secrets Block.

Quitting (q, Ctrl+Q) never drops what was captured unasked: with ``-w FILE`` it stops the capture,
writes FILE (with its connections' secrets) and says so; without, a capture with packets not saved
asks: save / discard / cancel. SIGTERM and SIGHUP (the terminal closed) stop dumpcap and write the
capture (to ``-w FILE``, else to the name Ctrl+S uses), said on stderr; the temporary capture goes.

The waterfall's time axis follows the capture (re-fitted as rows arrive) unless the view is zoomed
in (then the view stays); a secret the key log gets after its connection's handshake runs the pass
again (``LiveSession.run(follow_late=True)``).
"""
from __future__ import annotations

import os
import signal
import sys
import threading
import time

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.timer import Timer
from textual.widgets import Static

from wirefall.analyzer.safetext import plural, printable

from .app import LOAD_SWITCH_INTERVAL, WirefallApp, build_waterfall, stats_text

LIVE_EVERY = 0.25  # seconds between rebuilds of the waterfall and connections while capturing
STATS_EVERY = 2.0  # the statistics (a TCP-analysis pass over the packets) less often
STOP_WAIT = 30.0  # seconds quitting waits for the pass to read the capture's last packets
EXIT_WAIT = 5.0  # seconds the app has to end after quitting before the process ends itself


def default_save_path() -> str:
    return os.path.abspath(time.strftime("wirefall-live-%Y%m%d-%H%M%S.pcapng"))


class QuitScreen(ModalScreen[str]):
    """Quitting a live capture whose packets are not saved: s save / d discard / Esc cancel."""

    BINDINGS = [Binding("s,y", "choose('save')", "Save and quit"), Binding("d", "choose('discard')", "Discard and quit"),
                Binding("escape,c,n", "choose('cancel')", "Cancel")]
    DEFAULT_CSS = """
    QuitScreen { align: center middle; }
    #quit-box { width: 76; max-width: 100%; height: auto; border: round $warning; background: $surface; padding: 1 2; }
    """

    def __init__(self, packets: int, dest: str) -> None:
        super().__init__()
        self.packets, self.dest = packets, dest

    def compose(self) -> ComposeResult:
        with Vertical(id="quit-box"):
            yield Static(Text(printable(
                f"Quit: the live capture holds {self.packets:,} packets not saved.\n\n"
                f"  s  save them (with their connections' keys) to {self.dest} and quit\n"
                "  d  discard them and quit\n"
                "  Esc  cancel (keep capturing)")), id="quit-text")

    def action_choose(self, choice: str) -> None:
        self.dismiss(choice)


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
        self.saved: str | None = None
        self._saved_packets = -1  # packets in the capture when last saved (after the stop: nothing left unsaved)
        self._quitting = False
        self.exit_message: str | None = None  # said on stderr once the terminal is given back (run_live)
        self._exit_timer: threading.Timer | None = None

    def on_mount(self) -> None:
        super().on_mount()
        # a live capture has no end to be a percentage of: the bar read "0%" throughout (review 24);
        # the status line says what has been captured
        self.query_one("#progress").add_class("-done")
        self._live_timer = self.set_interval(LIVE_EVERY, self._live_tick)
        import asyncio

        loop = asyncio.get_running_loop()
        for s in (signal.SIGTERM, signal.SIGHUP):
            try:
                loop.add_signal_handler(s, self._on_signal, s)
            except (NotImplementedError, RuntimeError, ValueError):  # (not the main thread: a test's app)
                pass
        for note in self.session.keylog_notes():
            self.notify(printable(note), severity="warning", timeout=10, markup=False)

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
            an = self.session.run(on_start=started, follow_late=True)
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
        if not self._quitting:
            self.notify(f"capture stopped: {n:,} packets (Ctrl+S saves them with their keys)", timeout=8)

    def _started(self, an, source) -> None:
        # (again when the pass runs again for secrets that came late: the new model's rows replace the old)
        timer = getattr(self, "_grow_timer", None)
        if timer is not None:
            timer.stop()
        if self.source is not None and self.source is not source and not self.loaded:
            self.source.close()
            self.source = None
        super()._started(an, source)

    def _wf_zoomed(self) -> bool:
        """The user zoomed in on the waterfall (its view narrower than its axis): the view stays."""
        from .widgets import WaterfallView

        try:
            wv = self.query_one(WaterfallView)
        except Exception:  # noqa: BLE001 - (shutting down)
            return False
        span = wv.t1 - wv.t0
        return bool(wv.count) and (wv.v0 > wv.t0 + span * 1e-6 or wv.v1 < wv.t1 - span * 1e-6)

    def _fill_waterfall(self, keep: set[int] | None = None, keep_view: bool = False) -> None:
        # the axis follows the capture (re-fitted to the rows each time) unless zoomed in
        super()._fill_waterfall(keep, keep_view=self._wf_zoomed())

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
            self.session.mark_waiting(an)
        except Exception:  # noqa: BLE001 - the model moved under us: next tick
            pass
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
        msg = (f"● capturing on {s.capture.iface}: {n:,} packets · {plural(len(an.connections), 'connection')} ({dec} decrypted) · "
               f"{plural(len(an.exchanges), 'request')} · {plural(len(s.keylog), 'secret')}"
               + (f" · read again {s.reruns}× for late keys" if s.reruns else "")
               + f" · Ctrl+E stops, Ctrl+S saves{', q writes ' + self.save_to if self.save_to else ''}")
        self.query_one("#status", Static).update(Text(printable(msg)))

    # keys ----------------------------------------------------------------------
    def action_stop_capture(self) -> None:
        if not self.session.stopped:
            self.session.stop()
            self.query_one("#status", Static).update("stopping the capture…")

    def action_save_capture(self) -> None:
        self._save(self.save_to or default_save_path())

    def _captured(self) -> int:
        an = self.an
        if an is None:
            return 0
        if self.loaded:
            return an.packets
        idx = an.index
        return max(min(len(idx.proto), len(idx.conn), len(idx.ts)) - 1, 0)

    @work(thread=True, exclusive=True, group="save")
    def _save(self, dest: str) -> None:
        try:
            stopped = self.session.stopped and self.loaded
            n = self._captured()
            self.session.save(dest, self.an)
        except Exception as e:  # noqa: BLE001
            self.call_from_thread(self.notify, printable(f"cannot save: {e}"), severity="error", markup=False)
            return
        self.call_from_thread(self.notify, printable(f"saved {dest} (with the keys of its connections)"), markup=False)
        self.saved = dest
        self._saved_packets = n if stopped else -1

    # quitting -------------------------------------------------------------------
    async def action_quit(self) -> None:  # q, Ctrl+Q
        if self._quitting or isinstance(self.screen, QuitScreen):
            return
        if self.save_to:
            self._finish(self.save_to, "q")
            return
        n = self._captured()
        if n == 0 or (self.session.stopped and self.loaded and self._saved_packets == n):
            self._quitting = True
            self.exit()
            return
        self.push_screen(QuitScreen(n, default_save_path()), self._quit_chosen)

    def _quit_chosen(self, choice: str | None) -> None:
        if choice == "save":
            self._finish(default_save_path(), "q")
        elif choice == "discard":
            self._quitting = True
            self.exit_message = f"discarded the live capture ({self._captured():,} packets)"
            self.exit()

    def _on_signal(self, signum: int) -> None:
        """SIGTERM / SIGHUP: stop dumpcap and keep what was captured (see the module doc)."""
        if self._quitting:
            return
        name = signal.Signals(signum).name
        dest = self.save_to or (default_save_path() if self._captured() else None)
        if dest is None:
            self._quitting = True
            self.exit_message = f"{name}: the live capture stopped (no packets)"
            self.exit()
            return
        self._finish(dest, name)

    def _finish(self, dest: str, why: str) -> None:
        self._quitting = True
        try:
            self.query_one("#status", Static).update(Text(printable(f"stopping the capture and writing {dest}…")))
        except Exception:  # noqa: BLE001 - (a modal screen on top)
            pass
        threading.Thread(target=self._finish_thread, args=(dest, why), name="live-quit", daemon=True).start()

    def _finish_thread(self, dest: str, why: str) -> None:
        s = self.session
        try:
            s.stop()  # dumpcap stopped (its process group) and waited for
            s.done.wait(STOP_WAIT)  # the pass has read the last packets (their connections' keys go too)
            an = s.analysis if s.analysis is not None else self.an
            s.save(dest, an)
            n = an.packets if an is not None else 0
            msg = f"wrote {dest} ({n:,} packets, {s.saved_secrets} secrets of its connections in its Decryption Secrets Block)"
        except Exception as e:  # noqa: BLE001 - never quit having lost the capture
            if why == "q":
                self._quitting = False
                self.call_from_thread(self.notify, printable(f"cannot write {dest}: {e} — not quitting (Ctrl+S saves elsewhere "
                                                             "with -w; d in the quit dialog discards)"), severity="error", markup=False)
                return
            keep = os.path.join(os.path.dirname(s.own_dir or s.path), "wirefall-live-" + time.strftime("%Y%m%d-%H%M%S") + "-nokeys.pcapng")
            try:
                os.replace(s.path, keep)
            except OSError:
                keep = s.path
            msg = f"{why}: cannot write {dest}: {e}; the capture (without its keys) is in {keep}"
        else:
            if why != "q":
                msg = f"{why}: the live capture stopped; {msg}"
        self.exit_message = msg
        if why != "q":  # the process ends itself should the app not end (SIGHUP: Textual's exit waits on
            # the terminal that is gone); run_live cancels it once the app has ended
            self._exit_timer = threading.Timer(EXIT_WAIT / 2 if why == "SIGHUP" else EXIT_WAIT, self._end_now)
            self._exit_timer.daemon = True
            self._exit_timer.start()
        try:
            self.call_from_thread(self.exit)
        except Exception:  # noqa: BLE001 - (the app already ending)
            pass

    def _end_now(self) -> None:
        """End the process with the capture kept (written, the temporary one removed): after
        SIGHUP, or when the app does not end within EXIT_WAIT of a signal's quitting."""
        self.session.close()
        try:
            if self.exit_message:
                print(f"wirefall: {printable(self.exit_message)}", file=sys.__stderr__, flush=True)
        except (OSError, ValueError):  # (no terminal)
            pass
        os._exit(0)

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
    try:
        app.run()
    finally:
        if app._exit_timer is not None:
            app._exit_timer.cancel()
        session.close()  # (dumpcap stopped and the temporary capture gone however the app ended)
        if app.exit_message:
            try:
                print(f"wirefall: {printable(app.exit_message)}", file=sys.stderr)
            except OSError:  # (the terminal is gone: SIGHUP)
                pass
    return 1 if app.load_error else 0
