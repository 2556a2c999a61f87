"""``wirefall web``: the Dash dashboard.

``run(files, keylogs=[...], host="127.0.0.1", port=8050)`` analyses the named captures
in the background (through ``analyzer.cache``), serves the app and, when it stops,
removes the uploads' temporary folder.

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


def create_app(state: WebState):
    from .app import create_app as _create

    return _create(state)


def _limit_from_env(default: int) -> int:
    v = os.environ.get("WIREFALL_UPLOAD_LIMIT_MB")
    try:
        return int(float(v) * 1024 * 1024) if v else default
    except ValueError:
        return default


def run(files: list[str] | None = None, keylogs: list[str] | None = None, host: str = "127.0.0.1", port: int = 8050,
        upload_limit: int | None = None, use_cache: bool = True, debug: bool = False) -> int:
    """Serve the dashboard until interrupted.  Returns a process exit status."""
    from .app import address

    files = list(files or [])
    for f in files + list(keylogs or []):
        if not os.path.isfile(f):
            print(f"wirefall web: {f}: no such file", file=sys.stderr)
            return 2
    limit = upload_limit if upload_limit is not None else _limit_from_env(DEFAULT_UPLOAD_LIMIT)
    state = WebState(upload_limit=limit, use_cache=use_cache)
    for f in files:
        state.add_file(os.path.abspath(f), keylogs=[os.path.abspath(k) for k in keylogs or []], name=f)
    app = create_app(state)
    _ = state.tmpdir  # the private upload folder exists from the start; removed below when the app stops
    if not debug:
        import logging

        logging.getLogger("werkzeug").setLevel(logging.WARNING)  # no line per request
    if threading.current_thread() is threading.main_thread():
        def _term(signum, frame):  # SIGTERM: leave through the finally below
            raise SystemExit(0)

        signal.signal(signal.SIGTERM, _term)
    print(f"wirefall web: serving on {address(host, port)}  (Ctrl-C to stop)", flush=True)
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
