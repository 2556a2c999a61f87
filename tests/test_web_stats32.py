"""The web app's summary table says what a QUIC load's retransmissions are (session 32): an
HTTP/3 load read "retransmissions c→s / s→c 0 / 0", as if nothing had been sent twice.  Now the
TCP row is TCP's ("– (no TCP connection)" without one) and the QUIC rows are what the capture
shows: its STREAM/CRYPTO data carried again and its packet numbers missing.

The truth: tshark's QUIC frames and packet numbers (tests/test_stats_quic32b._tshark_quic)."""
from __future__ import annotations

from test_stats_quic32b import LOSSY_H3, _missing, _tshark_quic

from conftest import SAMPLES


def _summary(path, keys) -> dict:
    from wirefall.ui.web import WebState, views

    st = WebState(use_cache=False)
    try:
        e = st.add_file(str(path), [str(keys)])
        st.wait(e.id, 120)
        assert e.status == "done", e.error
        return dict(views.stats_summary(e))
    finally:
        st.close()


def test_http3_load_says_quic_figures_not_tcp_zero():
    keys = LOSSY_H3.with_suffix(".keys")
    rows = _summary(LOSSY_H3, keys)
    truth = _tshark_quic(LOSSY_H3, keys)
    (port,) = {p for p, _d in truth}
    again = [truth[(port, d)]["again"] for d in (0, 1)]
    missing = [_missing(truth[(port, d)]["pns"]) for d in (0, 1)]
    assert "retransmissions c→s / s→c" not in rows
    assert rows["TCP retransmissions c→s / s→c"] == "– (no TCP connection)"
    assert rows["QUIC data carried again c→s / s→c (bytes)"] == "{:,} / {:,}".format(*again)
    assert rows["QUIC packet numbers missing c→s / s→c (lost before the capture point, or skipped)"] == "{:,} / {:,}".format(*missing)
    assert missing == [0, 11]


def test_tcp_load_keeps_its_row():
    rows = _summary(SAMPLES / "page" / "page-h2.pcapng", SAMPLES / "page" / "page-h2.keys")
    assert "retransmissions c→s / s→c" in rows and not any(k.startswith("QUIC") for k in rows)
