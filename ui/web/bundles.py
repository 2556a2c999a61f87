"""What the page loads before it can draw (issue 21: a 10 000-request waterfall within 2 s).

- **plotly.js, partial.**  Dash's renderer has dcc.Graph load plotly.js from one fixed path
  (``PLOTLY_PATH``, the plotly package's full 4.8 MB bundle: every trace type, maps, WebGL).
  The web app draws only ``bar`` and ``scatter`` traces (with shapes and annotations), so at
  that path it serves plotly's own *basic* build (``vendor/plotly-basic.min.js``:
  ``plotly.js-basic-dist-min`` from npm, traces bar, pie and scatter; 1.2 MB), of the same
  plotly.js version as the plotly package's — on any other version, or without the file, the
  full bundle is served as before.  ``BASIC_TRACES`` lists what it can draw; a test checks
  every figure of the web app against it.
- **AG Grid on demand.**  dash-ag-grid's 1.3 MB bundle is taken out of the page's scripts: a
  small stand-in (``AG_GRID_STUB``) takes its namespace and, the first time a grid is drawn
  (a tab with a table opened), loads the real bundle and draws the real grid inside itself.
- **No core-js.**  Dash's page loads babel's polyfill (``@babel/polyfill`` 7: core-js 2 and
  regenerator-runtime) before anything else.  The renderer and dcc need only the
  ``regeneratorRuntime`` global of it (their async functions); core-js's start-up (about a
  hundred modules installed, each testing the browser's own) and its replacements of built-ins
  the browser has (``String.prototype.trim``…) ran on the page's main thread.  At its path
  the page gets that module alone (``regenerator_only``: 7 KB where the bundle is 99 KB).  dash_table's bundle (no
  DataTable in the app: its tables are AG Grid's) is not loaded (``lazy_ag_grid``'s tags).
- **Compressed once.**  flask-compress keeps the compressed bytes of the static bundles
  (``/_dash-component-suites/…``, which never change while the server runs) instead of
  compressing them again for every page.
"""
from __future__ import annotations

import hashlib
import re
from pathlib import Path

PLOTLY_PATH = "_dash-component-suites/plotly/package_data/plotly.min.js"  # (dash-renderer: window._dashPlotlyJSURL)
VENDOR = Path(__file__).resolve().parent / "vendor"
BASIC_BUNDLE = VENDOR / "plotly-basic.min.js"
BASIC_TRACES = frozenset({"bar", "pie", "scatter"})  # the trace modules of plotly.js's basic build
STATIC_PREFIX = "/_dash-component-suites/"


def bundle_version(data: bytes) -> str | None:
    """The plotly.js version in a bundle's banner (``plotly.js (basic - minified) v4.1.1``)."""
    m = re.search(rb"plotly\.js[^\n]{0,40}? v(\d+\.\d+\.\d+)", data[:400])
    return m.group(1).decode() if m else None


def basic_plotly() -> bytes | None:
    """The basic plotly.js bundle when it is there and of the plotly package's plotly.js
    version (``plotly.offline.get_plotlyjs_version``), else None (the full one is served)."""
    try:
        data = BASIC_BUNDLE.read_bytes()
        from plotly.offline import get_plotlyjs_version
    except (OSError, ImportError):
        return None
    return data if bundle_version(data) == get_plotlyjs_version() else None


def install_plotly(server, prefix: str = "/") -> bool:
    """Serve the basic plotly.js at the path the page loads plotly.js from (a ``before_request``
    hook, after the access guard).  False when the full bundle stays."""
    from flask import Response, request

    data = basic_plotly()
    if data is None:
        return False
    path = prefix.rstrip("/") + "/" + PLOTLY_PATH
    etag = hashlib.sha256(data).hexdigest()[:20]

    @server.before_request
    def _plotly_basic():
        if request.path != path:
            return None
        resp = Response(data, mimetype="application/javascript")
        resp.set_etag(etag)
        resp.cache_control.public = True
        resp.cache_control.no_cache = True  # (the path has no fingerprint: asked again, answered 304)
        return resp.make_conditional(request)

    return True


class _StaticCache:
    """flask-compress's cache: the compressed bytes of the static bundles (keys made by
    ``static_key``); nothing else is kept.  Bounded by the bundles the app has."""

    def __init__(self) -> None:
        self._d: dict[str, bytes] = {}

    def get(self, key: str) -> bytes | None:
        return self._d.get(key)

    def set(self, key: str, value: bytes) -> None:
        if not key.endswith(";") and len(self._d) < 200:
            self._d[key] = value


def static_key(request) -> str:
    """A static bundle's cache key (its path and query: the fingerprint), "" for the rest."""
    return request.full_path if request.path.startswith(STATIC_PREFIX) and request.method == "GET" else ""


def compress_config(config) -> None:
    config.setdefault("COMPRESS_CACHE_BACKEND", _StaticCache)
    config.setdefault("COMPRESS_CACHE_KEY", static_key)


# dash-ag-grid's namespace: AgGrid a React component that loads the bundle (once) and then
# draws the real AgGrid inside it; getApi/getApiAsync the real ones' once it is there (the
# page's clientside callbacks already allow for a grid not drawn yet).  The bundle, as it
# runs, sets window.dash_ag_grid: that is caught and kept aside, so the component the renderer
# finds stays this one — were it swapped for the real one, React would mount a second grid in
# place of the first (whose API a callback may hold).
AG_GRID_STUB = """<script>
(function () {
    var src = __SRC__, loading = null, real = null, React = window.React, Lazy = null;
    function load() {
        if (!loading) {
            loading = new Promise(function (ok, fail) {
                var s = document.createElement('script');
                s.src = src; s.async = true;
                s.onload = function () { real ? ok(real) : fail(new Error(src + ' did not define dash_ag_grid')); };
                s.onerror = function () { loading = null; fail(new Error('cannot load ' + src)); };
                document.head.appendChild(s);
            });
        }
        return loading;
    }
    function AgGrid(props) {
        if (!Lazy) { Lazy = React.lazy(function () { return load().then(function (ns) { return {default: ns.AgGrid}; }); }); }
        return React.createElement(React.Suspense, {fallback: React.createElement('div', {className: 'grid-loading'}, 'loading the table…')},
                                   React.createElement(Lazy, props));
    }
    var stub = {
        AgGrid: AgGrid,
        load: load,
        loaded: function () { return !!real; },
        getApi: function (id) { if (!real) { throw new Error('the grid is not drawn yet'); } return real.getApi(id); },
        getApiAsync: function (id) { return load().then(function (ns) { return ns.getApiAsync(id); }); }
    };
    Object.defineProperty(window, 'dash_ag_grid', {configurable: true, enumerable: true,
        get: function () { return stub; }, set: function (v) { if (v && v !== stub) { real = v; } }});
})();
</script>"""

_AG_GRID_TAG = re.compile(r'<script src="(?P<src>[^"]*/_dash-component-suites/dash_ag_grid/dash_ag_grid[^"/]*\.min\.js)"></script>')


def lazy_ag_grid(scripts: str) -> str:
    """The page's script tags with dash-ag-grid's bundle replaced by ``AG_GRID_STUB`` (as
    they were when the tag is not found)."""
    import json

    m = _AG_GRID_TAG.search(scripts)
    if m is None:
        return scripts
    stub = AG_GRID_STUB.replace("__SRC__", json.dumps(m.group("src")).replace("</", "<\\/"))
    return scripts[: m.start()] + stub + scripts[m.end():]


POLYFILL_PATH = re.compile(r"/_dash-component-suites/dash/deps/polyfill@7[^/]*\.min\.js$")
# @babel/polyfill 7's browserify bundle: module 305 is regenerator-runtime (no dependencies; it
# sets the regeneratorRuntime global); the bundle's entry, 306, requires core-js and it
_REGENERATOR = re.compile(rb",305:\[(function\(t,n,r\)\{.*?regeneratorRuntime=.*?\}),\{\}\],306:\[function\(", re.S)


def regenerator_only(data: bytes) -> bytes | None:
    """Of babel's polyfill bundle, its regenerator-runtime module alone as a script (the
    module's function, called as browserify would: it sets ``regeneratorRuntime``), or None
    when the bundle is not the one this was made for (it is then served as it is)."""
    m = _REGENERATOR.search(data)
    if m is None or b"require(" in m.group(1):
        return None
    return (b"/* regenerator-runtime, of @babel/polyfill 7 (MIT; Copyright (c) 2014-present, Facebook, Inc.):"
            b" wirefall.ui.web.bundles.regenerator_only */\n(" + m.group(1) + b")(null, {exports: {}}, {});\n")


def install_polyfill(server) -> bool:
    """Serve ``regenerator_only`` of Dash's polyfill at its path (a ``before_request`` hook,
    after the access guard).  False when the bundle is not the expected one."""
    import dash
    from flask import Response, request

    try:
        data = (Path(dash.__file__).resolve().parent / "deps" / "polyfill@7.12.1.min.js").read_bytes()
    except OSError:
        return False
    small = regenerator_only(data)
    if small is None:
        return False

    @server.before_request
    def _polyfill():
        if request.method != "GET" or not POLYFILL_PATH.search(request.path):
            return None
        resp = Response(small, mimetype="application/javascript")
        resp.cache_control.public = True
        resp.cache_control.max_age = 31536000  # (the path is fingerprinted, as Dash serves it)
        return resp

    return True


_DASH_TABLE_TAG = re.compile(r'<script src="[^"]*/_dash-component-suites/dash/dash_table/bundle[^"/]*\.js"></script>')


def without_dash_table(scripts: str) -> str:
    """The page's script tags without dash_table's bundle (the app has no DataTable)."""
    return _DASH_TABLE_TAG.sub("", scripts)
