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


# plotly.js loaded from the start (issue 21's cold open).  dcc.Graph asks for plotly.js only
# once its own chunk has loaded, after the layout is drawn: 1.2 MB fetched and run on the
# critical path while the page waited for nothing else.  dcc takes ``window.Plotly`` when it
# is there (``Promise.resolve(window.Plotly || <load it>)``), so the page defines it at once
# as a promise of plotly.js (a thenable: dcc waits for it), fetches the file from the page's
# start (``<link rel=preload>``) and runs it just after the renderer has started (its layout
# and callback requests are out): plotly.js's start-up runs while the server answers.  Its
# UMD wrapper assigns ``window.Plotly``: the setter keeps the real one (the getter returns it
# from then on), runs the page's hooks (``wirefallOnPlotly``: the waterfall's resize filter)
# and settles the promise.  A file that fails to load is asked for once more, then the
# promise is rejected (dcc shows the graph's error, as with its own loader).
PLOTLY_EARLY_JS = """<script>
(function () {
    var P = null, hooks = [], ok, no, pending = new Promise(function (a, b) { ok = a; no = b; });
    pending.catch(function () {});
    window.wirefallOnPlotly = function (f) { if (P) { f(P); } else { hooks.push(f); } };
    Object.defineProperty(window, 'Plotly', {configurable: true, enumerable: true,
        get: function () { return P || pending || undefined; },
        set: function (v) { if (!v) { return; } P = v; hooks.splice(0).forEach(function (f) { f(v); }); ok(v); }});
    function load(tries) {
        var s = document.createElement('script');
        s.src = __SRC__; s.async = true;
        s.onerror = function () { if (tries > 0) { load(tries - 1); } else { pending = null; no(new Error('cannot load ' + s.src)); } };
        document.head.appendChild(s);
    }
    window.wirefallLoadPlotly = function () { if (!P && pending && !window.wirefallLoadPlotly.done) { window.wirefallLoadPlotly.done = true; load(1); } };
})();
</script>"""
PLOTLY_START_JS = "<script>window.wirefallLoadPlotly && window.wirefallLoadPlotly();</script>"


def early_plotly(prefix: str = "/") -> tuple[str, str]:
    """(the head's tags: the preload and ``PLOTLY_EARLY_JS``; the tag after the renderer that
    runs plotly.js) for an app under ``prefix``."""
    import html
    import json

    src = prefix.rstrip("/") + "/" + PLOTLY_PATH
    head = f'<link rel="preload" as="script" href="{html.escape(src)}">' + PLOTLY_EARLY_JS.replace(
        "__SRC__", json.dumps(src).replace("</", "<\\/"))
    return head, PLOTLY_START_JS


# dash_table's bundle: Dash registers it whenever dash is imported, and the page uses no
# DataTable (its tables are AG Grid's) — not loaded.
_DASH_TABLE_TAG = re.compile(r'<script src="[^"]*/_dash-component-suites/dash/dash_table/bundle[^"/]*\.js"></script>')


def without_dash_table(scripts: str) -> str:
    return _DASH_TABLE_TAG.sub("", scripts)
