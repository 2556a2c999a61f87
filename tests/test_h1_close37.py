"""A close-delimited HTTP/1 response (RFC 9112 6.3 item 8: no Content-Length, not chunked)
ends where the server closed the stream — its TCP FIN once every byte before it is in, or over
TLS its close_notify — not at its last body byte: only the close tells the browser it was the
last (docs/JSON.md, since 2026-12-06).  Without a close in the capture the body is cut: error,
``lower_bound``.  tshark is the oracle for where the FIN and the close_notify are."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import dpkt
import pytest

from wirefall.analyzer.pipeline import analyze

SAMPLES = Path(__file__).resolve().parents[1] / "sample_captures"
NODE = SAMPLES / "http" / "http1-node.pcap"  # GET /close answered HTTP/1.0-style: 43 body bytes (the last 13 in packet 8), then the FIN (10)
TLS = sorted(p for p in (SAMPLES / "tls").glob("*.pcap") if p.with_suffix(".keys").exists())

pytestmark = pytest.mark.skipif(shutil.which("tshark") is None, reason="tshark not installed")


def _fields(path: Path, keys: Path | None, *fields: str, yfilter: str = "") -> list[list[str]]:
    cmd = ["tshark", "-n", "-r", str(path), "-T", "fields", "-E", "separator=|"]
    if keys is not None:
        cmd += ["-o", f"tls.keylog_file:{keys}"]
    if yfilter:
        cmd += ["-Y", yfilter]
    for f in fields:
        cmd += ["-e", f]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    return [line.split("|") for line in out.splitlines() if line]


def _close_framed(an):
    """The exchanges whose response body is close-delimited, with their BODY frame (or None)."""
    out = []
    for e in an.exchanges:
        body = [f for f in an.frames if f.type == "BODY" and f.direction == 1 and (f.fields or {}).get("exchange") == e.id]
        if body and body[0].fields["framing"] == "close":
            out.append((e, body[0]))
    return out


def _rewrite(src: Path, dst: Path, order: list[int]) -> None:
    """``dst``: the packets of ``src`` numbered in ``order`` (1-based), each with its own time."""
    with open(src, "rb") as f:
        r = dpkt.pcap.Reader(f)
        pkts = list(r)
        link = r.datalink()
    with open(dst, "wb") as f:
        w = dpkt.pcap.Writer(f, linktype=link)
        for n in order:
            ts, buf = pkts[n - 1]
            w.writepkt(buf, ts=ts)


def test_ends_at_the_servers_fin_as_tshark(tmp_path):
    an = analyze(str(NODE))
    (e, body), = _close_framed(an)
    fin = _fields(NODE, None, "frame.number", "frame.time_epoch", "tcp.srcport", yfilter="tcp.flags.fin==1 && tcp.srcport==18086")
    data = _fields(NODE, None, "frame.number", yfilter="tcp.len>0 && tcp.srcport==18086 && tcp.stream==0")
    assert int(data[-1][0]) == 8 < int(fin[0][0]) == 10  # (the body's last byte, then a bare FIN 1.4 ms later)
    assert e.response_end_packet == body.packet == 10
    assert e.response_end == pytest.approx(float(fin[0][1]), abs=1e-6)
    assert e.response_body_bytes == body.fields["payload"] == 43 and e.error is None
    assert not (e.sources or {}).get("response_body_bytes") and not body.fields.get("incomplete")
    # tshark shows the response at that FIN
    http = _fields(NODE, None, "frame.number", yfilter="http.response && tcp.stream==0")
    assert [int(r[0]) for r in http] == [10]


@pytest.mark.parametrize("path", TLS, ids=lambda p: p.stem)
def test_over_tls_ends_at_the_servers_close_notify(path):
    keys = path.with_suffix(".keys")
    an = analyze(str(path), keylogs=[str(keys)])
    framed = _close_framed(an)
    if not framed:
        pytest.skip("no close-delimited response")
    alerts = _fields(path, keys, "frame.number", "frame.time_epoch", "tcp.srcport", "tcp.stream", "tls.alert_message.desc",
                     yfilter="tls.alert_message.desc == 0")
    for e, body in framed:
        c = an.connections[e.connection]
        theirs = [(int(n), float(t)) for n, t, sport, _, _ in alerts if int(sport) == c.server[1]]
        later = [x for x in theirs if x[0] > body.first_packet]
        assert later, "tshark shows the server's close_notify"
        assert (e.response_end_packet, body.packet) == (later[0][0], later[0][0])
        assert e.response_end == pytest.approx(later[0][1], abs=1e-6)
        assert e.error is None and not body.fields.get("incomplete")


def test_capture_ending_before_the_close_cuts_the_body(tmp_path):
    cut = tmp_path / "cut.pcap"
    _rewrite(NODE, cut, list(range(1, 10)))  # up to the client's ACK of the last body byte: no FIN
    an = analyze(str(cut))
    (e, body), = _close_framed(an)
    assert e.response_end_packet == body.packet == 8  # (where the capture last saw it)
    assert body.fields.get("incomplete") is True
    assert e.sources["response_body_bytes"] == "lower_bound" and e.response_body_bytes == 43
    assert e.error == "body incomplete: delimited by the connection's close, which the capture does not show"


def test_fin_before_the_last_bytes_ends_where_they_come(tmp_path):
    """The FIN captured before the body's last segment (reordered): the stream closes when the
    bytes before it are in — at the late segment's packet, as the receiver reads it."""
    swapped = tmp_path / "swapped.pcap"
    order = list(range(1, 8)) + [10, 9, 8] + list(range(11, 13))  # FIN (now 8), an ACK (9), the last 13 bytes (10)
    _rewrite(NODE, swapped, order)
    an = analyze(str(swapped))
    (e, body), = _close_framed(an)
    assert e.response_end_packet == body.packet == 10
    assert e.response_body_bytes == 43 and e.error is None and not body.fields.get("incomplete")


def test_a_second_close_changes_nothing(tmp_path):
    """A retransmitted FIN (and the client's FIN) after the close: the body ended once, at the first."""
    again = tmp_path / "again.pcap"
    _rewrite(NODE, again, list(range(1, 13)) + [10])
    an = analyze(str(again))
    (e, body), = _close_framed(an)
    assert e.response_end_packet == body.packet == 10
    assert [f.type for f in an.frames if (f.fields or {}).get("exchange") == e.id].count("BODY") == 1
