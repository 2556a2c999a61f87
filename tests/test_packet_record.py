"""One packet record for every frontend: ``wirefall packets -Y EXPR`` as text and as JSON,
the TUI packet list (Textual pilot, the filter bar) and the web packet list (its grid
callback, in process) show the same packets for the same expression, each with the columns
of ``analyzer.packet_record.packet_record``; the packets are tshark's where the expression
reads fields tshark has."""
from __future__ import annotations

import asyncio
import contextlib
import io
import json
import shutil
import subprocess
from pathlib import Path

import pytest

from wirefall.analyzer.capture import PacketSource
from wirefall.analyzer.detail import packet_row
from wirefall.analyzer.packet_record import PacketRecord, packet_record, sort_packets, time_text, time_value

ROOT = Path(__file__).resolve().parents[1]
H2 = ROOT / "sample_captures" / "page" / "page-h2.pcapng"
H2K = H2.with_suffix(".keys")
TSHARK = shutil.which("tshark")

# (expression, tshark's expression or None where it is wirefall's own name)
EXPRESSIONS = [
    ("connection == 0", None),  # issue 22: 0 rows as text, 64 as JSON
    ("tcp.srcport == 59833", "tcp.srcport == 59833"),
    ("http2.streamid == 1", "http2.streamid == 1"),
    ("tcp.flags.syn == 1 || tcp.flags.fin == 1", "tcp.flags.syn == 1 || tcp.flags.fin == 1"),
    ("frame.len > 1000 && !(tcp.len == 0)", "frame.len > 1000 && !(tcp.len == 0)"),
    ('info contains "HEADERS"', None),
    ("tls.record.content_type == 22", "tls.record.content_type == 22"),
    ("nosuchpacket == 1 || frame.number > 100000", None),  # (an error: the CLI says so, nothing is listed)
]


@pytest.fixture(scope="module")
def analysis():
    from wirefall.analyzer.pipeline import analyze

    return analyze(str(H2), [str(H2K)])


def _cli(analysis, *argv) -> tuple[int, str]:
    """``wirefall ARGV`` in this process (the analysis made once), its exit code and stdout."""
    from wirefall.ui import cli

    real = cli.load
    cli.load = lambda args, **kw: analysis
    out, err = io.StringIO(), io.StringIO()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            rc = cli.main(list(argv))
    finally:
        cli.load = real
    return rc, out.getvalue()


def _tui_numbers(exprs: list[str]) -> dict[str, list[int]]:
    """The packets the TUI's packet list shows after each expression is typed in the filter bar."""
    from wirefall.ui.tui.app import WirefallApp
    from wirefall.ui.tui.widgets import PacketList

    got: dict[str, list[int]] = {}

    async def run():
        app = WirefallApp(str(H2), [str(H2K)])
        async with app.run_test(size=(160, 40)) as pilot:
            for _ in range(400):
                await pilot.pause(0.05)
                if app.loaded or app.load_error:
                    break
            assert app.loaded
            pl = app.query_one(PacketList)
            for expr in exprs:
                await pilot.press("f")
                app.query_one("#filter").value = expr
                await pilot.press("enter")
                for _ in range(200):
                    await pilot.pause(0.05)
                    if f"filter: {expr}" in str(app.query_one("#status").render()):
                        break
                else:
                    raise AssertionError(f"the TUI did not filter {expr!r}")
                got[expr] = list(pl.packets)
                for i in range(min(pl.count, 5)):  # the lines drawn are the records'
                    rec = packet_record(app.an, app.source, pl.packets[i])
                    line = pl.cached_line(i)[0]
                    assert line.startswith(f"{rec.number:>7} {rec.relative:>11.6f} {rec.source}") and line.endswith(rec.info[-40:])

    asyncio.run(run())
    return got


def _web_numbers(exprs: list[str]) -> dict[str, list[int]]:
    """The packets the web packet list's grid callback returns for each expression (every
    block), each row checked against the record."""
    from wirefall.ui.web import WebState
    from wirefall.ui.web.app import cb_packet_rows

    st = WebState(use_cache=False)
    try:
        e = st.add_file(str(H2), [str(H2K)], name="page-h2.pcapng")
        st.wait(e.id)
        assert e.status == "done", e.error
        got: dict[str, list[int]] = {}
        src = PacketSource(str(H2))
        try:
            for expr in exprs:
                nums: list[int] = []
                while True:
                    resp, _ = cb_packet_rows(st, {"startRow": len(nums), "endRow": len(nums) + 500, "sortModel": []}, e.id, expr)
                    rows = resp["rowData"]
                    for r in rows[:3]:
                        rec = packet_record(e.analysis, src, r["no"])
                        assert (r["source"], r["destination"], r["protocol"], r["length"], r["info"]) == \
                            (rec.source, rec.destination, rec.protocol, rec.length, rec.info)
                        assert r["time"] == f"{rec.relative:.6f}"
                    nums += [r["no"] for r in rows]
                    if not rows or len(nums) >= resp["rowCount"]:
                        break
                got[expr] = nums
        finally:
            src.close()
        return got
    finally:
        st.close()


def test_the_record_is_the_row_and_the_json(analysis):
    src = PacketSource(str(H2))
    try:
        ts = analysis.index.ts
        for n in (1, 2, 17, analysis.packets):
            r = packet_record(analysis, src, n)
            assert isinstance(r, PacketRecord) and r.row() == packet_row(analysis, src, n)
            assert r.time == ts[n - 1] and r.relative == ts[n - 1] - ts[0] and r.delta == (ts[n - 1] - ts[n - 2] if n > 1 else 0.0)
            c = analysis.index.conn[n - 1]
            assert r.connection == (c if c >= 0 else None)
            assert list(r.json()) == ["packet", "time", "relative_time", "source", "destination", "protocol", "length", "info", "connection"]
        # with the colouring rules: tshark's rule name for the packet
        from wirefall.analyzer.colouring import colourer

        c = colourer(analysis, src)
        assert packet_record(analysis, src, 1, c).colour[0] == "TCP SYN/FIN"
    finally:
        src.close()


def test_time_formats_and_sorting_from_the_record(analysis):
    """The shared Time column: relative, UTC, delta from the previous displayed packet, since
    the time reference; sorting by a column is stable."""
    ts = analysis.index.ts
    shown = [3, 7, 8, 20]
    assert time_value(analysis, 8, "delta", shown) == ts[7] - ts[6] and time_value(analysis, 20, "delta", shown) == ts[19] - ts[7]
    assert time_value(analysis, 3, "delta", shown) == 0.0
    assert time_text(analysis, 7, "reference", shown, [7]) == "*REF*" and time_value(analysis, 20, "reference", shown, [7]) == ts[19] - ts[6]
    assert time_value(analysis, 3, "reference", shown, [7]) == ts[2] - ts[0]  # before the first reference: since the first packet
    assert time_text(analysis, 1, "absolute").startswith("20") and len(time_text(analysis, 1, "absolute")) == 26
    src = PacketSource(str(H2))
    try:
        nums = list(range(1, 61))
        by_len = sort_packets(analysis, src, nums, "length")
        assert by_len == sorted(nums, key=lambda k: analysis.index.origlen[k - 1])
        by_proto = sort_packets(analysis, src, nums, "protocol", descending=True)
        assert by_proto == sorted(nums, key=lambda k: packet_record(analysis, src, k).protocol, reverse=True)
        with pytest.raises(ValueError, match="filter first"):
            sort_packets(analysis, src, nums, "info", text_limit=10)
    finally:
        src.close()


@pytest.mark.skipif(TSHARK is None, reason="tshark not installed")
def test_packets_filter_selects_the_same_packets_everywhere(analysis):
    """`packets -Y EXPR` as text, as JSON, the TUI and the web app: the same packets, for
    each expression (and tshark's, where the expression is Wireshark's)."""
    exprs = [e for e, _ in EXPRESSIONS]
    good = [e for e in exprs if not e.startswith("nosuch")]
    tui = _tui_numbers(good)
    web = _web_numbers(good)
    nonempty = 0
    for expr, theirs in EXPRESSIONS:
        rc_t, text = _cli(analysis, "packets", str(H2), "--keylog", str(H2K), "-Y", expr)
        rc_j, js = _cli(analysis, "packets", str(H2), "--keylog", str(H2K), "-Y", expr, "--json")
        if expr.startswith("nosuch"):
            assert rc_t == rc_j == 2 and not text and not js  # an unknown field: refused, nothing listed
            continue
        assert rc_t == rc_j == 0, expr
        by_text = [int(ln.split()[0]) for ln in text.splitlines()]
        recs = json.loads(js)
        by_json = [r["packet"] for r in recs]
        assert by_text == by_json == tui[expr] == web[expr], expr
        nonempty += bool(by_json)
        assert len(by_json) < analysis.packets, expr
        if theirs is not None:
            out = subprocess.run([TSHARK, "-r", str(H2), "-o", f"tls.keylog_file:{H2K}", "-Y", theirs, "-T", "fields", "-e", "frame.number"],
                                 capture_output=True, text=True, check=True, timeout=120).stdout
            assert by_json == [int(x) for x in out.split()], expr
        # each text line and JSON object is the record of its packet
        src = PacketSource(str(H2))
        try:
            for ln, obj in list(zip(text.splitlines(), recs))[:20]:
                rec = packet_record(analysis, src, obj["packet"])
                assert obj == json.loads(json.dumps(rec.json()))
                assert ln.split()[:2] == [str(rec.number), f"{rec.relative:.6f}"] and ln.endswith(rec.info)
        finally:
            src.close()
    assert nonempty == len(good)


@pytest.mark.skipif(TSHARK is None, reason="tshark not installed")
@pytest.mark.parametrize("rel", ["page/page-h2.pcapng", "http/h2c-node.pcap", "quic/page-h3-late.pcapng"])
def test_packets_json_relative_time_is_tsharks_to_the_microsecond(rel):
    """``relative_time`` printed float noise (5.0067901611328125e-05 for tshark's 0.000050:
    review 24, C2); now each packet's is tshark's frame.time_relative to the microsecond."""
    path = ROOT / "sample_captures" / rel
    truth = subprocess.run([TSHARK, "-n", "-r", str(path), "-T", "fields", "-e", "frame.time_relative"],
                           capture_output=True, text=True, check=True).stdout.split()
    from wirefall.ui import cli

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(io.StringIO()):
        assert cli.main(["packets", str(path), "--json"]) == 0
    got = [p["relative_time"] for p in json.loads(buf.getvalue())]
    assert len(got) == len(truth)
    assert got == [round(float(t), 6) for t in truth]
    assert all(len(repr(t)) <= 10 for t in got if t)  # (no float noise: at most 6 decimals)
