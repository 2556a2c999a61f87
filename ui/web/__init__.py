"""``wirefall web``: the Dash dashboard.

``run(files, keylogs=[...], host="127.0.0.1", port=8050)`` analyses the named captures
in the background (through ``analyzer.cache``), serves the app and, when it stops,
removes the uploads' temporary folder.  On anything but a loopback address it wants a
random access token (printed in its address at start) and warns that decrypted traffic
is served to the network; on any address it answers only requests whose Host and Origin
name it (``app.install_guard``).

- ``state``: which captures exist (command line, uploads), background analysis, uploads
- ``views``: what each tab shows, as plain functions of an analysed capture
- ``app``: layout and callbacks (``cb_*``, plain functions of the state and inputs)
"""
from __future__ import annotations

import os
import signal
import sys
import threading

from .state import DEFAULT_UPLOAD_LIMIT, WebState

__all__ = ["run", "create_app", "WebState"]


def create_app(state: WebState, host: str = "127.0.0.1", token: str | None = None, port: int | None = None):
    from .app import create_app as _create

    return _create(state, host=host, token=token, port=port)


def _limit_from_env(default: int) -> int:
    v = os.environ.get("WIREFALL_UPLOAD_LIMIT_MB")
    try:
        return int(float(v) * 1024 * 1024) if v else default
    except ValueError:
        return default


def _cannot_listen(host: str, port: int) -> str | None:
    """Why the server could not listen on ``host``:``port`` ("Address already in use"), or None:
    a socket bound as werkzeug binds its own (its address family and address, SO_REUSEADDR),
    then closed at once — so "serving on" is said only of an address that can be served."""
    import socket

    from werkzeug.serving import get_sockaddr, select_address_family

    if host.startswith("unix://"):  # (binding would leave the socket's file behind: werkzeug's own bind says it)
        return None
    try:
        family = select_address_family(host, port)
        with socket.socket(family, socket.SOCK_STREAM) as s:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            s.bind(get_sockaddr(host, port, family))
    except OSError as e:  # (socket.gaierror too: a host that does not resolve)
        return e.strerror or str(e)
    return None


def run(files: list[str] | None = None, keylogs: list[str] | None = None, host: str = "127.0.0.1", port: int = 8050,
        upload_limit: int | None = None, use_cache: bool = True, debug: bool = False, limits: dict | None = None,
        upload_lifetime: float | None = None, token: str | None = None, overlays: list[tuple[str, str]] | None = None,
        live: list | None = None) -> int:
    """Serve the dashboard until interrupted.  Returns a process exit status.  ``limits``
    go to ``analyze``; ``upload_lifetime``: seconds an unused upload is kept; ``token``: the
    access token (made up when ``host`` is not loopback; none on loopback unless given);
    ``overlays``: ``(kind, path)`` of browser logs (--har/--netlog/--qlog) laid over each capture named;
    ``live``: ``(analyzer.live.LiveSession, save path or None)`` of live captures (-i), listed first."""
    import secrets

    from .app import address, is_loopback
    from .state import DEFAULT_UPLOAD_LIFETIME

    files = list(files or [])
    # (a live capture's key logs are followed: the browser may write them later)
    for f in files + (list(keylogs or []) if not live else []) + [p for _k, p in overlays or ()]:
        if not os.path.isfile(f):
            print(f"wirefall web: {f}: no such file", file=sys.stderr)
            return 2
    limit = upload_limit if upload_limit is not None else _limit_from_env(DEFAULT_UPLOAD_LIMIT)
    state = WebState(upload_limit=limit, use_cache=use_cache, limits=limits,
                     upload_lifetime=DEFAULT_UPLOAD_LIFETIME if upload_lifetime is None else upload_lifetime)
    for session, save_to in live or ():
        from wirefall.analyzer.live import LiveError
        from wirefall.analyzer.safetext import printable

        from .live import add_live

        try:
            add_live(state, session, save_to=save_to)
        except LiveError as e:
            print(f"wirefall web: {printable(str(e))}", file=sys.stderr)
            state.close()
            return 2
    for f in files:
        state.add_file(os.path.abspath(f), keylogs=[os.path.abspath(k) for k in keylogs or []], name=f,
                       overlays=[(k, os.path.abspath(p), p) for k, p in overlays or ()])
    local = is_loopback(host)
    if token is None and not local:
        token = secrets.token_urlsafe(32)
    app = create_app(state, host=host, token=token, port=port)
    _ = state.tmpdir  # the private upload folder exists from the start; removed below when the app stops
    if not debug:
        import logging

        logging.getLogger("werkzeug").setLevel(logging.WARNING)  # no line per request
    if threading.current_thread() is threading.main_thread():
        def _term(signum, frame):  # SIGTERM: leave through the finally below
            raise SystemExit(0)

        signal.signal(signal.SIGTERM, _term)
    query = f"?token={token}" if token else ""
    busy = _cannot_listen(host, port)
    if busy is not None:  # (before saying it serves: werkzeug would print its own lines, then exit 1)
        print(f"wirefall web: cannot listen on {address(host, port)}: {busy}", file=sys.stderr, flush=True)
        state.close()
        return 2
    print(f"wirefall web: serving on {address(host, port)}{query}  (Ctrl-C to stop)", flush=True)
    if not local:
        if host.strip("[]") in ("0.0.0.0", "::", ""):
            import socket

            print(f"wirefall web: also {address(socket.gethostname(), port)}{query} and {address('127.0.0.1', port)}{query}", flush=True)
        print(f"wirefall web: warning: listening on {host}, not on loopback: the decrypted traffic of these captures is served "
              f"to the network; only a browser given the token above (in the address, then in a cookie) is answered",
              file=sys.stderr, flush=True)
    try:
        app.run(host=host, port=port, debug=debug, dev_tools_ui=debug, dev_tools_props_check=debug)
    except KeyboardInterrupt:
        pass
    except OSError as e:
        print(f"wirefall web: cannot listen on {address(host, port)}: {e.strerror or e}", file=sys.stderr)
        return 1
    finally:
        state.close()
    return 0
