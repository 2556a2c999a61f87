"""``wirefall web -i IFACE``: the web app over a live capture (``analyzer.live.LiveSession``).

A live capture is one more entry of the capture list (``Entry.live`` is its ``WebLive``). Its
pass is the ordinary streaming pass on the growing capture, in a thread of its own; the entry is
``done`` from the pass's first packet on, its ``analysis`` the model the pass appends to, so every
view reads it as it reads a finished capture's. While a live entry is shown:

- the page polls every ``LIVE_POLL_MS`` (``dcc.Interval``); each poll reads the entry's
  ``generation()`` (packets read, whether the pass is waiting for more, whether it ended, how many times it was run again for late secrets) into the
  ``live-version`` store, and each change rebuilds the waterfall, connections, statistics, the
  selected request's detail, the filters' options and the packet list's rows, all in the one
  request after the poll's: no callback they wait for (the filters' values, the selection) follows
  it. The zoom (``xrange``, ``uirevision``), the selected request and the filters' values stay.
- ``Entry.memo`` keys its derived views by that generation (older ones are dropped), so nothing
  built from an earlier state of the model is shown again.
- The pass appends to the model in its thread: a view built meanwhile may meet a half-made object
  (the packet index one column short, a connection's last packet not yet counted). ``steady``
  builds again a few milliseconds later while the pass is between two reads; a view that still
  fails keeps what the page shows and is built again on the next change.
- Stop ends the capture (the pass reads the last packets and the entry becomes a file's); Save
  writes the capture so far as pcapng with the secrets of its connections in a Decryption Secrets
  Block (``LiveSession.save``): to the ``-w`` path on the server, or as a download.
"""
from __future__ import annotations

import os
import threading
import time
from typing import Any

from dash import Input, Output, State, dcc, html, no_update

from wirefall.analyzer.safetext import plural, printable

LIVE_POLL_MS = 250  # the page's poll while a live capture is shown (the views follow at most this often)
IDLE_POLL_MS = 600  # the layout's own poll otherwise (ui.web.app.layout)
RETRIES = 8  # builds of a view that met a half-made object, STEADY_WAIT apart
STEADY_WAIT = 0.03


_inside = threading.local()  # a steady() call is under way in this thread


class WebLive:
    """The web app's side of one live capture: its pass in a thread, its status line, Stop, Save."""

    def __init__(self, session, save_to: str | None = None):
        self.session = session
        self.save_to = save_to
        self.entry: Any = None
        self.ended = False  # the pass returned (the capture stopped and its last packets are read)
        self.thread: threading.Thread | None = None
        self.saved: str | None = None
        self._saves = 0
        self._save_lock = threading.Lock()
        self.rebuilds = 0  # views built again because the pass changed the model under them (tests, diagnosis)
        self.last_rebuild = ""

    # ------------------------------------------------------------------ the pass

    def start(self, entry) -> None:
        self.entry = entry
        if self.session.started is None:
            self.session.start()  # LiveError: the capture tool's reason
        self.thread = threading.Thread(target=self._run, name=f"wirefall-live-{entry.id}", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        e = self.entry
        t = time.monotonic()

        def started(an) -> None:
            e.analysis = an
            e.status = "done"  # the views read the growing model from now on

        try:
            # (a secret that reaches the key log after its connection's handshake: the pass runs
            # again from the start, as in the TUI; ``started`` gets each new model)
            an = self.session.run(on_start=started, follow_late=True)
        except Exception as ex:  # noqa: BLE001 - a message in the page, never a dead thread
            from .state import _error_text

            e.error = _error_text(ex, e)
            e.status = "error"
            self.ended = True
            return
        e.analysis = an
        e.packets = an.packets
        e.seconds = time.monotonic() - t
        e.status = "done"
        self.ended = True

    @property
    def running(self) -> bool:
        return not self.ended

    def stable(self) -> bool:
        """The model is whole: the pass is waiting for more bytes, or has ended."""
        return self.ended or self.session.up_to_date

    def generation(self) -> tuple:
        """What the views are built from: changes whenever the model may have."""
        an = self.entry.analysis if self.entry is not None else None
        # (reruns: a pass run again for a late secret is a new model, whatever its packet count)
        return (an.packets if an is not None else -1, self.stable(), self.ended, getattr(self.session, "reruns", 0))

    def packets(self) -> int:
        """Packets whose index row is complete (all of them once the model is whole)."""
        an = self.entry.analysis if self.entry is not None else None
        if an is None:
            return 0
        idx = an.index
        if self.stable():
            return len(idx)
        return min(len(idx.ts), len(idx.offset), len(idx.caplen), len(idx.origlen), len(idx.linktype),
                   len(idx.interface), len(idx.conn), len(idx.proto))

    def steady(self, make):
        """``make()``, built again while it meets a model the pass is changing (the outermost
        call retries: a view made of memoised parts is built again whole)."""
        if getattr(_inside, "steady", False):
            return make()
        _inside.steady = True
        try:
            for i in range(RETRIES):
                try:
                    return make()
                except Exception as ex:
                    self.rebuilds += 1
                    self.last_rebuild = f"{ex.__class__.__name__}: {ex}"
                    if self.stable() or i == RETRIES - 1:
                        raise
                    time.sleep(STEADY_WAIT)
            raise AssertionError("unreachable")
        finally:
            _inside.steady = False

    # ------------------------------------------------------------------ what the page shows

    def where(self) -> str:
        c = self.session.capture
        return printable(f"{c.iface}" + (f" ({c.bpf})" if c.bpf else ""))

    def status_text(self) -> str:
        e, s = self.entry, self.session
        an = e.analysis
        if e.status == "error":
            return f"live capture on {self.where()}: {e.error}"
        if an is None:
            return f"● starting the capture on {self.where()}…"
        try:
            mark = getattr(s, "mark_waiting", None)  # (a connection whose secret has not come yet: "no key yet", not "no key")
            if mark is not None:
                mark(an)
            conns = list(an.connections)
            dec = sum(1 for c in conns if (c.quic or c.tls) is not None and (c.quic or c.tls).decrypted)
            what = (f"{self.packets():,} packets · {plural(len(conns), 'connection')} ({dec} decrypted) · {plural(len(an.exchanges), 'request')} · "
                    f"{plural(len(s.keylog), 'secret')}" + (f" · read again {n}× for late keys" if (n := getattr(s, "reruns", 0)) else ""))
        except Exception:  # noqa: BLE001 - a connection half made: its count next time
            what = f"{self.packets():,} packets"
        saved = f" · saved {self.saved}" if self.saved else ""
        if self.running and not s.stopped:
            return f"● capturing on {self.where()}: {what} · Stop ends it, Save keeps it with its keys{saved}"
        if self.running:
            return f"stopping the capture on {self.where()}: {what}"
        return f"live capture on {self.where()} stopped: {what} · Save keeps it with its keys{saved}"

    def label_mark(self) -> str:
        return " (capturing…)" if self.running else " (stopped)"

    # ------------------------------------------------------------------ Stop, Save

    def stop(self) -> None:
        if not self.session.stopped:
            self.session.stop()

    def save(self, dest: str | None = None) -> str:
        """The capture so far (a packet being written is left out) with its connections' keys."""
        with self._save_lock:
            if dest is None:
                self._saves += 1
                d = self.session.own_dir or os.path.dirname(os.path.abspath(self.session.path))
                dest = os.path.join(d, f"saved-{self._saves}.pcapng")
            an = self.entry.analysis if self.entry is not None else None
            out = self.steady(lambda: self.session.save(dest, an))
            return out

    def download_name(self) -> str:
        iface = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in self.session.capture.iface)[:40] or "live"
        return time.strftime(f"wirefall-live-{iface}-%Y%m%d-%H%M%S.pcapng")

    def close(self) -> None:
        self.session.close()
        if self.thread is not None:
            self.thread.join(10)


def add_live(state, session, save_to: str | None = None, name: str | None = None):
    """A live capture as an entry of ``state`` (``WebState``), its capture started (``LiveError``
    if it cannot) and its pass running."""
    live = WebLive(session, save_to=save_to)
    c = session.capture
    e = state.add_entry(name=name or f"live: {c.iface}" + (f" ({c.bpf})" if c.bpf else ""), path=session.path,
                        keylogs=list(session.keylogs), origin="live", live=live)
    try:
        live.start(e)
    except Exception:
        state.entries.pop(e.id, None)
        session.close()
        raise
    return e


def transient(e) -> bool:
    """A live entry whose model the pass is changing now (a failed view: keep the last one)."""
    lv = getattr(e, "live", None)
    return lv is not None and not lv.stable()


def steady(e, make):
    lv = getattr(e, "live", None)
    return make() if lv is None else lv.steady(make)


def version(e) -> str:
    """The suffix of the page's ``version`` for entry ``e``: changes when its capture ends (its
    growth is ``live-version``'s, which no callback upstream of the waterfall follows)."""
    lv = getattr(e, "live", None)
    if lv is None:
        return ""
    return ":capturing" if lv.running else ":stopped"


def live_version(e) -> str | None:
    lv = getattr(e, "live", None)
    if lv is None:
        return None
    n, whole, ended, reruns = lv.generation()
    return f"{e.id}:{n}:{int(whole)}:{int(ended)}" + (f":r{reruns}" if reruns else "")


# ---------------------------------------------------------------------- page


def controls():
    """Stop and Save in the header, shown while a live capture is."""
    return [
        html.Span([
            html.Button("■ Stop", id="btn-live-stop", title="stop capturing (the packets so far stay)"),
            html.Button("Save", id="btn-live-save", title="save the capture as pcapng with the keys of its connections"),
            html.Span(id="live-msg", className="status"),
        ], id="live-bar", style={"display": "none"}),
        dcc.Store(id="live-state"), dcc.Store(id="live-refresh"), dcc.Store(id="live-version"),
    ]


def cb_live_state(state, cid, version_):
    """The poll's interval (fast while a live capture is shown), Stop/Save shown and enabled,
    and ``live-state`` (the packet list refreshes its rows when it changes)."""
    e = state.get(cid)
    lv = getattr(e, "live", None) if e is not None else None
    if lv is None:
        return IDLE_POLL_MS, {"display": "none"}, True, True, None
    data = {"capture": cid, "running": lv.running}
    return (LIVE_POLL_MS if lv.running else IDLE_POLL_MS, {"display": "inline-flex", "gap": "8px", "alignItems": "center"},
            lv.session.stopped, e.analysis is None, data)


def cb_live_version(state, _n, cid, old):
    """Each poll: the live capture's generation, when it changed.  The views follow it directly
    (one request after the poll's): the waterfall, connections, statistics, the selected
    request's detail, the filters' options and the packet list's rows."""
    e = state.get(cid)
    v = live_version(e) if e is not None else None
    return v if v is not None and v != old else no_update


def cb_live_detail(state, _v, cid, selected):
    """The selected request's detail as the live capture grows (its response arriving)."""
    from . import views
    from .app import selected_for

    e = state.get(cid)
    sel = selected_for(selected, cid)
    if e is None or e.live is None or e.status != "done" or sel is None:
        return no_update
    try:
        return steady(e, lambda: views.request_detail(e, sel))
    except Exception:  # noqa: BLE001 - the detail shown stays; cb_select says why once the model is whole
        return no_update


def cb_live_options(state, _v, cid):
    """The filters' options as the live capture grows (their values stay)."""
    from . import views

    e = state.get(cid)
    if e is None or e.live is None or e.status != "done":
        return (no_update,) * 4
    try:
        o = steady(e, lambda: views.filter_options(e))
    except Exception:  # noqa: BLE001
        return (no_update,) * 4
    return o["protocol"], o["connection"], o["content"], o["status"]


def cb_live_stop(state, n, cid):
    e = state.get(cid)
    lv = getattr(e, "live", None) if e is not None else None
    if not n or lv is None:
        return no_update
    lv.stop()
    return html.Span("capture stopped", id="live-stopped")


def cb_live_save(state, n, cid):
    """Save: to the server path given with -w, else a download."""
    e = state.get(cid)
    lv = getattr(e, "live", None) if e is not None else None
    if not n or lv is None:
        return no_update, no_update
    try:
        path = lv.save(lv.save_to)
    except Exception as ex:  # noqa: BLE001 - editcap's reason in the page
        return no_update, html.Span(printable(f"cannot save: {ex}"), className="error", id="live-saved")
    keys = lv.session.keylog
    if lv.save_to:
        lv.saved = path
        return no_update, html.Span(printable(f"saved {path} on the server (with the keys of its connections)"), id="live-saved")
    size = os.path.getsize(path)
    from .state import fmt_size

    msg = html.Span(printable(f"saved as a download ({fmt_size(size)}; {len(keys)} secrets followed)"), id="live-saved")
    return dcc.send_file(path, filename=lv.download_name()), msg


# the packet list asks again for the rows it holds when the live capture grows (AG Grid keeps
# its scroll position and selection)
REFRESH_JS = """function(v) {
    if (!v) { return window.dash_clientside.no_update; }
    try { window.dash_ag_grid.getApi('packets').refreshInfiniteCache(); } catch (e) { /* the Packets tab is not shown */ }
    return v;
}"""


def register(app, state) -> None:
    from .app import _named

    S = state
    app.callback(Output("poll", "interval"), Output("live-bar", "style"), Output("btn-live-stop", "disabled"),
                 Output("btn-live-save", "disabled"), Output("live-state", "data"),
                 Input("capture", "value"), Input("version", "data"))(
        _named("cb_live_state", lambda cid, v: cb_live_state(S, cid, v)))
    app.callback(Output("live-msg", "children"), Input("btn-live-stop", "n_clicks"), State("capture", "value"),
                 prevent_initial_call=True)(_named("cb_live_stop", lambda n, cid: cb_live_stop(S, n, cid)))
    app.callback(Output("download", "data", allow_duplicate=True), Output("live-msg", "children", allow_duplicate=True),
                 Input("btn-live-save", "n_clicks"), State("capture", "value"), prevent_initial_call=True)(
        _named("cb_live_save", lambda n, cid: cb_live_save(S, n, cid)))
    # (cb_live_version answers in the poll's own request: ui.web.app.cb_poll_tick)
    app.callback(Output("request-detail", "children", allow_duplicate=True), Input("live-version", "data"), State("capture", "value"),
                 State("selected", "data"), prevent_initial_call=True)(
        _named("cb_live_detail", lambda v, cid, sel: cb_live_detail(S, v, cid, sel)))
    app.callback(*[Output(f"f-{k}", "options", allow_duplicate=True) for k in ("protocol", "connection", "content", "status")],
                 Input("live-version", "data"), State("capture", "value"), prevent_initial_call=True)(
        _named("cb_live_options", lambda v, cid: cb_live_options(S, v, cid)))
    app.clientside_callback(REFRESH_JS, Output("live-refresh", "data"), Input("live-version", "data"), prevent_initial_call=True)
