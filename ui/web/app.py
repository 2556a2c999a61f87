"""The Dash app: layout and callbacks.  Each callback is a plain function of
``(state, *inputs)`` (module level, named ``cb_*``) so tests can call it directly;
``create_app`` binds them to the app's ``WebState``.

The server answers only requests whose Host (and Origin, when the browser sends one) names
an address it serves on — loopback names, and the ``--host`` value — so that a page of
another site whose name was rebound to 127.0.0.1 gets 403 (DNS rebinding).  Served on
anything but loopback it also wants the access token printed at start (``?token=…`` once,
then an HttpOnly SameSite=Strict cookie), as Jupyter does.  Uploads are POSTed raw to
``/_wirefall/upload/KIND`` and written to disk as they arrive.
"""
from __future__ import annotations

import ipaddress
import json
import math
import secrets
import socket
from urllib.parse import parse_qs, unquote, urlencode, urlsplit

import dash
from dash import ALL, Input, Output, State, dcc, html, no_update
from dash_ag_grid import AgGrid  # Dash deprecates dash_table.DataTable; AG Grid is its replacement (and virtualises rows)
from dash.development.base_component import Component

from wirefall.analyzer.safetext import html_text, printable

from . import bundles, harpages, overlay, views
from . import expert as expert_view
from . import live as live_view
from .state import UPLOAD_CHUNK, UploadError, WebState, _display_name, fmt_size

CSS = """
body { font-family: system-ui, sans-serif; margin: 0; background: #fafafa; color: #222; }
header { display: flex; flex-wrap: wrap; gap: 12px; align-items: center; padding: 8px 14px; background: #263238; color: #eee; }
header h1 { font-size: 20px; margin: 0 10px 0 0; }
#capture { min-width: 420px; color: #222; }
.status { font-size: 13px; }
.status.error, .error { color: #b71c1c; font-weight: 600; }
.hint { color: #666; font-style: italic; padding: 6px; }
.uploads { display: flex; gap: 10px; align-items: center; padding: 6px 14px; background: #eceff1; flex-wrap: wrap; font-size: 13px; }
.upload { border: 1px dashed #78909c; border-radius: 5px; padding: 6px 12px; cursor: pointer; background: #fff; }
.bar { display: flex; gap: 10px; align-items: center; flex-wrap: wrap; padding: 6px 0; font-size: 13px; }
.bar .Select, .bar .dash-dropdown { min-width: 180px; }
.filter-dd { min-width: 170px; }
#filter-expr { width: 360px; font-family: monospace; }
.tabpane { padding: 6px 14px; }
table.kv td.k { color: #555; padding-right: 12px; white-space: nowrap; vertical-align: top; }
table.headers, table.grid { border-collapse: collapse; font-size: 12px; }
table.headers td, table.grid td, table.grid th, table.headers th { border: 1px solid #ddd; padding: 2px 6px; text-align: left; vertical-align: top; }
table.headers td.v { font-family: monospace; word-break: break-all; }
.cols { display: flex; gap: 18px; flex-wrap: wrap; }
.cols .col { flex: 1 1 420px; min-width: 0; }
.detail { background: #fff; border: 1px solid #ddd; padding: 8px 12px; margin-top: 8px; }
.wf-split { display: flex; gap: 10px; align-items: flex-start; }
.wf-split .wf-main { flex: 1 1 64%; min-width: 0; }
.wf-split .wf-side { flex: 0 0 min(36%, 560px); min-width: 0; position: sticky; top: 0; max-height: 100vh; overflow-y: auto; }
.wf-split .wf-side.none { display: none; }
#detail-close { float: right; position: sticky; top: 4px; z-index: 1; margin: 4px 0 0 6px; }
/* (DETAIL_BESIDE_MIN) narrower, the detail does not share the waterfall's row, which keeps the whole width: it is a sheet
   over the bottom of the window (the waterfall scrolls above it; the page has room below for its last rows) */
@media (max-width: 1099px) {
  .wf-split .wf-side { position: fixed; left: 0; right: 0; bottom: 0; top: auto; max-height: 42vh; z-index: 20; width: auto;
                       background: #fafafa; border-top: 2px solid #78909c; box-shadow: 0 -3px 10px rgba(0, 0, 0, 0.18); padding: 0 14px; }
  .wf-split:has(.wf-side:not(.none)) { padding-bottom: 44vh; }
}
#request-detail { overflow-wrap: anywhere; }  /* long words (URLs, header values, addresses) wrap in the panel: no sideways scroll */
#request-detail .hscroll { overflow-x: auto; overflow-wrap: normal; }  /* a table of columns keeps its words; too wide, it scrolls alone */
#request-detail .hscroll th, #request-detail .hscroll td { padding: 2px 4px; }  /* (the frames' 8 columns fit a 1366 px page's panel) */
#request-detail table.headers td.k { min-width: 10em; }  /* a header's name breaks only when long: the values give way */
.explain { background: #fff8e1; border: 1px solid #ffcc80; color: #5d4037; padding: 6px 10px; margin: 6px 0; font-size: 13px; }
.explain ul { margin: 4px 0 0 0; padding-left: 18px; }
.explain .next { color: #33691e; }
.newcomer { background: #e3f2fd; color: #0d47a1; font-size: 13px; padding: 5px 14px; }
.pktlink { border: none; background: none; color: #1565c0; text-decoration: underline; padding: 0; font: inherit; }
.tree { font-family: monospace; font-size: 12px; background: #fff; border: 1px solid #ddd; padding: 6px; }
.tree-children { margin-left: 16px; }
.hex { font-size: 12px; background: #fff; border: 1px solid #ddd; padding: 6px; }
button { cursor: pointer; }
.packet-grid, .grid-wrap { font-size: 12px; --ag-font-size: 12px; --ag-font-family: monospace; }
.packet-grid .ag-row.pkt-marked { background-color: #000 !important; color: #fff !important; }
.packet-grid .ag-row.pkt-goto { background-color: #ffe082 !important; color: #222 !important; font-weight: bold; }
.packet-grid .ag-row.pkt-ref [col-id="time"] { font-weight: bold; }
"""

# how often, at most, a key held down in the packet list moves the selection (wirefallFocusSelects)
FOCUS_SELECT_MS = 120

# The page's own script: AG Grid row functions (named in the grids' options), Ctrl-M, and the
# waterfall's resize filter (see WATERFALL_RESIZE).
PAGE_JS = """
window.dashAgGridFunctions = Object.assign(window.dashAgGridFunctions || {}, {
    wirefallRowId: function (params) { return String(params.data.no); },
    wirefallHas: function (params, key) { return !!(params.data && params.data[key]); },
    // a colouring rule's colours (analyzer.colouring); marked and gone-to rows have their own (CSS)
    wirefallRowStyle: function (params) {
        var d = params.data || {};
        return {backgroundColor: d.bg || '', color: d.fg || ''};
    },
    // the packet list's selection follows the keyboard's focus (arrows, PgUp/PgDn, Home/End), as Wireshark's: AG
    // Grid's keys move only the focus, the selection (its detail, the address's pkt) stayed on the packet clicked.
    // A key held down moves the focus at each repeat; the selection follows at most every FOCUS_SELECT_MS and
    // ends on the row the focus ends on (each selection asks the server for its packet's detail).  A row whose
    // block has not come yet is selected when it comes, if it still has the focus.
    wirefallFocusSelects: function (params) {
        var api = params.api, i = params.rowIndex, tries = 0, src = params.sourceEvent;
        if (!api || i === null || i === undefined || params.rowPinned) { return; }
        // a click selects by itself (Ctrl-click on the selected row deselects it: here it was selected again)
        if (src && /^(pointer|mouse|touch)/.test(src.type)) { return; }
        clearTimeout(api.wirefallFocusTimer);
        function select() {
            if (api.isDestroyed && api.isDestroyed()) { return; }
            var f = api.getFocusedCell();
            if (!f || f.rowIndex !== i) { return; }  // (the focus moved on: its own call selects)
            var node = api.getDisplayedRowAtIndex(i);
            if (!node || !node.data) { if (++tries < 1200) { api.wirefallFocusTimer = setTimeout(select, 25); } return; }
            if (!node.isSelected()) { api.wirefallFocusAt = Date.now(); node.setSelected(true, true); }
        }
        var wait = (api.wirefallFocusAt || 0) + __FOCUS_SELECT_MS__ - Date.now();
        if (wait > 0) { api.wirefallFocusTimer = setTimeout(select, wait); } else { select(); }
    }
});
// AG Grid draws its own vertical scrollbar beside the rows (.ag-body-vertical-scroll-viewport)
// and keeps it in step: each scroll of the rows' viewport is written to the scrollbar, whose
// scroll event (the echo of that write) comes with the next frame.  AG Grid ignores the echo
// only within 150 ms of the viewport's last scroll; on a busy machine the next frame came later,
// the echo was taken for a person moving the scrollbar and the rows were put back where they
// were a frame before — the browser's smooth scroll (Ctrl-End, the wheel) stopped mid-list or
// was thrown back from the end (tests/test_web_grid.py in CI).  A scrollbar position the
// viewport has already taken is an echo and is not passed on; a person's move of the
// scrollbar (anywhere else) is.
// Sideways the same: the columns' viewport (.ag-center-cols-viewport) is written to the horizontal
// scrollbar, the header and the pinned/sticky rows' viewports (AG Grid's scroll partners), with the
// same 150 ms; a late echo took the control of the scroll and the viewport's own scrolls after it
// were ignored: the header and the scrollbar stopped short of the rows, the column titles a few
// pixels off their columns until the next scroll (tests/test_web_select31.py).
var WIREFALL_H_PARTNERS = ['ag-body-horizontal-scroll-viewport', 'ag-header-viewport', 'ag-floating-top-viewport',
                           'ag-floating-bottom-viewport', 'ag-sticky-top-viewport', 'ag-sticky-bottom-viewport'];
window.addEventListener('scroll', function (ev) {
    var el = ev.target, cl = el && el.classList, root, vp;
    if (!cl) { return; }
    if (cl.contains('ag-body-viewport')) { el.wirefallTop = el.scrollTop; return; }
    if (cl.contains('ag-center-cols-viewport')) { el.wirefallLeft = el.scrollLeft; return; }
    if (cl.contains('ag-body-vertical-scroll-viewport')) {
        root = el.closest('.ag-root');
        vp = root && root.querySelector('.ag-body-viewport');
        if (vp && (Math.abs(el.scrollTop - vp.scrollTop) < 1 || Math.abs(el.scrollTop - vp.wirefallTop) < 1)) {
            ev.stopImmediatePropagation();
        }
    } else if (WIREFALL_H_PARTNERS.some(function (c) { return cl.contains(c); })) {
        root = el.closest('.ag-root-wrapper');
        vp = root && root.querySelector('.ag-center-cols-viewport');
        if (vp && (Math.abs(el.scrollLeft - vp.scrollLeft) < 1 || Math.abs(el.scrollLeft - vp.wirefallLeft) < 1)) {
            ev.stopImmediatePropagation();
        }
    }
}, true);
// a big waterfall's window of rows: PgDn with the window's last row in sight shows the next
// window, PgUp with its first row in sight the previous one (else the page scrolls as usual)
document.addEventListener('keydown', function (ev) {
    if (ev.ctrlKey || ev.altKey || ev.metaKey || ev.shiftKey || (ev.key !== 'PageDown' && ev.key !== 'PageUp')) { return; }
    var pager = document.getElementById('wf-pager'), gd = document.querySelector('#waterfall .js-plotly-plot');
    var t = ev.target && ev.target.tagName;
    if (!pager || pager.offsetParent === null || pager.style.display === 'none' || !gd || !gd._fullLayout || t === 'INPUT' || t === 'TEXTAREA') { return; }
    var ya = gd._fullLayout.yaxis, r = gd.getBoundingClientRect(), rg = ya.range;
    var top = r.top + ya._offset + ya.l2p(Math.min(rg[0], rg[1]) + 0.5), bottom = r.top + ya._offset + ya.l2p(Math.max(rg[0], rg[1]) - 0.5);
    var down = ev.key === 'PageDown';
    if (down ? bottom > window.innerHeight : top < 0) { return; }
    ev.preventDefault();
    document.getElementById(down ? 'wf-next' : 'wf-prev').click();
    if (down) { pager.scrollIntoView({block: 'start'}); }
});
// Up / Down move the waterfall's selection to the row above / below among the rows drawn, and Escape closes the
// request's detail, as in the browsers' DevTools: the same paths as a click on a bar (the graph's clickData, which
// cb_select answers with the detail and the address's sel) and the detail's close button.  Nothing selected: Down
// takes the first row, Up the last.  Not while typing in a box, with the focus in the detail (its own keys scroll
// it), or on another tab; elsewhere the arrows scrolled the page.
document.addEventListener('keydown', function (ev) {
    if (ev.ctrlKey || ev.altKey || ev.metaKey || ev.shiftKey || ['ArrowUp', 'ArrowDown', 'Escape'].indexOf(ev.key) < 0) { return; }
    var t = ev.target, gd = document.querySelector('#waterfall .js-plotly-plot'), side = document.getElementById('detail-side');
    if (!gd || gd.offsetParent === null || !gd._fullData || !window.dash_clientside || !window.dash_clientside.set_props) { return; }
    if (t && t.closest && t.closest('input, textarea, select, [contenteditable="true"], .dash-dropdown, .Select')) { return; }
    if (ev.key === 'Escape') {
        if (side && !side.classList.contains('none')) { ev.preventDefault(); document.getElementById('detail-close').click(); }
        return;
    }
    if (t && t.closest && t.closest('#detail-side')) { return; }
    var ids = {};  // row index -> exchange id, from the traces that carry it (customdata: a bar's, a row's hover point)
    gd._fullData.forEach(function (tr) {
        var cd = tr.customdata, y = tr.y;
        if (!cd || !y || typeof cd[0] !== 'number') { return; }
        for (var i = 0; i < cd.length && i < y.length; i++) {
            var r = Math.round(Number(y[i]));
            if (isFinite(r) && !(r in ids)) { ids[r] = cd[i]; }
        }
    });
    var rows = Object.keys(ids).map(Number).sort(function (a, b) { return a - b; });
    if (!rows.length) { return; }
    var sel = new URLSearchParams(location.search).get('sel'), at = -1;
    for (var k = 0; k < rows.length; k++) { if (String(ids[rows[k]]) === sel) { at = k; break; } }
    var down = ev.key === 'ArrowDown', to = at < 0 ? (down ? 0 : rows.length - 1) : at + (down ? 1 : -1);
    ev.preventDefault();
    if (to < 0 || to >= rows.length) { return; }
    window.dash_clientside.set_props('waterfall', {clickData: {points: [{y: rows[to], customdata: ids[rows[to]]}]}});
    var ya = gd._fullLayout.yaxis, py = gd.getBoundingClientRect().top + ya._offset + ya.l2p(rows[to]);
    if (py < 40 || py > window.innerHeight - 40) { window.scrollBy(0, py - window.innerHeight / 2); }  // (the row kept in sight)
});
// the waterfall's own x-range events, kept for XRANGE_JS: a zoom and the detail panel's resize
// in one task reach its relayoutData as the resize alone; the zoom seen here is taken for it.
// Watched from the graph's first drawing (WATERFALL_RESIZE), not from XRANGE_JS's first call:
// when that first call was the merged event, the zoom was lost (the live test, 1 CI run in 4)
window.wirefallWatchZoom = function (gd) {
    if (!gd || !gd.on || gd._wfZoomSeen) { return; }
    gd._wfZoomSeen = true;
    gd.on('plotly_relayout', function (d) {
        if (d['xaxis.autorange']) { gd._wfZoom = {range: null}; }
        else if ('xaxis.range[0]' in d && 'xaxis.range[1]' in d) {
            gd._wfZoom = {range: [Number(d['xaxis.range[0]']), Number(d['xaxis.range[1]'])]};
        } else if (Array.isArray(d['xaxis.range'])) { gd._wfZoom = {range: d['xaxis.range'].slice(0, 2).map(Number)}; }
    });
};
// a resize that changes the graph's width beside the request detail, or puts the detail under it (BESIDE_JS), or
// changes the graph's own width in steps of 100 px (GRAPH_WIDTH_JS: the row labels' room): the figure laid out again —
// once the resize has paused, and only when a rounded width changed (not at each pixel of a drag)
window.addEventListener('resize', function () {
    clearTimeout(window.wirefallResizeTimer);
    window.wirefallResizeTimer = setTimeout(function () {
        var b = document.getElementById('wf-beside-check');
        if (b && ((window.wirefallWfWidth && window.wirefallWfWidth() !== window.wirefallBeside) ||
                  (window.wirefallGraphWidth && window.wirefallGraphWidth() !== window.wirefallGraphPx))) { b.click(); }
    }, 200);
});
// where the waterfall was last clicked (the detail's sheet on a narrow window then keeps the clicked row in sight: DETAIL_SHOWN_JS)
document.addEventListener('mousedown', function (ev) {
    if (ev.target && ev.target.closest && ev.target.closest('#waterfall')) { window.wirefallClickY = ev.clientY; }
}, true);
// The packet list's focused cell put on row i (the keys go on from it), once the row is drawn.  AG Grid's
// setFocusedCell gives the browser's focus to a cell drawn; a row drawn just after (its block had just come)
// had the grid's focus and not the browser's, and the arrow keys did nothing until a click (an address's
// pkt=47) — or, given to a cell being made (a row of the list before still drawn at that place), it came
// later, taken from wherever the person was then.  A person elsewhere (typing in the filter box, another
// control) keeps the browser's focus: only the grid's focused cell moves (the cell's own focus() left out).
// Else it is given again until the cell has it.
window.wirefallFocusRow = function (api, i, n) {
    var f = api.getFocusedCell(), col = f ? f.column : api.getAllDisplayedColumns()[0], tries = 0, set = false;
    (function go() {
        if (api.isDestroyed && api.isDestroyed()) { return; }
        var g = api.getFocusedCell(), grid = document.getElementById('packets'), a = document.activeElement;
        if (!grid || (set && (!g || g.rowIndex !== i))) { return; }  // (the focus moved on: a key, a click)
        var row = a && a.closest && a.closest('.ag-row');
        if (set && row && grid.contains(row) && row.getAttribute('row-index') === String(i)) { return; }
        if (grid.querySelector('.ag-center-cols-container .ag-row[row-index="' + i + '"][row-id="' + n + '"] [col-id="' +
                               col.getColId() + '"]')) {
            set = true;
            if (a && a !== document.body && !grid.contains(a)) {
                var focus = HTMLElement.prototype.focus;
                HTMLElement.prototype.focus = function () {};
                try { api.setFocusedCell(i, col); } finally { HTMLElement.prototype.focus = focus; }
                return;
            }
            api.setFocusedCell(i, col);
        }
        if (++tries < 1200) { setTimeout(go, 25); }  // (30 s: a busy server answers the rows late)
    })();
};
// A new filter that keeps the selected packet (cb_packet_where's keep: its row in the new list): that row is
// shown, selected and focused once its block has come — called when the keep is known and after each block
// comes (ROWS_JS), as Wireshark keeps the selected packet in view.  The list went to the top and the focused
// cell stayed at the old row number (another packet's).  Nothing is done to a row before its block has come
// (a jump to the row while the new list was loading met AG Grid's error #13, a row node it had dropped).
// The keep names its list (shows, as the refresh's wirefallShows): on a busy page cb_packet_where's answer came
// before the refresh had purged the list before, whose row at that index (another packet) dropped the keep —
// the packet stayed selected by its id, the focus on its old row number (CI, session 34; 1 run in 3 on a loaded
// host, 0 in 25 since).
window.wirefallKeepInView = function (api) {
    var k = api && api.wirefallKeep;
    if (!k || (api.isDestroyed && api.isDestroyed())) { return; }
    if (k.shows !== api.wirefallShows) { return; }  // (the list before is still shown: the new one's refresh comes)
    if (api.getDisplayedRowCount() <= k.index) { return; }  // (the new list's first block, with its count, has not come)
    var node = api.getDisplayedRowAtIndex(k.index);
    if (!node || !node.data) {  // its block is asked for as it is shown, and comes through ROWS_JS
        if (!k.asked) { k.asked = true; api.ensureIndexVisible(k.index, 'middle'); }
        return;
    }
    api.wirefallKeep = null;
    if (node.data.no !== k.n) { return; }  // (another list since)
    api.ensureIndexVisible(k.index, 'middle');
    if (!node.isSelected()) { node.setSelected(true, true); }
    window.wirefallFocusRow(api, k.index, k.n);
};
// Ctrl-Home / Ctrl-End in the packet list select its first / last row as shown (sorted, filtered), as a click
// does (its detail; the focused cell follows), as Wireshark's do: the browser only scrolled the list, the focus and
// the detail stayed on the packet before.  The grid's infinite model holds the row once its block has come.
document.addEventListener('keydown', function (ev) {
    if (!ev.ctrlKey || ev.altKey || ev.shiftKey || ev.metaKey || (ev.key !== 'Home' && ev.key !== 'End')) { return; }
    var t = ev.target;
    if (!t || !t.closest || !t.closest('#packets') || t.tagName === 'INPUT' || t.tagName === 'TEXTAREA') { return; }
    var api;
    try { api = window.dash_ag_grid.getApi('packets'); } catch (e) { return; }
    var n = api.getDisplayedRowCount();
    if (!n) { return; }
    ev.preventDefault();
    ev.stopPropagation();  // (AG Grid's own handling, and the browser's smooth scroll, left out)
    var i = ev.key === 'End' ? n - 1 : 0, f = api.getFocusedCell();
    var col = f ? f.column : api.getAllDisplayedColumns()[0], tries = 0;
    window.wirefallCtrlKey = (window.wirefallCtrlKey || 0) + 1;
    var mine = window.wirefallCtrlKey;  // (a later Ctrl-Home/End, before this row came, wins)
    api.ensureIndexVisible(i);
    (function select() {
        if (mine !== window.wirefallCtrlKey || (api.isDestroyed && api.isDestroyed())) { return; }
        var node = api.getDisplayedRowAtIndex(i);
        if (!node || !node.data) { if (++tries < 1200) { setTimeout(select, 25); } return; }
        api.ensureIndexVisible(i);
        api.setFocusedCell(i, col);
        node.setSelected(true, true);
    })();
}, true);
document.addEventListener('keydown', function (ev) {
    if (ev.ctrlKey && !ev.altKey && !ev.shiftKey && !ev.metaKey && (ev.key === 'm' || ev.key === 'M')) {
        var b = document.getElementById('btn-mark');
        if (b && b.offsetParent !== null) { ev.preventDefault(); b.click(); }
    }
});
""".replace("__FOCUS_SELECT_MS__", str(FOCUS_SELECT_MS))

# dcc.Graph answers every size change of its box (height too) with Plotly.Plots.resize, a
# full redraw.  The waterfall's height is its own (one row per request, set by the figure),
# so the first figure, growing the box from Plotly's default 450 px, was drawn two more times
# within a second after it appeared — a click in between was lost.  Only a new width is a
# resize for it.
WATERFALL_RESIZE = """
(function () {
    function patch() {
        var P = window.Plotly;
        if (!P || !P.Plots || !P.Plots.resize) { return false; }
        if (P.Plots._wirefall) { return true; }
        var resize = P.Plots.resize;
        P.Plots.resize = function (gd) {
            var el = typeof gd === 'string' ? document.getElementById(gd) : gd;
            var L = el && el._fullLayout;
            if (L && el.closest && el.closest('#waterfall') && Math.abs(el.getBoundingClientRect().width - L.width) < 1) {
                return Promise.resolve(el);
            }
            return resize.apply(this, arguments);
        };
        // the waterfall's zoom is watched from its first drawing (wirefallWatchZoom, PAGE_JS)
        ['react', 'newPlot'].forEach(function (name) {
            var f = P[name];
            if (typeof f !== 'function') { return; }
            P[name] = function (gd) {
                var out = f.apply(this, arguments);
                var el = typeof gd === 'string' ? document.getElementById(gd) : gd;
                if (el && el.closest && el.closest('#waterfall')) {
                    Promise.resolve(out).then(function () { window.wirefallWatchZoom(el); }, function () {});
                }
                return out;
            };
        });
        P.Plots._wirefall = true;
        return true;
    }
    if (!patch()) {  // dcc loads plotly.js when a graph first shows: patch it as it arrives
        var P;
        Object.defineProperty(window, 'Plotly', {configurable: true, enumerable: true,
            get: function () { return P; }, set: function (v) { P = v; patch(); }});
    }
})();
"""

# The page fetches plotly.js (1.2 MB) only once the layout has drawn the graph (dcc's Graph
# loads it then), and Dash sends no callback with the graph among its outputs until it has
# loaded: the first figure's request waited for it (400-500 ms of download after the layout,
# under load).  A preload hint fetches it beside the page's other scripts (only fetched: it
# runs when dcc adds its script, as before).  PLOTLY_PRELOAD: the path, set by create_app.
# Likewise dcc's chunks of the Dropdown and the Graph (DCC_PRELOAD: their directory), which the
# first callbacks (the filters' options, the waterfall) wait for the same way.
INDEX = """<!DOCTYPE html>
<html>
  <head>{%metas%}<title>{%title%}</title>{%favicon%}{%css%}<link rel="preload" as="script" href="PLOTLY_PRELOAD"><link rel="preload" as="script" href="DCC_PRELOADasync-dropdown.js"><link rel="preload" as="script" href="DCC_PRELOADasync-graph.js"><style>""" + CSS + """</style></head>
  <body>{%app_entry%}<footer>{%config%}{%scripts%}<script>""" + PAGE_JS + WATERFALL_RESIZE + """</script>{%renderer%}</footer></body>
</html>"""

# The browser checks an upload's size before sending it; a file over the limit is not
# sent and the server answers with a message (the server checks again).  A file within it
# is POSTed as raw bytes to the upload route (not as a data: URL through a callback: the
# server would hold it 4/3 times over, several times), and the callback gets the route's
# answer ({token, name, size} or {error, message}).
UPLOAD_ROUTE = "/_wirefall/upload/"
SIZE_CHECK_JS = """
function(contents, filename, limits, previous) {
    if (!contents) { return window.dash_clientside.no_update; }
    var name = Array.isArray(filename) ? filename[0] : filename;
    var c = Array.isArray(contents) ? contents[0] : contents;
    var i = c.indexOf(',');
    var size = Math.floor((c.length - i - 1) * 3 / 4);
    if (size > limits['__KIND__']) { return {error: 'too_large', name: name, size: size}; }
    var prev = (previous && previous.token) ? previous.token : '';
    return fetch(c).then(function (r) { return r.blob(); }).then(function (blob) {
        return fetch('__ROUTE____KIND__?replaces=' + encodeURIComponent(prev), {
            method: 'POST', body: blob, credentials: 'same-origin',
            headers: {'Content-Type': 'application/octet-stream', 'X-Wirefall-Name': encodeURIComponent(name || 'upload')}});
    }).then(function (r) { return r.json(); })
      .catch(function (e) { return {error: 'failed', name: name, message: 'the upload failed: ' + e}; });
}
""".replace("__ROUTE__", UPLOAD_ROUTE)


# A new file chosen (dcc.Upload's contents): its line says at once that it is being checked, in
# place of the previous file's (without its name: the line naming the file is the one saying it is
# ready, as the tests and a person read it), and ``up-KIND-busy`` holds its name until cb_stage answers (the
# check: SIZE_CHECK_JS's upload, then cb_stage), so that "Analyse upload" pressed meanwhile says
# so (cb_open) rather than "upload a capture first" or analysing the file replaced.
CHECKING_JS = """
function(contents, filename) {
    if (!contents) { return [window.dash_clientside.no_update, window.dash_clientside.no_update]; }
    var name = (Array.isArray(filename) ? filename[0] : filename) || 'upload';
    return ['__LABEL__ chosen: being checked\u2026', name];
}
"""


def _err(ex: Exception, what: str = ""):
    return html.Div(f"{what}{ex.__class__.__name__}: {ex}" if not isinstance(ex, UploadError) else str(ex), className="error")


def explain_view(e, shown: int | None = None, total: int | None = None):
    """Why the capture shows less than it holds (ui.explain over analyzer.completeness), with
    the next step; None when it is complete and something is shown."""
    from wirefall.ui import explain

    if e is None or e.status != "done" or e.analysis is None:
        return None
    an = e.analysis
    lines: list = []
    if shown == 0:
        lines.append(html.Div(printable(views.entry_text(e, explain.empty_text(an, shown, total or 0))), className="empty-why",
                              id="empty-why", style={"fontWeight": 600}))
    # the first reason is the empty view's line already when the capture has no request (with a
    # filter that matches none, that line is the filter's: the first reason was left out)
    rest = views.box_reasons(e, shown or 0, total or 0)
    head = views.box_headline(e, shown or 0, total or 0)
    if rest and head:
        from wirefall.ui.figures_marks import headline_color

        # the page's one statement of the headline (the status line says its word, the figure's
        # subtitle leaves it out), in the subtitle's colour
        lines.append(html.Div(printable(views.entry_text(e, head)), id="headline",
                              style={"color": headline_color(head), "fontWeight": 600}))
        lines.append(html.Ul([html.Li([printable(views.entry_text(e, explain.reason_text(r, False))),
                                       html.Span(" — next: " + printable(views.entry_text(e, r.next_step)), className="next") if r.next_step else ""])
                              for r in rest[:5]]))
    if not lines:
        return None
    return html.Div(lines, className="explain", id="explain-box")


def _ready(state: WebState, cid):
    e = state.get(cid)
    return e if e is not None and e.status == "done" else None


# ------------------------------------------------------------------------- callbacks


def url_params(search: str | None) -> dict[str, str]:
    """The page's state in its query string: capture, filter, tab, x0/x1 (zoom), sel (the
    selected request), pf (the packet list's display filter), pkt (the packet selected or gone to
    in the packet list), order (the waterfall's), time (the packet list's time format); the
    dropdown filters (URL_LISTS) are in ``url_lists``."""
    q = parse_qs((search or "").lstrip("?"), keep_blank_values=False)
    return {k: v[-1] for k, v in q.items() if v}


# the waterfall's dropdown filters in the query string (one key per value: proto=h2&proto=h3)
URL_LISTS = {"f-protocol": "proto", "f-connection": "conn", "f-content": "content", "f-status": "status"}


def url_lists(search: str | None) -> dict[str, list[str]]:
    q = parse_qs((search or "").lstrip("?"), keep_blank_values=False)
    return {dd: q.get(key, []) for dd, key in URL_LISTS.items()}


def xrange_for(xrange, cid) -> list | None:
    """The zoom stored for capture ``cid`` (``{capture, range}``; a bare ``[x0, x1]`` is
    anyone's) — None for the zoom of another capture."""
    if isinstance(xrange, dict):
        r = xrange.get("range")
        return r if xrange.get("capture") == cid and isinstance(r, list) and len(r) == 2 else None
    return xrange if isinstance(xrange, list) and len(xrange) == 2 else None


def _url_zoom(q: dict[str, str], cid) -> list | None:
    """The zoom ``x0``/``x1`` of an address's parameters ``q`` (None: none, or not a range)."""
    try:
        if "x0" in q and "x1" in q and cid:
            a, b = float(q["x0"]), float(q["x1"])
            if math.isfinite(a) and math.isfinite(b) and a < b:
                return [a, b]
    except ValueError:
        pass
    return None


# A page opened (or reloaded) on an address fills its stores from it in callbacks whose order
# Dash does not fix: cb_poll's first call picks the capture named in the address too, and an
# output with allow_duplicate (cb_url_in's capture) is not a prerequisite Dash waits for — so
# the callbacks that read the selection or the zoom may run before those stores are filled,
# and the one that wrote the selection (cb_select) answered "none" after cb_url_in's answer,
# wiping the selection from the page and then from the address.  Each reader therefore takes
# the store's value when it is this capture's (``{capture, ...}``; a value None is the
# person's "none"), else the address's when the address names this capture: the same answer
# in any order.


def selected_for(selected, cid, search: str | None = None) -> int | None:
    """The request selected in capture ``cid``: the selection store's (``{capture, id}``; a
    bare number is anyone's) when it is this capture's, else the address's ``sel`` when the
    address names ``cid`` (the store not filled yet: a page just opened)."""
    if isinstance(selected, dict) and selected.get("capture") == cid:
        x = selected.get("id")
        return x if isinstance(x, int) and not isinstance(x, bool) else None
    if isinstance(selected, int) and not isinstance(selected, bool):
        return selected
    q = url_params(search)
    return int(q["sel"]) if cid and q.get("capture") == cid and q.get("sel", "").isdigit() else None


def zoom_for(xrange, cid, search: str | None = None) -> list | None:
    """The zoom of capture ``cid``: the zoom store's when it is this capture's (``range``
    None: the person reset it), else the address's when the address names ``cid``."""
    if isinstance(xrange, dict) and xrange.get("capture") == cid or isinstance(xrange, list):
        return xrange_for(xrange, cid)
    q = url_params(search)
    return _url_zoom(q, cid) if cid and q.get("capture") == cid else None


def cb_poll(state: WebState, _n, current, old_options, old_version, old_status, search=None):
    """Capture list, current capture, status line and progress (dcc.Interval)."""
    entries = state.list()
    options = [{"label": e.label(), "value": e.id} for e in entries]
    if current is None or state.get(current) is None:
        want = url_params(search).get("capture")
        current = want if want and state.get(want) is not None else (entries[0].id if entries else None)
        value = current
    else:
        value = no_update
    e = state.get(current)
    if e is None:
        status = html.Span("No capture open. Upload one (with its key log) below.", className="status")
        prog, pstyle = 0, {"display": "none"}
        version = None
    else:
        text = views.entry_text(e, e.status_text())
        if e.status == "done" and e.analysis is not None and (e.live is None or not e.live.running):
            from wirefall.analyzer.completeness import headline

            if views.reasons_of(e):  # the headline's word; the waterfall tab's box says it whole, why and what next
                # (the whole headline here too was the page's third: status line, box and figure subtitle)
                text += " · " + headline(e.analysis).partition(":")[0] + " (what and why: the Waterfall tab)"
            for line in overlay.summary_lines(e.analysis):  # how much of each browser log laid over it matched the wire
                text += " · " + line
            for line in harpages.notice_lines(e.analysis):  # a HAR of several pages: which one is shown
                text += " · " + line
        status = html.Span(text, className="status error" if e.status == "error" else "status", id="status-text")
        prog = round(100 * e.fraction)
        pstyle = {"display": "inline-block", "width": "160px"} if e.status in ("queued", "running") else {"display": "none"}
        version = f"{e.id}:{e.status}" + live_view.version(e)  # (a live capture's growth: live-version, ui.web.live)
    others = sum(1 for x in entries if x.status in ("queued", "running") and x.id != current)
    if others:
        status = html.Span([status, html.Span(f"  ({others} more being analysed)", className="status")])
    out_options = options if options != old_options else no_update
    return (out_options, value, status, prog, pstyle, version if version != old_version else no_update,
            out_options, out_options)


# The poll's gate (a clientside callback on the interval's ticks): a tick starts a poll (a new
# ``poll-go``: {n, t}) only once the last one is answered (``poll-done`` = its n) — or after
# POLL_STALE_MS without an answer (a request lost).  Without it, a cb_poll slower than the
# interval (a loaded server) was superseded by the next tick's request before its answer was
# applied (Dash drops an outdated answer), every time: the page never filled in.  The page's
# start (n_intervals 0) starts none: the layout holds the first poll's answer, and a poll in
# flight would hold the first callbacks (the filters' options, the selection, the waterfall:
# their inputs capture and version are its outputs) until it is answered.
POLL_STALE_MS = 20_000
POLL_GATE_JS = """function(n, go, done) {
    if (!n) { return window.dash_clientside.no_update; }
    var now = Date.now();
    if (go && done !== go.n && now - go.t < STALE) { return window.dash_clientside.no_update; }
    return {n: (go ? go.n : 0) + 1, t: now};
}""".replace("STALE", str(POLL_STALE_MS))


def cb_poll_tick(state: WebState, go, current, old_options, old_version, old_status, search=None, live_old=None):
    """One poll the gate let through (``go``: {n, t}): cb_poll's answer, the live capture's
    generation (``live-version``: one request per tick, not two) and ``poll-done`` = n, which
    opens the gate for the next tick."""
    n = go.get("n") if isinstance(go, dict) else None
    out = cb_poll(state, n, current, old_options, old_version, old_status, search)
    cid = current if out[1] is no_update else out[1]
    return (*out, live_view.cb_live_version(state, n, cid, live_old), n)


def cb_stage(state: WebState, kind: str, data, limits, previous=None):
    """An upload as the page reports it → the staged file and a message: ``{token}`` (the
    upload route staged it), ``{error, name, size|message}``, or ``{contents, name}`` (a data:
    URL, staged here; ``previous``: the page's staged upload of this kind, replaced)."""
    if not data:
        return no_update, no_update, no_update
    limit = (limits or {}).get(kind, state.upload_limit if kind == "capture" else state.keylog_limit)
    name = printable(data.get("name") or "upload")
    label = "capture" if kind == "capture" else "key log"
    if data.get("token"):
        st = state.staged(data["token"])
        if st is None or st["kind"] != kind:
            return None, html.Span(f"{name}: the upload was not found (deleted after {state.upload_lifetime / 60:g} minutes "
                                   "unused?); upload it again", className="error"), None
        st = {k: st[k] for k in ("token", "name", "size")}
        return st, html.Span(f"{label}: {st['name']} ({fmt_size(st['size'])})", className="status"), None
    if data.get("error") and data.get("error") != "too_large":
        return None, html.Span(printable(data.get("message") or data["error"]), className="error"), None
    if data.get("error") == "too_large":
        what = "capture" if kind == "capture" else "key log"
        msg = (f"{name} is {fmt_size(int(data.get('size') or 0))}: too large. The limit for a {what} upload is {fmt_size(limit)}; "
               f"open larger captures from the command line (wirefall web FILE).")
        return None, html.Span(msg, className="error"), None
    try:
        st = state.stage_upload(kind, name, data.get("contents"), replaces=(previous or {}).get("token"))
    except UploadError as ex:
        return None, _err(ex), None
    return st, html.Span(f"{label}: {st['name']} ({fmt_size(st['size'])})", className="status"), None


def cb_open(state: WebState, n_clicks, staged_capture, staged_keylog, cid_open=None, busy_capture=None, busy_keylog=None):
    """"Analyse" → a new capture entry analysed in the background, selected; pressed again
    for the same uploads: that entry; a key log alone: the open capture analysed again with it.
    ``busy_*``: the name of a file still being checked (CHECKING_JS): nothing is analysed yet."""
    if not n_clicks:
        return no_update, no_update
    busy = [f"{'capture' if k == 'capture' else 'key log'} {printable(str(b))}"
            for k, b in (("capture", busy_capture), ("keylog", busy_keylog)) if b]
    if busy:
        return no_update, html.Span(f"the {' and the '.join(busy)} {'is' if len(busy) == 1 else 'are'} still being checked: "
                                    "press Analyse upload again when its line names its size", className="error", id="open-busy")
    ct, kt = (staged_capture or {}).get("token"), (staged_keylog or {}).get("token")
    again = state.opened_from(ct, kt)
    if again is not None:
        return again.id, html.Span(f"{again.name} is open already as {again.id}", className="status", id="open-done")
    try:
        if not ct and kt and cid_open:
            e = state.add_keylog(cid_open, kt)
            return e.id, html.Span(f"{e.name} analysed again with key log {e.keylog_names[-1]} as {e.id}", className="status",
                                   id="open-done")
        e = state.open_staged(ct, kt)
    except UploadError as ex:
        return no_update, _err(ex)
    kl = f" with key log {e.keylog_names[0]}" if e.keylog_names else " (no key log)"
    return e.id, html.Span(f"opened {e.name}{kl} as {e.id}", className="status", id="open-done")


def cb_filter_options(state: WebState, cid, version, trigger=None, search=None):
    """The dropdown filters' options of the capture shown; their values emptied when the
    capture changes — or, on a page opened with a query string naming this capture, the
    values it holds (a reload keeps them)."""
    e = _ready(state, cid)
    if e is None:
        return [], [], [], [], [], [], [], []
    o = views.filter_options(e)
    if trigger not in (None, "capture"):
        return o["protocol"], o["connection"], o["content"], o["status"], no_update, no_update, no_update, no_update
    want = url_lists(search) if url_params(search).get("capture") == cid else {}
    values = []
    for dd, key in (("f-protocol", "protocol"), ("f-connection", "connection"), ("f-content", "content"), ("f-status", "status")):
        known = {str(x["value"]): x["value"] for x in o[key]}
        values.append([known[v] for v in want.get(dd, []) if v in known])
    return (o["protocol"], o["connection"], o["content"], o["status"], *values)


def cb_waterfall(state: WebState, cid, version, protocols, connections, contents, statuses, expr, order=None, selected=None,
                 xrange=None, start=None, search=None, beside=None, graph_px=None):
    """The waterfall figure of what the filters select, in the chosen order (the zoom kept, the
    selected request's row highlighted; of a big view, the window of rows from ``start``),
    the filter error, the count, and why rows are missing.  ``search``: the page's address
    (its zoom and selection until the stores hold this capture's: ``zoom_for``).  ``beside``: the page's
    ``wf-beside`` (``BESIDE_JS``) — false where a selected request's detail does not share the graph's
    row (a window narrower than ``DETAIL_BESIDE_MIN``: the figure is laid out for the whole page), else
    the graph's width beside it (None, not known: the narrowest, ``views.NARROWEST_WITH_DETAIL``).
    ``graph_px``: the page's ``wf-width`` (``GRAPH_WIDTH_JS``), the graph's width with no detail beside
    it — the row labels' room then (``views.label_room_for``; beside the detail, ``beside`` is)."""
    import plotly.graph_objects as go

    e = state.get(cid)
    if e is None or e.status != "done":
        fig = go.Figure()
        msg = "No capture open" if e is None else (views.entry_text(e, e.status_text()))
        fig.add_annotation(text=html_text(msg), x=0.5, y=0.5, xref="paper", yref="paper", showarrow=False, font=dict(size=15))
        fig.update_layout(template="plotly_white", height=300, xaxis_visible=False, yaxis_visible=False)
        return fig, "", "", None
    try:
        v = views.filtered_view(e, protocols, connections, contents, statuses, expr, order)
        xr = views.clamp_x_range(zoom_for(xrange, cid, search), v.waterfall)
        sel = selected_for(selected, cid, search)
        row = next((r for r in v.waterfall.rows if r.exchange == sel), None) if sel is not None else None
        alone = not _detail_beside(sel, beside)  # (a selected request: its detail beside the graph narrows it)
        if alone and isinstance(graph_px, int) and not isinstance(graph_px, bool):
            state.graph_px = graph_px  # (the next capture's warm-up makes its first figure for this width)
        fig = views.page_figure(e, v, (protocols, connections, contents, statuses, expr, order), title=e.name, x_range=xr,
                                revision=cid, start=start, narrowest=views.narrowest_for(sel is not None, beside),
                                graph_px=graph_px if alone else None)
        shown = len(v.waterfall.rows)
        why = explain_view(e, shown, v.total)
        if not shown:
            from wirefall.ui import explain

            import textwrap

            rs = explain.reasons(e.analysis)
            short = (f"no request matches the filters ({v.total} in the capture)" if v.total else
                     "no requests: " + explain.reason_text(rs[0], False) if rs else explain.empty_text(e.analysis, 0, 0))
            text = "<br>".join(html_text(ln) for ln in textwrap.wrap(views.entry_text(e, short), 90)[:4])
            anns = list(fig.layout.annotations or ())
            mine = [a for a in anns if str(a.text or "").startswith("no request")]
            for a in mine:  # figure()'s own "no requests in this capture" replaced by the reason
                a.text = text
            if not mine:
                fig.add_annotation(text=text, x=0.5, y=0.5, xref="paper", yref="paper", showarrow=False, font=dict(size=14))
            else:
                fig.layout.annotations = anns
        if row is not None:
            fig.add_shape(type="rect", xref="paper", x0=0, x1=1, yref="y", y0=row.index - 0.5, y1=row.index + 0.5,
                          fillcolor="rgba(255, 193, 7, 0.28)", line=dict(color="#ff8f00", width=1), layer="below", name="selected")
    except Exception as ex:  # noqa: BLE001
        if live_view.transient(e):  # the live pass is changing the model: the figure shown stays, the next state redraws
            return no_update, no_update, no_update, no_update
        return go.Figure(), _err(ex, "cannot draw the waterfall: "), "", None
    err: str | Component = ""
    if v.error:
        expr = v.expr or ""
        caret = " " * (max(v.error_column or 1, 1) - 1) + "^"
        err = html.Div([html.Span("filter error: " + v.error, className="error"), html.Pre(f"{expr}\n{caret}", className="error")],
                       id="filter-error-msg")
    count = f"{len(v.waterfall.rows)} of {v.total} requests"
    return fig, err, count, why


def _detail_beside(sel, beside) -> bool:
    """Whether a selected request's detail shares the graph's row (``views.narrowest_for``'s case)."""
    return sel is not None and beside is not False


WF_PAGE_BUTTONS = ("wf-first", "wf-prev", "wf-next", "wf-last")


def cb_wf_window(state: WebState, first, prev, next_, last, row, cid, version, protocols, connections, contents, statuses, expr,
                 order=None, selected=None, start=None, *, trigger=None):
    """The window of rows the page draws of a big view (first row, 0-based), the pager's
    style (shown for big views only) and its text.  The page buttons and the row input move
    it; a new capture, filter or order starts at the first row; a selected request (from the
    address) brings its window."""
    e = _ready(state, cid)
    hidden = {"display": "none"}
    if e is None:
        return 0, hidden, ""
    try:
        v = views.filtered_view(e, protocols, connections, contents, statuses, expr, order)
    except Exception:  # noqa: BLE001 - the waterfall callback shows the error
        return 0, hidden, ""
    n = len(v.waterfall.rows)
    cur = views.row_window(v, start if isinstance(start, int) else 0)
    if cur is None:
        return (0 if start else no_update), hidden, ""
    a = cur[0]
    step = views.WINDOW_ROWS
    if trigger == "wf-first":
        a = 0
    elif trigger == "wf-prev":
        a = a - step
    elif trigger == "wf-next":
        a = a + step
    elif trigger == "wf-last":
        a = n - step
    elif trigger == "wf-row" and isinstance(row, (int, float)) and math.isfinite(row):
        a = views.window_start_of(v, int(row) - 1, a)
    elif trigger == "selected":
        sel = selected_for(selected, cid)
        i = next((r.index for r in v.waterfall.rows if r.exchange == sel), None) if sel is not None else None
        a = views.window_start_of(v, i, a) if i is not None else a
    elif trigger not in (None, "version"):  # another capture, filter or order: from the top
        a = 0
    w = views.row_window(v, a) or (0, n)
    text = f" requests {w[0] + 1}–{w[1]} of {n} (a window of {step} rows drawn at a time; the exports draw them all)"
    return (w[0] if w[0] != start else no_update), {}, text


# what moves the window: the page buttons and the row input; a new capture, filter or order
# starts from the top (cb_wf_window's triggers)
# (wf-expr: the waterfall filter applied, PACKET_FILTER_JS; filter-expr, the box, as the store was named before)
WF_FROM_TOP = ("capture", "f-protocol", "f-connection", "f-content", "f-status", "wf-expr", "filter-expr", "wf-order")


def wf_trigger(triggered) -> str | None:
    """The one trigger ``cb_wf_window`` acts on of the inputs that fired together (component
    ids; a page just opened fires several at once): a page button or the row input, else the
    selection when it fired with the capture or a filter (a page opened on ``?sel=``: its
    window), else the first of a new capture, filter or order (from the top), else the
    selection, else None (the analysis or a live capture changed: the window kept)."""
    t = set(triggered or ())
    for b in (*WF_PAGE_BUTTONS, "wf-row"):
        if b in t:
            return b
    top = next((x for x in WF_FROM_TOP if x in t), None)
    if "selected" in t:
        return "selected" if top in (None, "capture") else top
    return top


def cb_wf(state: WebState, first, prev, next_, last, row, cid, version, protocols, connections, contents, statuses, expr,
          order=None, selected=None, xrange=None, start=None, search=None, *, triggered=None, beside=None, graph_px=None):
    """The waterfall's window of rows (``cb_wf_window``) and the figure of that window
    (``cb_waterfall``) in one answer, where the figure's callback waited for the window's
    (a round trip more for each page, filter, capture).  ``triggered``: the ids of the inputs
    that fired (none: the page's first call); ``beside``: the page's ``wf-beside`` (``BESIDE_JS``);
    ``graph_px``: its ``wf-width`` (``GRAPH_WIDTH_JS``) — a new width alone, with the detail beside
    the graph (which lays the figure out for its own width), changes nothing."""
    t = set(triggered or ())
    if t == {"wf-width"} and _detail_beside(selected_for(selected, cid, search), beside):
        return (no_update,) * 7
    trig = wf_trigger(t)
    win = cb_wf_window(state, first, prev, next_, last, row, cid, version, protocols, connections, contents, statuses, expr,
                       order, selected, start, trigger="capture" if (not t or "capture" in t) and trig in (None, "version") else trig)
    a = start if win[0] is no_update else win[0]
    fig = cb_waterfall(state, cid, version, protocols, connections, contents, statuses, expr, order, selected, xrange, a, search,
                       beside=beside, graph_px=graph_px)
    return (*win, *fig)


# The zoom store from the graph's relayoutData, in the page (a clientside callback).  On the
# server it was lost: Dash applies only the answer of a callback's newest request, and the
# figure's resize after a zoom (the detail panel narrowing it: relayoutData {autosize: true})
# is a newer request than the zoom's, answered "no change" — the zoom's answer, with the range,
# was dropped and the address never got x0/x1 (tests/test_web_live.py: most runs).  Here each
# relayoutData (each event of its own task: a drag, a ResizeObserver's resize) runs the function
# in order, with nothing to drop; an event without the time axis (autosize, the y axis) keeps
# the zoom stored.  (Two relayouts within one task reach it as one, the last: a zoom among them
# is taken from what the graph's own listener saw, wirefallWatchZoom in PAGE_JS.)
# The stored value is ``{capture, range}``; range null after a reset (the person's "no zoom",
# which the address's zoom does not replace).
XRANGE_JS = """function(relayout, prev, cid) {
    var nu = window.dash_clientside.no_update;
    // The graph's own x-range events, seen by a listener of its own: a zoom and the detail panel's
    // resize in one task reach this function as the resize alone (the graph held the zoom, the
    // address never got it); the zoom seen since the last call is taken for such an event.
    var gd = document.querySelector('#waterfall .js-plotly-plot'), seen;
    window.wirefallWatchZoom(gd);  // (watched since its first drawing: this is for a graph drawn before the patch)
    if (gd) { seen = gd._wfZoom; gd._wfZoom = undefined; }
    if (!relayout) { return nu; }
    var before = null;
    if (Array.isArray(prev)) { before = prev.length === 2 ? prev : null; }
    else if (prev && prev.capture === cid && Array.isArray(prev.range) && prev.range.length === 2) { before = prev.range; }
    var r;
    if (relayout['xaxis.autorange']) { r = null; }
    else if ('xaxis.range[0]' in relayout && 'xaxis.range[1]' in relayout) {
        r = [Number(relayout['xaxis.range[0]']), Number(relayout['xaxis.range[1]'])];
    } else if (Array.isArray(relayout['xaxis.range'])) { r = relayout['xaxis.range'].slice(0, 2).map(Number); }
    else if (seen) { r = seen.range; }  // (a zoom merged into this event)
    else { return nu; }  // autosize (a new width), the y axis: the zoom stays
    if (r !== null && !(r.length === 2 && isFinite(r[0]) && isFinite(r[1]))) { return nu; }
    if (r === null ? before === null : (before !== null && r[0] === before[0] && r[1] === before[1])) { return nu; }
    return {capture: cid, range: r};
}"""


# The request detail shares the waterfall's row (beside it, at most min(36 %, 560 px) of the page)
# only on a window this wide: narrower, it left the graph ~600 px and the time axis ~200 px (two
# ticks at 1024 px, the axis stretched by the room the layout keeps right of the last bar), so it
# is a sheet over the bottom of the window instead (CSS) and the graph keeps the whole width.
DETAIL_BESIDE_MIN = 1100
# The page's ``wf-beside``: false where the detail would not be beside the graph at this window's
# width, else the graph's width beside it (the CSS's split, in steps of 100 px, within
# views.NARROWEST_WITH_DETAIL .. NARROWEST_PAGE), for which cb_wf lays the figure out.  Sent on load
# and with a selection, changed only when it changes (and when a resize changes it: PAGE_JS
# clicks the hidden ``wf-beside-check``).
BESIDE_JS = """function(sel, path, check, prev) {
    window.wirefallWfWidth = function () {
        var w = window.innerWidth;
        if (w < MIN) { return false; }
        var c = w - 28, side = Math.min(0.36 * c, 560);
        return Math.max(NARROW, Math.min(PAGE, Math.floor((c - side - 10) / 100) * 100));
    };
    var b = window.wirefallWfWidth();
    window.wirefallBeside = b;
    return b === prev ? window.dash_clientside.no_update : b;
}""".replace("MIN", str(DETAIL_BESIDE_MIN)).replace("NARROW", str(views.NARROWEST_WITH_DETAIL)).replace("PAGE", str(views.NARROWEST_PAGE))
# The page's ``wf-width``: the waterfall's width with no request detail beside it (its row's,
# .wf-split, measured; the tab not shown: the window's less the page's padding), in steps of 100
# px within views.NARROWEST_WITH_DETAIL .. LABEL_ROOM_MAX — the row labels' room
# (views.label_room_for: at 1920 px they were laid out as at 1200).  Sent on load, and after a
# resize only when the step changes (PAGE_JS clicks ``wf-beside-check``): cb_wf draws the figure
# again only then.
GRAPH_WIDTH_JS = """function(path, check, prev) {
    window.wirefallGraphWidth = function () {
        var g = document.getElementById('waterfall'), row = g && g.closest('.wf-split');
        var w = row ? row.getBoundingClientRect().width : 0;
        if (!(w > 0)) { w = window.innerWidth - 28; }
        return Math.max(NARROW, Math.min(MAX, Math.floor(w / 100) * 100));
    };
    var w = window.wirefallGraphWidth();
    window.wirefallGraphPx = w;
    return w === prev ? window.dash_clientside.no_update : w;
}""".replace("NARROW", str(views.NARROWEST_WITH_DETAIL)).replace("MAX", str(views.LABEL_ROOM_MAX))
# the detail shown as the sheet (a narrow window): at its top, and the clicked row kept in sight above it
DETAIL_SHOWN_JS = """function(cls) {
    if (!cls || cls.indexOf('none') >= 0) { return window.dash_clientside.no_update; }
    setTimeout(function () {
        var side = document.getElementById('detail-side');
        if (!side || getComputedStyle(side).position !== 'fixed') { return; }
        side.scrollTop = 0;
        var top = window.innerHeight - side.offsetHeight, y = window.wirefallClickY;
        if (typeof y === 'number' && y > top - 24) { window.scrollBy({top: y - top + 48}); }
        window.wirefallClickY = undefined;
    }, 30);
    return cls;
}"""


def cb_url_in(state: WebState, pathname, search, applied=None):
    """The page opened (or reloaded) with a query string: the capture, filter, tab, zoom
    and packet it names.  (The selected request is cb_select's: it takes the address's when
    the selection store holds none of this capture, ``selected_for``.)  The waterfall's filter
    is the layout's (``applied``: the store ``wf-expr`` it made): given only when the layout
    had another (a page whose layout was asked without its address), so that an answer coming
    while the person types does not undo what was applied."""
    q = url_params(search)
    cid = q.get("capture")
    cap = cid if cid and state.get(cid) is not None else no_update
    tab = q.get("tab") if q.get("tab") in TABS else no_update
    z = _url_zoom(q, cid)
    xr: object = {"capture": cid, "range": z} if z is not None else no_update
    pkt = int(q["pkt"]) if q.get("pkt", "").isdigit() else no_update
    order = q["order"] if q.get("order") in views.ORDER_OPTIONS else no_update
    tf = q["time"] if q.get("time") in views.TIME_FORMATS else no_update
    expr = q.get("filter", "")
    return cap, expr if expr != (applied or "") else no_update, tab, xr, pkt, True, order, tf


def cb_url_out(state: WebState, cid, expr, tab, xrange, selected, goto, ready, search, protocols=None, connections=None,
               contents=None, statuses=None, order=None, time_format=None, packet_filter=None, *, goto_changed: bool = True,
               packet_key=None):
    """The page's state written to its query string (replaced, so that a reload keeps it).
    ``pkt`` is the packet gone to when this call is the go-to's (``goto_changed``), else the
    address's: the packet list's selection is written there by the page (PACKET_URL_JS), which
    this server callback does not see — none when the address names another capture (its packet is
    not this one's), and the last go-to not put back when ``packet_key`` (the packet detail's key)
    is this capture's and names no packet (nothing is selected in the list).  ``pf``: the packet
    list's display filter as applied (a filter with an error too: the box shows it again, and says
    the error)."""
    if not ready:
        return no_update
    q: dict[str, object] = {}
    if cid:
        q["capture"] = cid
    if expr:
        q["filter"] = expr
    for key, v in zip(URL_LISTS.values(), (protocols, connections, contents, statuses)):
        if isinstance(v, list) and v:
            q[key] = [str(x) for x in v]
    if order and order != "start":
        q["order"] = order
    if tab and tab != "waterfall":
        q["tab"] = tab
    xr = zoom_for(xrange, cid, search)  # (a store not filled yet keeps the address's)
    if xr is not None:
        q["x0"], q["x1"] = f"{xr[0]:.6g}", f"{xr[1]:.6g}"
    sel = selected_for(selected, cid, search)
    if sel is not None:
        q["sel"] = str(sel)
    if isinstance(packet_filter, str) and packet_filter:
        q["pf"] = packet_filter
    at = url_params(search)
    if goto_changed:
        pkt = goto
    elif at.get("capture", cid) != cid:  # another capture shown: the address's packet (and go-to) was the other one's
        pkt = None
    else:
        pkt = at.get("pkt") or (None if _no_packet(packet_key, cid) else goto)
    if pkt:
        q["pkt"] = str(pkt)
    if time_format and time_format != "relative":
        q["time"] = time_format
    for k in COMPARE_KEYS:  # the captures compared: the page's (COMPARE_URL_JS), kept as they are
        if at.get(k):
            q[k] = at[k]
    new = "?" + urlencode(q, doseq=True) if q else ""
    return new if new != (search or "") else no_update


def _no_packet(key, cid) -> bool:
    """Whether the packet detail's key (PACKET_DETAIL_KEY_JS) is capture ``cid``'s and names no
    packet (KEY_PACKET_JS's null): nothing is selected in the packet list."""
    if not isinstance(key, dict) or not cid or key.get("capture") != cid:
        return False
    sel = key.get("sel")
    n = key.get("goto") if key.get("t") == "packet-goto" else (sel[0].get("no") if isinstance(sel, list) and sel
                                                                 and isinstance(sel[0], dict) else None)
    return (_goto(n) or 0) <= 0


# the query string's keys in cb_url_out's order
URL_ORDER = ("capture", "filter", *URL_LISTS.values(), "order", "tab", "x0", "x1", "sel", "pf", "pkt", "time", "ca", "cb")


def search_with_sel(search: str | None, cid, xid) -> str | None:
    """The address ``search`` with the selected request ``xid`` (None: none) — as cb_url_out
    writes it — when it names capture ``cid``; None otherwise (cb_url_out writes it then)."""
    q = parse_qs((search or "").lstrip("?"), keep_blank_values=False)
    if not cid or q.get("capture", [None])[-1] != cid:
        return None
    q.pop("sel", None)
    if xid is not None:
        q["sel"] = [str(xid)]
    keys = [k for k in URL_ORDER if k in q] + [k for k in q if k not in URL_ORDER]
    return "?" + urlencode([(k, v) for k in keys for v in q[k]])


def cb_packet_link(state: WebState, clicks):
    """A packet number in the request detail → the Packets tab at that packet."""
    t = dash.ctx.triggered_id
    if not isinstance(t, dict) or not any(clicks or ()):
        return no_update, no_update
    return "packets", int(t.get("n") or 0)


def cb_clear_messages(state: WebState, *_):
    """A new upload or Analyse: earlier error messages go."""
    return ""


def cb_select(state: WebState, click, cid, protocols, connections, contents, statuses, expr, order=None, trigger=None,
              selected=None, search=None):
    """Click on a bar → the request detail panel.  The one writer of the selection: a click
    selects; the capture (re)loaded or analysed again keeps this capture's selection or, the
    page just opened, takes the address's (``selected_for``)."""
    e = _ready(state, cid)
    if e is None:
        return no_update, html.Div()
    if trigger == "detail-close":  # the detail's close button: nothing selected, the waterfall has the whole width again
        return None, views.request_detail(e, None)
    try:
        if trigger == "waterfall" or (trigger is None and click is not None):
            v = views.filtered_view(e, protocols, connections, contents, statuses, expr, order)
            xid = views.exchange_from_click(v, click)
        else:  # the capture (re)loaded, or a selection from the URL
            want = selected_for(selected, cid, search)
            xid = want if want is not None and any(x.id == want for x in e.analysis.exchanges) else None
        return xid, live_view.steady(e, lambda: views.request_detail(e, xid))
    except Exception as ex:  # noqa: BLE001
        if live_view.transient(e):
            return no_update, no_update
        return None, _err(ex, "cannot show the request: ")


# A hidden tab's callbacks do not run: a clientside callback per tab turns (capture, version,
# tab, ...) into the tab's key store only while the tab is shown and only when the key is new
# (no request at all otherwise); the tab's server callback has the key as its one Input.
# Before, the Connections, Statistics, Expert, packet detail and Compare callbacks each made
# a request on every capture or version change, shown or not (they answered "no change").
def tab_key_js(tab: str, live: bool = False) -> str:
    """The clientside function of ``tab``'s key: (capture, version[, live-version], tab, key)."""
    args = "cid, version, live, tab, prev" if live else "cid, version, tab, prev"
    return f"""function({args}) {{
    if (tab !== {json.dumps(tab)}) {{ return window.dash_clientside.no_update; }}
    var k = {{capture: cid, version: version, live: {'live' if live else 'null'}}};
    if (prev && prev.capture === k.capture && prev.version === k.version && prev.live === k.live) {{
        return window.dash_clientside.no_update;
    }}
    return k;
}}"""


# the number of the packet whose detail the key ``k`` shows, as cb_packet_detail takes it (null: none)
KEY_PACKET_JS = """function (k) {
    var n = k ? parseInt(k.t === 'packet-goto' ? k.goto : (k.sel && k.sel[0] && k.sel[0].no), 10) : NaN;
    return n > 0 ? n : null;
}"""

# the packet detail's key: the packet selected or gone to, while the Packets tab is shown (t:
# what chose it — "packet-goto", "packets" (the grid's selection) or "capture").  The same
# packet of the same capture is no new key (the row gone to, then selected; a selected row's
# data refreshed by a mark; nothing selected, then nothing again): its detail is not asked again.
# The tab shown again (or the capture set again to the one shown) changes nothing: the detail is
# as it was, and the grid, made anew without a selection, is given the address's packet again
# (cb_packet_where, the go-to's callback).  The tab's first key is the address's packet (the
# go-to cb_url_in set from its pkt); another capture starts with nothing selected (the grid's
# selection was of the capture before: the packet of the same number is not this one's).
PACKET_DETAIL_KEY_JS = """function(cid, sel, goto, tab, prev) {
    if (tab !== 'packets') { return window.dash_clientside.no_update; }
    var t = (window.dash_clientside.callback_context.triggered || []).map(function (x) { return x.prop_id; }).join(' ');
    var same = !!prev && prev.capture === cid, no = (__KEY_PACKET__);
    if (same && !/packet-goto|selectedRows/.test(t)) { return window.dash_clientside.no_update; }
    var why = /packet-goto/.test(t) ? 'packet-goto' : /selectedRows/.test(t) ? 'packets' : prev ? 'capture'
        : goto ? 'packet-goto' : null;
    var k = {capture: cid, sel: why === 'capture' || !(sel && sel.length) ? null : sel, goto: goto === undefined ? null : goto, t: why};
    if (same && no(prev) === no(k)) { return window.dash_clientside.no_update; }
    return k;
}""".replace("__KEY_PACKET__", KEY_PACKET_JS)

# The packet selected (or gone to) written to the address's ``pkt`` at once, by the page: a
# packet list's selection (a click, the keys) is shared or reloaded as it is, as Wireshark's
# users expect; nothing selected (a Ctrl-click on the selected row, a filter that hides it,
# another capture), no ``pkt`` (a reload would select the packet left).  The packet filter
# applied (packet-expr) likewise, as ``pf`` (none when there is none).  The history entry is
# replaced, not added (dcc.Location with refresh=False pushes one per change: ten arrow keys, ten
# Back presses), and the store is then set to the address the browser already shows
# (dcc.Location pushes nothing for it); no request to the server, and the list is not told
# anything (a go-to's packet-goto would re-fetch its rows and scroll).  Also run when another
# callback wrote the address (cb_url_out's answer to a change made before the last key): the
# selection's packet and the filter are put back, or taken out.  A key of another capture (the
# address not written yet for it), or none (the Packets tab not opened yet), leaves ``pkt`` alone.
# Values are encoded as cb_url_out's urlencode does (the same address string).
PACKET_URL_JS = """function(key, expr, search) {
    var nu = window.dash_clientside.no_update, n = (__KEY_PACKET__)(key), loc = window.location;
    var q = new URLSearchParams(loc.search), want = {pf: expr || null}, order = __URL_ORDER__;
    if (key && key.capture && q.get('capture') === key.capture) { want.pkt = n ? String(n) : null; }
    var names = Object.keys(want).filter(function (k) { return q.get(k) !== want[k]; });
    if (!q.has('capture') || !names.length) { return nu; }
    var name = function (p) { return decodeURIComponent(p.split('=')[0]); };
    var quote = function (v) {  // (Python's quote_plus)
        return encodeURIComponent(v).replace(/[!'()*]/g, function (c) { return '%' + c.charCodeAt(0).toString(16).toUpperCase(); })
            .replace(/%20/g, '+');
    };
    var parts = loc.search.replace(/^\\?/, '').split('&').filter(function (p) { return p && names.indexOf(name(p)) < 0; });
    names.forEach(function (k) {
        if (!want[k]) { return; }
        var at = order.indexOf(k), i = parts.findIndex(function (p) { var j = order.indexOf(name(p)); return j < 0 || j > at; });
        parts.splice(i < 0 ? parts.length : i, 0, k + '=' + quote(want[k]));  // (where cb_url_out puts it)
    });
    var next = parts.length ? '?' + parts.join('&') : '';
    window.history.replaceState(window.history.state, '', loc.pathname + next + loc.hash);
    return next;
}""".replace("__URL_ORDER__", json.dumps(list(URL_ORDER))).replace("__KEY_PACKET__", KEY_PACKET_JS)


# The rows cb_packet_rows answers (packets-rows) are given to the grid's request here, by the request's own
# successCallback, once.  dash-ag-grid (35.3) gives its getRowsResponse itself, but after an answer of 0
# rows it defers the next answer to a timer that its own effect cancels as it sets getRowsResponse back to
# null: that request was never answered, and AG Grid, counting its loads by the answers
# (maxConcurrentDatasourceRequests 1), asked for no block again — after a filter that matched nothing,
# every later one drew its count over empty rows until a reload.  An answer for other rows than the
# request's (of a grid made since) is not given to it.  A request without its callbacks (another
# dash-ag-grid) is answered dash-ag-grid's own way.
ROWS_JS = """function(ans, req) {
    var nu = window.dash_clientside.no_update;
    if (!ans || !req) { return nu; }
    if (typeof req.successCallback !== 'function') { return {rowData: ans.rowData, rowCount: ans.rowCount}; }
    var api = req.api;
    if (!api) { try { api = window.dash_ag_grid.getApi('packets'); } catch (e) { api = null; } }
    if (ans.startRow !== req.startRow || ans.endRow !== req.endRow || (api && api.wirefallAnswered === req.successCallback)) { return nu; }
    if (api) { api.wirefallAnswered = req.successCallback; }
    req.successCallback(ans.rowData || [], ans.rowCount);
    if (api) { setTimeout(function () { window.wirefallKeepInView(api); }, 0); }
    return nu;
}"""

# the packet filter applied (packet-expr, what the list, the address and the exports follow): the box's
# text on Enter or on leaving the box, when it changed
# The waterfall's filter box (filter-expr) likewise → wf-expr, which the waterfall, the selection and
# the address follow.  It was dcc's debounce: typed fast, the text the page sent back put the caret
# where it had been a key before ('url contains "css"' typed at 5 ms a key came out scrambled).
PACKET_FILTER_JS = """function(_submit, _blur, value, applied) {
    var v = value || '';
    return v === (applied || '') ? window.dash_clientside.no_update : v;
}"""


def _key(k) -> dict:
    return k if isinstance(k, dict) else {}


def cb_connections(state: WebState, cid, version, tab):
    if tab != "connections":
        return no_update, no_update, no_update
    e = _ready(state, cid)
    if e is None:
        return views._empty_fig("Connections", "no capture analysed"), [], []
    try:
        return live_view.steady(e, lambda: (views.connections_figure(e), views.connection_rows(e), views.connection_notes(e)))
    except Exception as ex:  # noqa: BLE001
        if live_view.transient(e):
            return no_update, no_update, no_update
        return views._empty_fig("Connections", str(ex)), [], [html.Li(_err(ex))]


def cb_stats(state: WebState, cid, version, tab):
    if tab != "stats":
        return (no_update,) * 7
    e = _ready(state, cid)
    if e is None:
        empty = views._empty_fig("", "no capture analysed")
        return html.Div(), empty, empty, empty, empty, empty, []
    try:
        return live_view.steady(e, lambda: (
            # (the summary, and beside it the content breakdown's numbers: views.content_table)
            html.Div([html.Div(views._kv_table(views.stats_summary(e), "grid")), html.Div(views.content_table(e))],
                     className="cols", style={"gap": "24px", "alignItems": "flex-start"}),
            views.bytes_by_protocol_figure(e), views.bytes_by_content_figure(e),
            views.header_compression_figure(e), views.traffic_figure(e), views.in_flight_figure(e), views.header_compression_rows(e)))
    except Exception as ex:  # noqa: BLE001
        if live_view.transient(e):
            return (no_update,) * 7
        empty = views._empty_fig("", str(ex))
        return _err(ex, "statistics failed: "), empty, empty, empty, empty, empty, []


def cb_phs(state: WebState, cid, trigger=None):
    """The Statistics tab's protocol hierarchy: computed only when its button is pressed
    (``trigger`` "phs-go"), in the analysis workers (WebState.start_job); the section says
    "computing…" and polls (phs-poll) until it is done.  Returns (section, poll disabled,
    button disabled, button label)."""
    e = _ready(state, cid)
    if e is not None and trigger == "phs-go" and views.phs_none_text(e) is None:
        state.start_job(e, views.PHS_KEY, lambda: live_view.steady(e, lambda: views.protocol_hierarchy_of(e)))
    try:
        out, polling, off, label = views.phs_view(e, e.jobs.get(views.PHS_KEY) if e is not None else None)
    except Exception as ex:  # noqa: BLE001
        return html.Div(printable(f"protocol hierarchy failed: {ex.__class__.__name__}: {ex}"), className="error"), True, False, \
            "Compute again"
    return out, not polling, off, label


def _packet_state(cid, store) -> list[int]:
    """The packet numbers a per-capture store ({capture: [numbers]}: marks, time
    references) holds for capture ``cid``."""
    v = (store or {}).get(cid) if isinstance(store, dict) and cid else None
    return sorted({int(x) for x in v if isinstance(x, int) and x > 0}) if isinstance(v, list) else []


def _goto(goto) -> int | None:
    try:
        return int(goto) if goto else None
    except (TypeError, ValueError):
        return None


def _packets_shown(e, expr):
    """(packet numbers the filter keeps or None, the filter's message)."""
    try:
        numbers, ferr = views.packet_numbers(e, expr)
    except Exception as ex:  # noqa: BLE001
        numbers, ferr = None, f"{ex.__class__.__name__}: {ex}"
    if ferr:
        return numbers, html.Span("filter error: " + printable(ferr), className="error", id="packet-filter-error")
    n = views.packet_count(e)
    if numbers is None:
        return None, html.Span(f"{n:,} packets", className="status", id="packet-filter-count")
    return numbers, html.Span(f"{len(numbers):,} of {n:,} packets match", className="status", id="packet-filter-count")


def cb_packet_rows(state: WebState, request, cid, expr=None, time_format=None, marks=None, refs=None, goto=None):
    """The rows AG Grid's infinite row model asks for (``getRowsRequest``: startRow, endRow,
    sortModel) of the packets the filter keeps, sorted as asked, with the Time column in the
    chosen format and each row's marks — the grid scrolls through the whole capture, a block
    at a time, without pages.  The answer names the rows asked for (``startRow``, ``endRow``):
    the page gives it to that request (ROWS_JS)."""
    req = request if isinstance(request, dict) else {}
    asked = {"startRow": req.get("startRow"), "endRow": req.get("endRow")}
    e = _ready(state, cid)
    if e is None:
        return {"rowData": [], "rowCount": 0, **asked}, ""
    fmt = time_format if time_format in views.TIME_FORMATS else "relative"
    numbers, msg = _packets_shown(e, expr)
    def block():
        order, note = views.packet_order(e, numbers, req.get("sortModel"), fmt, _packet_state(cid, refs), expr or "")
        start = int(req.get("startRow") or 0)
        end = int(req.get("endRow") or start + 100)
        return order, note, views.packet_block(e, order, start, end, numbers, fmt, _packet_state(cid, refs),
                                               _packet_state(cid, marks), _goto(goto))

    try:
        order, note, rows = live_view.steady(e, block)
    except Exception as ex:  # noqa: BLE001
        return {"rowData": [], "rowCount": 0, **asked}, _err(ex, "cannot read packets: ")
    if note:
        msg = html.Span([msg, html.Span(" · " + note, className="error", id="packet-sort-note")])
    return {"rowData": rows, "rowCount": len(order), **asked}, msg


def cb_packet_goto(state: WebState, goto, cid, expr=None, request=None, time_format=None, refs=None):
    """"Go to packet" (or a packet link): where its row is in the list as shown (filtered,
    sorted), for the grid to scroll there: ``{index, count, n}``."""
    e = _ready(state, cid)
    g = _goto(goto)
    if e is None or g is None:
        return no_update
    numbers, _ = _packets_shown(e, expr)
    sort = request.get("sortModel") if isinstance(request, dict) else None
    fmt = time_format if time_format in views.TIME_FORMATS else "relative"
    order, _ = views.packet_order(e, numbers, sort, fmt, _packet_state(cid, refs), expr or "")
    if isinstance(order, range) or order is numbers:
        i = views.packet_position(e, numbers, g)
    else:
        i = next((k for k, n in enumerate(order) if n == g), None)
    if i is None:
        return no_update
    return {"index": i, "count": len(order), "n": g}


def cb_packet_where(state: WebState, goto, tab, cid, expr=None, request=None, time_format=None, refs=None, search=None, *,
                    triggered=()):
    """Where the packet list goes (``goto-pos``), while the Packets tab is shown: a go-to (or a
    packet link: ``packet-goto`` among ``triggered``) → its row (``cb_packet_goto``).  The tab
    shown again → the row of the packet selected, which is the address's ``pkt`` (the page writes
    the selection there, PACKET_URL_JS): the grid is made anew with each showing of the tab, and
    selects and shows it again (Wireshark keeps the selected packet in view); it scrolled to the
    last go-to, and selected nothing.  A new filter of the list that hides that packet:
    ``{index: None, n}`` — the page selects nothing (AG Grid kept the hidden row selected: its
    detail, and the address's pkt, stayed); one that keeps it: its new row with ``keep`` — the
    page shows and focuses that row once its block has come (the list went to the top and the
    focused cell stayed at the old row number, another packet's: the keys went on from it)."""
    if tab != "packets":
        return no_update
    if "packet-goto" in triggered:
        return cb_packet_goto(state, goto, cid, expr, request, time_format, refs)
    q = url_params(search)
    n = _goto(q.get("pkt")) if cid and q.get("capture") == cid else None
    if n is None:
        return no_update
    pos = cb_packet_goto(state, n, cid, expr, request, time_format, refs)
    if "packet-expr" not in triggered:
        return pos
    if pos is no_update:
        return {"index": None, "n": n} if _ready(state, cid) is not None else no_update
    return {**pos, "keep": True, "shows": [cid, expr or ""]}  # (the list the row is of: the page may not show it yet)


def _toggle(cid, store, n: int) -> dict:
    out = dict(store) if isinstance(store, dict) else {}
    have = set(_packet_state(cid, out))
    have ^= {n}
    out[cid] = sorted(have)
    return out


def _selected_packet(selected) -> int | None:
    if isinstance(selected, list) and selected and isinstance(selected[0], dict):
        return _goto(selected[0].get("no"))
    return None


def cb_mark(state: WebState, n_mark, n_ref, selected, cid, marks, refs, goto=None, trigger=None):
    """Mark / unmark (Ctrl-M) or set / unset a time reference on the selected packet (the
    packet gone to, when none is selected)."""
    if not (n_mark or n_ref) or _ready(state, cid) is None:
        return no_update, no_update, no_update
    n = _selected_packet(selected) or _goto(goto)
    if n is None:
        return no_update, no_update, html.Span("select a packet first", className="error", id="mark-done")
    if trigger == "btn-timeref":
        refs = _toggle(cid, refs, n)
        on = n in _packet_state(cid, refs)
        return no_update, refs, html.Span(f"packet {n}: {'time reference set' if on else 'time reference removed'} "
                                          "(Time: since the time reference)", className="status", id="mark-done")
    marks = _toggle(cid, marks, n)
    k = len(_packet_state(cid, marks))
    on = n in _packet_state(cid, marks)
    return marks, no_update, html.Span(f"packet {n} {'marked' if on else 'unmarked'} ({k} marked)", className="status", id="mark-done")


def cb_export_packets(state: WebState, what, cid, marks, expr):
    """"Export marked / displayed": those packets as pcapng (analyzer.pcapng_write, with the
    key log's secrets), when this version has that module."""
    e = _ready(state, cid)
    if e is None:
        return no_update, html.Span("nothing to export: no analysed capture", className="error")
    if not views.export_available():
        return no_update, html.Span("exporting packets needs wirefall.analyzer.pcapng_write, which this version lacks",
                                    className="error", id="mark-done")
    if what == "marked":
        nums = _packet_state(cid, marks)
        if not nums:
            return no_update, html.Span("no packet is marked (select one, Ctrl-M)", className="error", id="mark-done")
    else:
        numbers, _ = _packets_shown(e, expr)
        nums = list(range(1, e.analysis.packets + 1)) if numbers is None else list(numbers)
    try:
        data, name = views.export_packets(e, nums, what)
    except Exception as ex:  # noqa: BLE001
        return no_update, _err(ex, "packet export failed: ")
    return dcc.send_bytes(data, name), html.Span(f"{name}: {len(nums):,} packets, {fmt_size(len(data))}", className="status",
                                                 id="mark-done")


def cb_packet_detail(state: WebState, cid, selected, goto, trigger=None):
    """The detail tree and bytes of the packet selected in the grid (or gone to)."""
    e = _ready(state, cid)
    if e is None:
        return html.Div()
    number = _goto(goto) if trigger == "packet-goto" else _selected_packet(selected)
    try:
        return views.packet_detail_view(e, number)
    except Exception as ex:  # noqa: BLE001
        return _err(ex, f"cannot decode packet {number}: ")


# The captures compared (Compare tab: A and B) are in the address as ``ca`` and ``cb``, written by
# the page from the store ``compared`` (what Compare was last pressed on; the history entry
# replaced, as PACKET_URL_JS does), and put back when another callback wrote the address, so that
# a reload or a bookmark shows the comparison again (the layout's, compare_out_of).  Before, the
# tab came back empty: "Pick capture A and capture B".
COMPARE_KEYS = ("ca", "cb")
COMPARE_URL_JS = """function(compared, search) {
    if (!compared) { return window.dash_clientside.no_update; }
    var loc = window.location, q = new URLSearchParams(loc.search), want = {ca: compared.ca || null, cb: compared.cb || null};
    var names = Object.keys(want).filter(function (k) { return q.get(k) !== want[k]; });
    if (!names.length) { return window.dash_clientside.no_update; }
    var name = function (p) { return decodeURIComponent(p.split('=')[0]); };
    var parts = loc.search.replace(/^\\?/, '').split('&').filter(function (p) { return p && names.indexOf(name(p)) < 0; });
    names.forEach(function (k) { if (want[k]) { parts.push(k + '=' + encodeURIComponent(want[k])); } });  // (last: URL_ORDER)
    var next = parts.length ? '?' + parts.join('&') : '';
    window.history.replaceState(window.history.state, '', loc.pathname + next + loc.hash);
    return next;
}"""


def compare_out_of(state: WebState, search: str | None) -> tuple:
    """The Compare tab's first content and its ``compared`` store: the comparison of the
    address's ``ca`` and ``cb`` when both are analysed captures; else the hint (a capture still
    being analysed: press Compare once it is) and None."""
    q = url_params(search)
    a, b = (q.get(k) for k in COMPARE_KEYS)
    if a and b and _ready(state, a) is not None and _ready(state, b) is not None:
        return cb_compare(state, 1, a, b), {"ca": a, "cb": b}
    return cb_compare(state, None, None, None), None


def cb_compare(state: WebState, n_clicks, a, b):
    if not views.compare_available():
        return views.compare_view(None, None)
    if not n_clicks:
        return html.Div("Pick capture A and capture B, then press Compare.", className="hint")
    return views.compare_view(_ready(state, a), _ready(state, b))


def cb_export(state: WebState, fmt, cid, protocols, connections, contents, statuses, expr, *rest):
    order, xrange = rest if len(rest) == 2 else (None, *rest)  # (the order dropdown, the zoom)
    xrange = xrange_for(xrange, cid)
    e = _ready(state, cid)
    if e is None:
        return no_update, html.Span("nothing to export: no analysed capture", className="error")
    try:
        v = views.filtered_view(e, protocols, connections, contents, statuses, expr, order)
        data, name = views.export_bytes(e, v, fmt, xrange)
    except Exception as ex:  # noqa: BLE001
        return no_update, _err(ex, f"{fmt.upper()} export failed: ")
    return dcc.send_bytes(data, name), html.Span(f"{name}: {fmt_size(len(data))}", className="status", id="export-done")


# ------------------------------------------------------------------------------ layout


def _dd(id_, placeholder, multi=True):
    return dcc.Dropdown(id=id_, options=[], value=[], multi=multi, placeholder=placeholder, className="filter-dd")


def _grid(id_: str, columns, numeric=(), tips=None):
    """A small table (all its rows in the page): AG Grid's client-side rows, sorted and
    filtered in the browser (a filter row under the header), at most 15 rows high then
    scrolled (the rows outside the view are not drawn).  ``tips``: a column's header tooltip
    (what its figure is)."""
    tips = tips or {}
    cols = [{"field": k, "headerName": n, **({"filter": "agNumberColumnFilter", "type": "numericColumn"} if k in numeric else {}),
             **({"headerTooltip": tips[k]} if k in tips else {})}
            for k, n in columns]
    return AgGrid(id=id_, columnDefs=cols, rowData=[], className="grid-wrap",
                  defaultColDef={"sortable": True, "filter": True, "floatingFilter": True, "resizable": True, "minWidth": 70,
                                 "tooltipValueGetter": {"function": "params.value"}},
                  columnSize="autoSize", dashGridOptions={"domLayout": "autoHeight", "animateRows": False, "tooltipShowDelay": 500,
                                                          "pagination": True, "paginationPageSize": 50,
                                                          "paginationPageSizeSelector": False},
                  style={"width": "100%"})


PACKET_GRID_OPTIONS = {
    "rowSelection": {"mode": "singleRow", "checkboxes": False, "enableClickSelection": True},
    "cacheBlockSize": 200, "maxBlocksInCache": 40, "maxConcurrentDatasourceRequests": 1, "infiniteInitialRowCount": 1,
    "blockLoadDebounceMillis": 60, "rowBuffer": 20, "rowHeight": 24, "headerHeight": 30, "animateRows": False,
    "getRowStyle": {"function": "wirefallRowStyle(params)"}, "tooltipShowDelay": 500,
}


def packet_grid():
    """The packet list: AG Grid's infinite row model asks cb_packet_rows for the rows it
    is about to show, so a capture of any size scrolls as one list (no pages); a click on
    a column header sorts (on the server, the whole list)."""
    widths = {"no": 90, "time": 200, "source": 170, "destination": 170, "protocol": 100, "length": 90}
    cols = [{"field": k, "headerName": n, **({"width": widths[k]} if k in widths else {"flex": 1, "minWidth": 300}),
             **({"type": "numericColumn"} if k in ("no", "length") else {}), "tooltipField": k if k == "info" else None}
            for k, n in views.PACKET_COLUMNS]
    return AgGrid(id="packets", columnDefs=[{k: v for k, v in c.items() if v is not None} for c in cols],
                  rowModelType="infinite", getRowId="wirefallRowId(params)",
                  eventListeners={"cellFocused": ["wirefallFocusSelects(params)"]},  # (PAGE_JS)
                  defaultColDef={"sortable": True, "resizable": True, "filter": False},
                  rowClassRules={"pkt-marked": "wirefallHas(params, 'marked')", "pkt-goto": "wirefallHas(params, 'goto')",
                                 "pkt-ref": "wirefallHas(params, 'ref')"},
                  dashGridOptions=PACKET_GRID_OPTIONS, className="packet-grid", style={"height": "58vh", "width": "100%"})


def page_search() -> str | None:
    """The query string of the page that asked for the layout (its Referer: the layout is
    fetched by the page, same origin, so the Referer is the page's whole address), None
    outside a request or without one."""
    import flask

    if not flask.has_request_context():
        return None
    ref = flask.request.referrer
    if not ref:
        return None
    q = urlsplit(ref).query
    return "?" + q if q else ""


def _known(state: WebState, cid):
    """``cid`` when it names a capture of ``state``, else None (an address's stale id)."""
    return cid if cid and state.get(cid) is not None else None


def layout(state: WebState):
    limits = {"capture": state.upload_limit, "keylog": state.keylog_limit}
    # The first poll's answer (the capture list, the capture the address names or the first,
    # its status and version) is in the layout: the filters' options, the selection and the
    # waterfall are then the page's first callbacks, one round trip after the layout, where
    # they waited for the poll's answer (a round trip more).  The poll answers "no change"
    # to it (cb_poll compares with the page's values).
    search = page_search()
    options, cid, status, prog, pstyle, version, *_ = cb_poll(state, None, None, None, None, None, search)
    # the packet filter of the address (pf) is the layout's, not a callback's: an answer coming while
    # the person types in the box would overwrite what was typed
    pf = url_params(search).get("pf", "")
    wf_expr = url_params(search).get("filter", "")
    ca, cb = (url_params(search).get(k) for k in COMPARE_KEYS)  # (the captures compared: COMPARE_URL_JS)
    compared_view, compared = compare_out_of(state, search)  # (the waterfall's filter: the same, PACKET_FILTER_JS)
    version = None if version is no_update else version
    export_title = ("write" if views.export_available() else
                    "(needs wirefall.analyzer.pcapng_write, which this version lacks) write")
    upload_style: dict[str, str] = {}
    return html.Div([
        dcc.Location(id="url", refresh=False),
        html.Header([
            html.H1("wirefall"),
            dcc.Dropdown(id="capture", options=options, value=cid, clearable=False, placeholder="capture", style={"minWidth": "420px"}),
            html.Progress(id="progress", max=100, value=prog, style=pstyle),  # type: ignore[arg-type]  # dash types value as str; a number is valid HTML and what cb_poll sends
            *harpages.controls(),  # a HAR of several pages: the page shown
            html.Div(status, id="status"),
            *live_view.controls(),  # Stop and Save of a live capture
        ]),
        html.Div([
            dcc.Upload(id="up-capture", children=html.Div(["Upload a capture (pcap / pcapng, ≤ ", fmt_size(state.upload_limit), ")"]),
                       className="upload", style=upload_style, multiple=False),
            html.Span(id="up-capture-msg"),
            dcc.Upload(id="up-keylog", children=html.Div("Upload its key log (optional)"), className="upload", style=upload_style,
                       multiple=False),
            html.Span(id="up-keylog-msg"),
            html.Button("Analyse upload", id="btn-open", title="analyse the uploaded capture with its key log; a key log alone: "
                                                             "analyse the open capture again with it"),
            html.Span(id="open-msg"),
            *overlay.upload_controls(),  # a browser log laid over the open capture
        ], className="uploads"),
        html.Div("Waterfall: one bar per request, click one for its headers and packets · Connections: TCP/UDP connections and "
                 "why any was not decrypted · Statistics: bytes, header compression, traffic · Packets: the packet list and "
                 "each packet's fields · Compare: two captures side by side.  The state of the page is in its address: "
                 "bookmark or reload it.", className="newcomer", id="newcomer"),
        dcc.Tabs(id="tabs", value="waterfall", children=[
            dcc.Tab(label="Waterfall", value="waterfall", children=html.Div([
                html.Div([
                    _dd("f-protocol", "protocol"), _dd("f-connection", "connection"), _dd("f-content", "content type"),
                    _dd("f-status", "status"),
                    dcc.Input(id="filter-expr", type="text", value=wf_expr, placeholder='filter, e.g. status >= 400 || url contains "css"'),
                    dcc.Dropdown(id="wf-order", options=[{"label": l, "value": k} for k, l in views.ORDER_LABELS.items()],
                                 value="start", clearable=False, className="filter-dd", style={"minWidth": "170px"}),
                    html.Span(id="shown-count", className="status"),
                ], className="bar"),
                html.Div(id="filter-error"),
                html.Div(id="wf-explain"),
                html.Div([html.Span("Export what is shown: ")] +
                         [html.Button(f.upper(), id=f"export-{f}") for f in views.EXPORT_FORMATS] +
                         [html.Span(id="export-msg")], className="bar"),
                html.Div([  # a big view: a window of rows at a time (cb_wf_window)
                    html.Button("⏮ first", id="wf-first"), html.Button("◀ previous rows", id="wf-prev", title="PgUp at the top"),
                    html.Button("next rows ▶", id="wf-next", title="PgDn at the bottom"), html.Button("last ⏭", id="wf-last"),
                    html.Span(" from request "),
                    dcc.Input(id="wf-row", type="number", min=1, step=1, debounce=True, style={"width": "80px"}),
                    html.Span(id="wf-rows-text", className="status"),
                ], className="bar", id="wf-pager", style={"display": "none"}),
                html.Div([
                    html.Div(dcc.Loading(dcc.Graph(id="waterfall", config={"displaylogo": False, "scrollZoom": False,
                                                                           "modeBarButtonsToRemove": ["select2d", "lasso2d"]}),
                                         type="dot", delay_show=400), className="wf-main"),
                    html.Div([html.Button("✕ close", id="detail-close", title="close the request's detail"),
                              html.Div(id="request-detail")], className="wf-side none", id="detail-side"),
                ], className="wf-split"),
            ], className="tabpane")),
            dcc.Tab(label="Connections", value="connections", children=html.Div([
                dcc.Graph(id="conn-fig", config={"displaylogo": False}),
                _grid("conn-table", views.CONNECTION_COLUMNS, numeric=views.CONNECTION_NUMERIC, tips=views.CONNECTION_TIPS),
                html.H4("Notes and warnings"), html.Ul(id="conn-notes"),
            ], className="tabpane")),
            dcc.Tab(label="Statistics", value="stats", children=html.Div([
                html.Div(id="stats-summary"),
                html.Details([  # (computed when asked for: cb_phs)
                    html.Summary("Protocol hierarchy (Wireshark's Statistics → Protocol Hierarchy)", style={"fontWeight": 600}),
                    html.Div([html.Button("Compute protocol hierarchy", id="phs-go",
                                          title="count every packet's protocols (reads each packet's headers again)")],
                             className="bar"),
                    html.Div(html.Div("Not computed yet.", className="hint"), id="phs-out"),
                    dcc.Interval(id="phs-poll", interval=400, disabled=True),
                ], id="phs-section", open=True, style={"margin": "6px 0"}),
                html.Div([html.Div(dcc.Graph(id="st-proto"), className="col"), html.Div(dcc.Graph(id="st-content"), className="col")],
                         className="cols"),
                dcc.Graph(id="st-headers"),
                _grid("st-headers-table", views.HEADER_COLUMNS, numeric=views.HEADER_NUMERIC),
                dcc.Graph(id="st-traffic"),
                dcc.Graph(id="st-inflight"),
            ], className="tabpane")),
            dcc.Tab(label="Packets", value="packets", children=html.Div([
                html.Div([html.Span("Go to packet "), html.Div(dcc.Input(id="packet-goto", type="number", min=1, debounce=True),
                                                              style={"width": "150px"}),
                          # applied on Enter or on leaving the box (PACKET_FILTER_JS → packet-expr), and not debounced
                          # by dcc: its debounce put the caret back where it was a key before once the page's timers
                          # lagged the keys (typed at 5 ms a key: 'frame.len > 140 and0'), with or without the server
                          dcc.Input(id="packet-filter", type="text", value=pf, style={"width": "360px", "fontFamily": "monospace"},
                                    placeholder='filter, e.g. tcp.port == 443 || http2.streamid == 1'),
                          html.Span("Time"),
                          dcc.Dropdown(id="time-format", options=[{"label": v, "value": k} for k, v in views.TIME_FORMATS.items()],
                                       value="relative", clearable=False, searchable=False, style={"minWidth": "330px"}),
                          html.Span(id="packet-filter-msg")], className="bar"),
                html.Div([html.Button("Mark / unmark (Ctrl-M)", id="btn-mark", title="mark the selected packet (as Wireshark's Ctrl-M)"),
                          html.Button("Set / unset time reference", id="btn-timeref",
                                      title="times of the packets after it count from it (Time: since the time reference)"),
                          html.Button("Export marked", id="export-marked", disabled=not views.export_available(),
                                      title=export_title + " the marked packets as pcapng"),
                          html.Button("Export displayed", id="export-displayed", disabled=not views.export_available(),
                                      title=export_title + " the packets the filter keeps as pcapng"),
                          html.Span(id="mark-msg")], className="bar"),
                packet_grid(),
                html.Div(id="packet-detail"),
            ], className="tabpane")),
            expert_view.tab(),
            dcc.Tab(label="Compare", value="compare", children=html.Div([
                html.Div([html.Span("A"), dcc.Dropdown(id="compare-a", options=options, value=_known(state, ca), style={"minWidth": "360px"}),
                          html.Span("B"), dcc.Dropdown(id="compare-b", options=options, value=_known(state, cb), style={"minWidth": "360px"}),
                          html.Button("Compare", id="btn-compare")], className="bar"),
                html.Div(compared_view, id="compare-out"),
            ], className="tabpane")),
        ]),
        dcc.Interval(id="poll", interval=600), dcc.Store(id="poll-go"), dcc.Store(id="poll-done"),  # (POLL_GATE_JS)
        dcc.Store(id="version", data=version), dcc.Store(id="selected"), dcc.Store(id="xrange"), dcc.Store(id="wf-window", data=0), dcc.Store(id="limits", data=limits),
        dcc.Store(id="wf-beside"), dcc.Store(id="wf-width"), dcc.Store(id="detail-shown"),
        html.Button(id="wf-beside-check", style={"display": "none"}),  # (PAGE_JS: a resize across DETAIL_BESIDE_MIN, or to another 100 px step)
        dcc.Store(id="url-ready"), dcc.Store(id="marks", data={}), dcc.Store(id="timerefs", data={}), dcc.Store(id="packets-refresh"), dcc.Store(id="packets-asked"),
        dcc.Store(id="packet-expr", data=pf), dcc.Store(id="wf-expr", data=wf_expr), dcc.Store(id="compared", data=compared), dcc.Store(id="packets-rows"),
        dcc.Store(id="goto-pos"), dcc.Store(id="goto-done"),
        dcc.Store(id="connections-key"), dcc.Store(id="stats-key"), dcc.Store(id="expert-key"), dcc.Store(id="packet-detail-key"),
        dcc.Store(id="up-capture-ok"), dcc.Store(id="up-keylog-ok"), dcc.Store(id="staged-capture"), dcc.Store(id="staged-keylog"),
        dcc.Store(id="up-capture-busy"), dcc.Store(id="up-keylog-busy"),
        dcc.Download(id="download"),
    ])


TABS = ("waterfall", "connections", "stats", "packets", "expert", "compare")


def _side(cid, out, search: str | None = None):
    """cb_select's answer as the selection store (``{capture, id}``: keyed by the capture,
    see ``selected_for``), the class of the panel beside the waterfall (hidden while no
    request is selected: the waterfall has the whole width) and, given the address
    ``search`` (a click), the address with the selection."""
    xid, detail = out
    if xid is no_update:
        return no_update, detail, "wf-side none", no_update
    new = search_with_sel(search, cid, xid) if search is not None else None
    return ({"capture": cid, "id": xid}, detail, "wf-side" if xid is not None else "wf-side none",
            new if new is not None and new != search else no_update)


def _trigger() -> str | None:
    t = dash.ctx.triggered_id
    return t if isinstance(t, str) else None


def _triggered() -> list[str]:
    """The ids of all the inputs that fired (a page just opened fires several at once)."""
    return [k.rsplit(".", 1)[0] for k in dash.ctx.triggered_prop_ids]


def _named(name: str, f):
    f.__name__ = f.__qualname__ = name
    return f


def is_loopback(host: str) -> bool:
    h = (host or "").strip().strip("[]").lower()
    if h == "localhost":
        return True
    try:
        return ipaddress.ip_address(h).is_loopback
    except ValueError:
        return False


LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1")
WILDCARDS = ("", "0.0.0.0", "::")


def allowed_hosts(host: str):
    """A test of a request's Host (or Origin) name: the loopback names, the ``--host``
    value, and — listening on every interface (0.0.0.0, ::) — any IP address and this
    machine's own names (a rebound DNS name is none of these)."""
    mine = {h.lower() for h in LOOPBACK_NAMES}
    h = (host or "").strip().strip("[]").lower()
    mine.add(h)
    wildcard = h in WILDCARDS
    if wildcard:
        for n in (socket.gethostname(), socket.getfqdn()):
            if n:
                mine.add(n.lower())

    def ok(name: str | None) -> bool:
        if not name:
            return False
        name = name.lower().rstrip(".")
        if name in mine:
            return True
        try:
            ip = ipaddress.ip_address(name)
        except ValueError:
            return False
        return wildcard or ip.is_loopback

    return ok


def _hostname(netloc: str) -> str | None:
    try:
        return urlsplit("//" + netloc).hostname
    except ValueError:
        return None


_DEFAULT_PORT = {"http": 80, "https": 443}


def same_port(origin: str, host: str, scheme: str) -> bool:
    """Whether the page that sent ``Origin`` names the port of the request's Host (the scheme's
    default where none is written): a page of another local server (e.g. localhost:3000) names
    a loopback host too, but not this server's port.  (Its host name is checked apart.)"""
    try:
        oport = urlsplit(origin).port or _DEFAULT_PORT.get(urlsplit(origin).scheme)
        hport = urlsplit("//" + host).port or _DEFAULT_PORT.get(scheme)
    except ValueError:
        return False
    return oport == hport


def token_cookie(port: int | None) -> str:
    return f"wirefall_token_{port}" if port else "wirefall_token"


def install_guard(server, host: str = "127.0.0.1", token: str | None = None, port: int | None = None) -> None:
    """A Flask ``before_request`` hook on the Dash server: 403 unless the Host (and an Origin,
    if sent) is an address it serves on; with a ``token``, 403 unless the request carries it
    (cookie, or ``?token=`` — a GET with it is redirected to the same URL without it, the
    cookie set: HttpOnly, SameSite=Strict)."""
    from flask import Response, redirect, request

    ok = allowed_hosts(host)
    cookie = token_cookie(port)

    def refuse(why: str):
        return Response(f"wirefall web: {why}\n", status=403, mimetype="text/plain")

    @server.before_request
    def _guard():
        if not ok(_hostname(request.host)):
            return refuse("this server answers only to the addresses it listens on (Host header refused)")
        origin = request.headers.get("Origin")
        if origin is not None and not (ok(_hostname(urlsplit(origin).netloc) if "://" in origin else None)
                                       and same_port(origin, request.host, request.scheme)):
            return refuse("requests from another site's page are refused (Origin header)")
        if not token:
            return None
        got = request.cookies.get(cookie)
        if got and secrets.compare_digest(got, token):
            return None
        q = request.args.get("token")
        if q and secrets.compare_digest(q, token):
            if request.method != "GET":
                return None
            args = request.args.to_dict(flat=False)
            args.pop("token", None)
            resp = redirect(request.path + ("?" + urlencode(args, doseq=True) if args else ""), code=302)
            resp.set_cookie(cookie, token, httponly=True, samesite="Strict", path="/")
            return resp
        return refuse("this server wants its access token: open the address it printed at start (…/?token=…)")


def install_upload_route(server, state: WebState) -> None:
    """``POST /_wirefall/upload/KIND`` (raw bytes; the browser's file name URL-encoded in
    ``X-Wirefall-Name``; ``?replaces=TOKEN``): written to the private folder as it arrives
    (``WebState.stage_stream``).  Answers ``{token, name, size}`` or ``{error, message}``."""
    from flask import jsonify, request

    @server.route(UPLOAD_ROUTE + "<kind>", methods=["POST"])
    def _upload(kind: str):
        if kind not in ("capture", "keylog"):
            return jsonify(error="kind", message="unknown upload kind"), 404
        limit = state.upload_limit if kind == "capture" else state.keylog_limit
        name = unquote(request.headers.get("X-Wirefall-Name") or "upload")
        try:
            if request.content_length is not None and request.content_length > limit:
                raise state._too_large(kind, _display_name(name), request.content_length)  # before a byte is read
            # this route only (callbacks keep the small server-wide cap); stage_stream counts the bytes itself
            request.max_content_length = limit + UPLOAD_CHUNK
            st = state.stage_stream(kind, name, request.stream, length=request.content_length,
                                    replaces=request.args.get("replaces") or None)
        except UploadError as ex:
            return jsonify(error="refused", message=str(ex)), 200
        except Exception as ex:  # noqa: BLE001 - a broken connection, a full disk: a message in the page
            return jsonify(error="failed", message=f"the upload failed: {ex.__class__.__name__}: {ex}"), 200
        return jsonify(st)


CALLBACK_MAX_BYTES = 8 << 20  # a callback request (uploads go to the upload route)


def install_compression(server) -> bool:
    """gzip/brotli responses (Dash's JavaScript bundles are 6 MB uncompressed) with
    flask-compress; False when it is not installed (the app still works, uncompressed)."""
    try:
        from flask_compress import Compress
    except ImportError:
        return False
    server.config.setdefault("COMPRESS_MIMETYPES", ["text/html", "text/css", "text/javascript", "application/javascript",
                                                    "application/json", "image/svg+xml"])
    server.config.setdefault("COMPRESS_MIN_SIZE", 1024)
    server.config.setdefault("COMPRESS_ALGORITHM", ["br", "gzip"])
    bundles.compress_config(server.config)  # the static bundles compressed once, not for every page
    Compress(server)
    return True


class WirefallDash(dash.Dash):
    """The Dash app whose page loads dash-ag-grid's bundle only when a grid is drawn
    (``bundles.lazy_ag_grid``), and not dash_table's (``bundles.without_dash_table``)."""

    def interpolate_index(self, **kwargs):
        kwargs["scripts"] = bundles.without_dash_table(bundles.lazy_ag_grid(kwargs.get("scripts", "")))
        return super().interpolate_index(**kwargs)


def create_app(state: WebState, host: str = "127.0.0.1", token: str | None = None, port: int | None = None) -> dash.Dash:
    # update_title=None is documented by Dash ("Set to None or '' ...") but annotated str
    app = WirefallDash(__name__, title="wirefall", update_title=None, serve_locally=True, assets_folder="__no_assets__")  # type: ignore[arg-type]
    app.index_string = INDEX.replace("PLOTLY_PRELOAD", app.config.requests_pathname_prefix + bundles.PLOTLY_PATH).replace(
        "DCC_PRELOAD", app.config.requests_pathname_prefix + "_dash-component-suites/dash/dcc/")
    app.server.config["MAX_CONTENT_LENGTH"] = CALLBACK_MAX_BYTES
    install_compression(app.server)
    install_guard(app.server, host=host, token=token, port=port)
    bundles.install_plotly(app.server)  # plotly.js's basic build (bar, scatter) where dcc loads the full one
    bundles.install_polyfill(app.server)  # of babel's polyfill, only the regenerator runtime runs
    install_upload_route(app.server, state)
    app.layout = _named("serve_layout", lambda: layout(state))
    S = state

    def bind(f):
        return _named(f.__name__, lambda *args: f(S, *args))

    app.callback(
        Output("capture", "options"), Output("capture", "value"), Output("status", "children"), Output("progress", "value"),
        Output("progress", "style"), Output("version", "data"), Output("compare-a", "options"), Output("compare-b", "options"),
        Output("live-version", "data"), Output("poll-done", "data"),
        Input("poll-go", "data"), State("capture", "value"), State("capture", "options"), State("version", "data"),
        State("status", "children"), State("url", "search"), State("live-version", "data"),
    )(bind(cb_poll_tick))
    app.clientside_callback(POLL_GATE_JS, Output("poll-go", "data"), Input("poll", "n_intervals"), State("poll-go", "data"),
                            State("poll-done", "data"))
    app.callback(
        Output("capture", "value", allow_duplicate=True), Output("wf-expr", "data", allow_duplicate=True), Output("tabs", "value"),
        Output("xrange", "data", allow_duplicate=True), Output("packet-goto", "value"),
        Output("url-ready", "data"), Output("wf-order", "value"), Output("time-format", "value"), Output("filter-expr", "value"),
        Input("url", "pathname"), State("url", "search"), State("wf-expr", "data"), prevent_initial_call="initial_duplicate",
    )(_named("cb_url_in", lambda *a: (lambda out: (*out, out[1]))(cb_url_in(S, *a))))  # (the box shows what is applied)
    app.callback(
        Output("url", "search"),
        Input("capture", "value"), Input("wf-expr", "data"), Input("tabs", "value"), Input("xrange", "data"),
        Input("selected", "data"), Input("packet-goto", "value"), Input("url-ready", "data"), State("url", "search"),
        Input("f-protocol", "value"), Input("f-connection", "value"), Input("f-content", "value"), Input("f-status", "value"),
        Input("wf-order", "value"), Input("time-format", "value"), State("packet-expr", "data"), State("packet-detail-key", "data"),
        prevent_initial_call=True,
    )(_named("cb_url_out", lambda *a: cb_url_out(S, *a[:-1], goto_changed="packet-goto" in _triggered(), packet_key=a[-1])))
    app.clientside_callback(PACKET_URL_JS, Output("url", "search", allow_duplicate=True),
                            Input("packet-detail-key", "data"), Input("packet-expr", "data"), Input("url", "search"),
                            prevent_initial_call=True)
    app.callback(
        Output("tabs", "value", allow_duplicate=True), Output("packet-goto", "value", allow_duplicate=True),
        Input({"type": "pkt", "n": ALL}, "n_clicks"), prevent_initial_call=True,
    )(bind(cb_packet_link))
    for kind in ("capture", "keylog"):
        app.callback(Output("open-msg", "children", allow_duplicate=True), Input(f"up-{kind}", "contents"),
                     prevent_initial_call=True)(_named(f"cb_clear_{kind}", lambda *a: cb_clear_messages(S, *a)))

    for kind in ("capture", "keylog"):
        app.clientside_callback(
            SIZE_CHECK_JS.replace("__KIND__", kind),
            Output(f"up-{kind}-ok", "data"), Input(f"up-{kind}", "contents"), State(f"up-{kind}", "filename"), State("limits", "data"),
            State(f"staged-{kind}", "data"), prevent_initial_call=True,
        )
        app.callback(
            Output(f"staged-{kind}", "data"), Output(f"up-{kind}-msg", "children"), Output(f"up-{kind}-ok", "data", allow_duplicate=True),
            Output(f"up-{kind}-busy", "data", allow_duplicate=True),  # (the check ended: CHECKING_JS)
            Input(f"up-{kind}-ok", "data"), State("limits", "data"), State(f"staged-{kind}", "data"), prevent_initial_call=True,
        )(_named(f"cb_stage_{kind}", lambda d, lim, prev, k=kind: (*cb_stage(S, k, d, lim, prev), no_update if not d else None)))
        app.clientside_callback(
            CHECKING_JS.replace("__LABEL__", "a new capture" if kind == "capture" else "a new key log"),
            Output(f"up-{kind}-msg", "children", allow_duplicate=True), Output(f"up-{kind}-busy", "data"),
            Input(f"up-{kind}", "contents"), State(f"up-{kind}", "filename"), prevent_initial_call=True,
        )

    app.callback(
        Output("capture", "value", allow_duplicate=True), Output("open-msg", "children"),
        Input("btn-open", "n_clicks"), State("staged-capture", "data"), State("staged-keylog", "data"), State("capture", "value"),
        State("up-capture-busy", "data"), State("up-keylog-busy", "data"),
        prevent_initial_call=True,
    )(bind(cb_open))
    overlay.register(app, S)
    harpages.register(app, S)
    live_view.register(app, S)

    filters = [Input("f-protocol", "value"), Input("f-connection", "value"), Input("f-content", "value"), Input("f-status", "value"),
               Input("wf-expr", "data"), Input("wf-order", "value")]
    app.callback(
        Output("f-protocol", "options"), Output("f-connection", "options"), Output("f-content", "options"), Output("f-status", "options"),
        Output("f-protocol", "value"), Output("f-connection", "value"), Output("f-content", "value"), Output("f-status", "value"),
        Input("capture", "value"), Input("version", "data"), State("url", "search"),
    )(_named("cb_filter_options", lambda cid, ver, search: cb_filter_options(S, cid, ver, _trigger(), search)))
    # the waterfall's window and its figure in one callback (cb_wf)
    app.callback(
        Output("wf-window", "data"), Output("wf-pager", "style"), Output("wf-rows-text", "children"),
        Output("waterfall", "figure"), Output("filter-error", "children"), Output("shown-count", "children"), Output("wf-explain", "children"),
        *[Input(b, "n_clicks") for b in WF_PAGE_BUTTONS], Input("wf-row", "value"),
        Input("capture", "value"), Input("version", "data"), *filters, Input("selected", "data"),
        Input("live-version", "data"),  # a live capture grew (ui.web.live): the figure drawn again
        State("xrange", "data"), State("wf-window", "data"), State("url", "search"),
        Input("wf-beside", "data"),  # the detail beside the graph or not: the figure laid out for its width
        Input("wf-width", "data"),  # the graph's width (no detail beside it): the row labels' room
    )(_named("cb_wf", lambda *a: cb_wf(S, *a[:14], *a[15:-2], triggered=_triggered(), beside=a[-2], graph_px=a[-1])))
    # (live-version, a[14], only triggers)
    app.clientside_callback(BESIDE_JS, Output("wf-beside", "data"), Input("selected", "data"), Input("url", "pathname"),
                            Input("wf-beside-check", "n_clicks"), State("wf-beside", "data"))
    app.clientside_callback(GRAPH_WIDTH_JS, Output("wf-width", "data"), Input("url", "pathname"),
                            Input("wf-beside-check", "n_clicks"), State("wf-width", "data"))
    app.clientside_callback(DETAIL_SHOWN_JS, Output("detail-shown", "data"), Input("detail-side", "className"), prevent_initial_call=True)
    app.clientside_callback(XRANGE_JS, Output("xrange", "data"), Input("waterfall", "relayoutData"), State("xrange", "data"),
                            State("capture", "value"), prevent_initial_call=True)
    # a click's selection is written to the address in the same answer as its detail (by
    # cb_url_out alone, the address followed one request later: a page read in between had the
    # detail but not the address)
    app.callback(
        Output("selected", "data"), Output("request-detail", "children"), Output("detail-side", "className"),
        Output("url", "search", allow_duplicate=True),
        Input("waterfall", "clickData"), Input("capture", "value"), Input("version", "data"),
        *[State(i.component_id, i.component_property) for i in filters], State("selected", "data"), State("url", "search"),
        Input("detail-close", "n_clicks"),
        prevent_initial_call="initial_duplicate",
    )(_named("cb_select", lambda click, cid, _v, protocols, connections, contents, statuses, expr, order, selected, search, _close: _side(
        cid, cb_select(S, click, cid, protocols, connections, contents, statuses, expr, order, trigger=_trigger(), selected=selected,
                       search=search), search if _trigger() in ("waterfall", "detail-close") else None)))

    for tab in ("connections", "stats"):
        app.clientside_callback(tab_key_js(tab, live=True), Output(f"{tab}-key", "data"),
                                Input("capture", "value"), Input("version", "data"), Input("live-version", "data"), Input("tabs", "value"),
                                State(f"{tab}-key", "data"))
    app.callback(Output("conn-fig", "figure"), Output("conn-table", "rowData"), Output("conn-notes", "children"),
                 Input("connections-key", "data"), prevent_initial_call=True)(
        _named("cb_connections", lambda k: cb_connections(S, _key(k).get("capture"), _key(k).get("version"), "connections")))
    app.callback(Output("stats-summary", "children"), Output("st-proto", "figure"), Output("st-content", "figure"),
                 Output("st-headers", "figure"), Output("st-traffic", "figure"), Output("st-inflight", "figure"),
                 Output("st-headers-table", "rowData"),
                 Input("stats-key", "data"), prevent_initial_call=True)(
        _named("cb_stats", lambda k: cb_stats(S, _key(k).get("capture"), _key(k).get("version"), "stats")))
    app.callback(Output("phs-out", "children"), Output("phs-poll", "disabled"), Output("phs-go", "disabled"),
                 Output("phs-go", "children"),
                 Input("phs-go", "n_clicks"), Input("stats-key", "data"), Input("phs-poll", "n_intervals"), State("capture", "value"),
                 prevent_initial_call=True)(
        _named("cb_phs", lambda _n, _k, _i, cid: cb_phs(S, cid, trigger=_trigger())))
    app.callback(Output("packets-rows", "data"), Output("packet-filter-msg", "children"),
                 Input("packets", "getRowsRequest"), State("capture", "value"), State("packet-expr", "data"),
                 State("time-format", "value"), State("marks", "data"), State("timerefs", "data"), State("packet-goto", "value"),
                 prevent_initial_call=True)(bind(cb_packet_rows))
    app.clientside_callback(ROWS_JS, Output("packets", "getRowsResponse"), Input("packets-rows", "data"),
                            State("packets", "getRowsRequest"), prevent_initial_call=True)
    # the filter typed is applied on Enter, or on leaving the box (as dcc's debounce did)
    app.clientside_callback(PACKET_FILTER_JS, Output("wf-expr", "data"), Input("filter-expr", "n_submit"),
                            Input("filter-expr", "n_blur"), State("filter-expr", "value"), State("wf-expr", "data"),
                            prevent_initial_call=True)
    app.clientside_callback(PACKET_FILTER_JS, Output("packet-expr", "data"), Input("packet-filter", "n_submit"),
                            Input("packet-filter", "n_blur"), State("packet-filter", "value"), State("packet-expr", "data"),
                            prevent_initial_call=True)
    # what the rows show changed: the grid asks again for the rows it holds (a new filter or
    # capture: from the top); AG Grid keeps its scroll position and selection.  The same capture
    # and filter set again is no change: the address's answer (cb_url_in) re-sets the capture
    # the layout already chose, and on a busy server it came after the person had scrolled (a
    # Ctrl-End thrown back to the top, tests/test_web_grid.py in CI).  The grid remembers what
    # it was last told to show (a grid made anew, the tab shown again, asks for its rows itself).
    app.clientside_callback(
        """function(cid, expr, fmt, marks, refs, goto) {
            var t = (window.dash_clientside.callback_context.triggered || []).map(function (x) { return x.prop_id; }).join(' ');
            try {
                var api = window.dash_ag_grid.getApi('packets'), shows = JSON.stringify([cid, expr || '']);
                var fresh = /capture|packet-expr/.test(t) && api.wirefallShows !== shows;
                api.wirefallShows = shows;
                if (fresh) {
                    // (another capture: its packet of the selected number is not the one selected, which AG Grid
                    // would keep selected by the row's id; a new filter that hides the selected packet: cb_packet_where)
                    if (/capture/.test(t) && api.getSelectedNodes().length) { api.deselectAll(); }
                    // (the row the filter before kept: cb_packet_where tells this one's — its answer may have come first)
                    if (api.wirefallKeep && api.wirefallKeep.shows !== shows) { api.wirefallKeep = null; }
                    api.purgeInfiniteCache(); api.ensureIndexVisible(0, 'top');
                }
                else if (/time-format|marks|timerefs|packet-goto/.test(t)) { api.refreshInfiniteCache(); }
            } catch (e) { /* the Packets tab is not shown: the grid asks for its rows when it is */ }
            return t;
        }""",
        Output("packets-refresh", "data"),
        Input("capture", "value"), Input("packet-expr", "data"), Input("time-format", "value"), Input("marks", "data"),
        Input("timerefs", "data"), Input("packet-goto", "value"), prevent_initial_call=True,
    )
    # the grid's first request is asked with the capture and filter it then shows: what the
    # refresh above compares with (a grid just made has been told nothing yet)
    app.clientside_callback(
        """function(req, cid, expr) {
            try {
                var api = window.dash_ag_grid.getApi('packets');
                if (api.wirefallShows === undefined) { api.wirefallShows = JSON.stringify([cid, expr || '']); }
            } catch (e) { /* not shown */ }
            return window.dash_clientside.no_update;
        }""",
        Output("packets-asked", "data"), Input("packets", "getRowsRequest"), State("capture", "value"), State("packet-expr", "data"),
        prevent_initial_call=True,
    )
    app.callback(Output("goto-pos", "data"), Input("packet-goto", "value"), Input("tabs", "value"), State("capture", "value"),
                 Input("packet-expr", "data"), State("packets", "getRowsRequest"), State("time-format", "value"),
                 State("timerefs", "data"), State("url", "search"), prevent_initial_call=True)(
        _named("cb_packet_where", lambda *a: cb_packet_where(S, *a, triggered=_triggered())))
    # the grid is made anew each time the Packets tab is shown, and dash-ag-grid gives it the
    # selection it had (selectedRows) before its rows exist: its getRowId (ours, a function it
    # cannot evaluate) gave it no id, the loading row has none yet either, so that row was
    # selected — AG Grid's warning #60 ("cannot select node until it has finished loading") —
    # and then nothing.  The tab left, the grid has no selection to be given; the shown tab's
    # packet is selected again once its row has come (cb_packet_where and the go-to below).
    app.clientside_callback(
        """function(tab, sel) {
            return tab === 'packets' || sel === null || sel === undefined ? window.dash_clientside.no_update : null;
        }""",
        Output("packets", "selectedRows"), Input("tabs", "value"), State("packets", "selectedRows"), prevent_initial_call=True,
    )
    # the grid scrolls to the row gone to once it exists (a packet link opens the tab and goes at
    # once); when it is the packet whose detail is shown (a go-to, a link, an address's pkt, the
    # selected packet on the tab shown again) it is also selected and focused, as a click would:
    # a reloaded address shows its packet selected, and the keys go on from it (wirefallFocusRow).
    # A new filter that keeps the selected packet (pos.keep): its new row is shown and focused
    # once the block holding it has come (wirefallKeepInView, called again as each block comes:
    # ROWS_JS) — not at once, the rows of the filter before may still be the ones shown.
    app.clientside_callback(
        """function(pos, key) {
            if (!pos) { return window.dash_clientside.no_update; }
            var select = (__KEY_PACKET__)(key) === pos.n;
            window.dash_ag_grid.getApiAsync('packets').then(function (api) {
                if (pos.index === null) {  // the filter hides the packet selected: nothing is selected (its detail and pkt go)
                    var s = api.getSelectedNodes();
                    if (s.length && s[0].data && s[0].data.no === pos.n) { api.deselectAll(); }
                    return;
                }
                if (pos.keep) {
                    api.wirefallKeep = {index: pos.index, n: pos.n, shows: JSON.stringify(pos.shows)};
                    window.wirefallKeepInView(api);
                    return;
                }
                // Whether the row is to be selected: its packet is the detail's (the key given with the
                // position), or becomes it — the address's pkt, which the page writes from that key.  On a
                // busy page this callback can run before the key's own callback has taken the go-to or the
                // reloaded address (CI, session 33: the detail showed the packet, nothing was selected);
                // the address is then awaited for WANT_MS, and a row selected meanwhile (another pkt) wins.
                var waited = 0, WANT_MS = 5000;
                function wanted() { return select || new URLSearchParams(window.location.search).get('pkt') === String(pos.n); }
                // a grid just shown knows one row until its first block arrives: scroll once it knows the row
                var tries = 0;
                (function go() {
                    if (api.isDestroyed && api.isDestroyed()) { return; }
                    if (api.getDisplayedRowCount() > pos.index || ++tries > 600) {
                        api.ensureIndexVisible(pos.index, 'middle');
                        tries = 0;
                        pick();
                    }
                    else { setTimeout(go, 50); }
                })();
                function pick() {  // (the row's block is asked for by the scroll: select it once it came)
                    if (api.isDestroyed && api.isDestroyed()) { return; }
                    var node = api.getDisplayedRowAtIndex(pos.index);
                    if (!node || !node.data) { if (++tries < 1200) { setTimeout(pick, 25); } return; }
                    if (node.data.no !== pos.n) { return; }
                    if (!wanted()) { if ((waited += 25) < WANT_MS) { setTimeout(pick, 25); } return; }
                    node.setSelected(true, true);
                    window.wirefallFocusRow(api, pos.index, pos.n);
                }
            });
            return pos.n;
        }""".replace("__KEY_PACKET__", KEY_PACKET_JS),
        Output("goto-done", "data"), Input("goto-pos", "data"), State("packet-detail-key", "data"), prevent_initial_call=True,
    )
    app.callback(Output("marks", "data"), Output("timerefs", "data"), Output("mark-msg", "children"),
                 Input("btn-mark", "n_clicks"), Input("btn-timeref", "n_clicks"), State("packets", "selectedRows"),
                 State("capture", "value"), State("marks", "data"), State("timerefs", "data"), State("packet-goto", "value"),
                 prevent_initial_call=True)(
        _named("cb_mark", lambda nm, nr, sel, cid, marks, refs, goto: cb_mark(S, nm, nr, sel, cid, marks, refs, goto, trigger=_trigger())))
    app.callback(Output("download", "data", allow_duplicate=True), Output("mark-msg", "children", allow_duplicate=True),
                 Input("export-marked", "n_clicks"), Input("export-displayed", "n_clicks"), State("capture", "value"),
                 State("marks", "data"), State("packet-expr", "data"), prevent_initial_call=True)(
        _named("cb_export_packets", lambda _m, _d, *a: cb_export_packets(S, (_trigger() or "export-displayed").split("-", 1)[1], *a)))
    app.clientside_callback(PACKET_DETAIL_KEY_JS, Output("packet-detail-key", "data"),
                            Input("capture", "value"), Input("packets", "selectedRows"), Input("packet-goto", "value"),
                            Input("tabs", "value"), State("packet-detail-key", "data"))
    app.callback(Output("packet-detail", "children"), Input("packet-detail-key", "data"), prevent_initial_call=True)(
        _named("cb_packet_detail", lambda k: cb_packet_detail(S, _key(k).get("capture"), _key(k).get("sel"), _key(k).get("goto"),
                                                              trigger=_key(k).get("t"))))
    app.callback(Output("compare-out", "children"), Output("compared", "data"), Input("btn-compare", "n_clicks"), State("compare-a", "value"),
                 State("compare-b", "value"), prevent_initial_call=True)(  # (the layout holds its first answer)
        _named("cb_compare", lambda n, a, b: (cb_compare(S, n, a, b), {"ca": a, "cb": b} if n and a and b else no_update)))
    app.clientside_callback(COMPARE_URL_JS, Output("url", "search", allow_duplicate=True), Input("compared", "data"),
                            Input("url", "search"), prevent_initial_call=True)
    expert_view.register(app, S, _ready)
    app.callback(
        Output("download", "data"), Output("export-msg", "children"),
        *[Input(f"export-{f}", "n_clicks") for f in views.EXPORT_FORMATS],
        State("capture", "value"), *[State(i.component_id, i.component_property) for i in filters], State("xrange", "data"),
        prevent_initial_call=True,
    )(_named("cb_export", lambda *a: cb_export(S, (_trigger() or "export-png").split("-", 1)[1], *a[len(views.EXPORT_FORMATS):])))
    return app


def address(host: str, port: int) -> str:
    h = f"[{host}]" if ":" in host else host
    return f"http://{h}:{port}/"

