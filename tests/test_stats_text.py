"""``wirefall stats``' text tables: what a cell says where a number does not apply."""
from __future__ import annotations

from conftest import SAMPLES

from wirefall.analyzer import stats as S
from wirefall.analyzer.pipeline import analyze


def _row(text: str, table: str, first: str) -> list[str]:
    block = text.split(table, 1)[1].split("\n\n", 1)[0]
    line = next(ln for ln in block.splitlines() if ln.split() and ln.split()[0] == first)
    return line.split()


def test_tls_overhead_is_a_dash_on_quic_not_zero():
    """QUIC's packet protection is not TLS records and is not counted: its TLS-overhead cell says
    "-" (it said "0 / 0", which reads as "no overhead"); TLS over TCP keeps its numbers."""
    h3 = S.compute(analyze(str(SAMPLES / "page/page-h3.pcapng"), keylogs=[str(SAMPLES / "page/page-h3.keys")]))
    text = S.render_text(h3)
    head = [h for h in text.split("Traffic (", 1)[1].splitlines()[1].split("  ") if h.strip()]
    row = _row(text, "Traffic (", "h3")
    # protocol conns reqs push packets(3) wire(3) payload(3) then the TLS cell
    assert row[13] == "-", row
    assert "TLS overhead" in [h.strip() for h in head]
    conn = next(c for c in h3.connections if (c.protocol or "").startswith("h3"))
    assert conn.tls_record_overhead == [0, 0]  # (the JSON keeps its number, documented as QUIC's 0)
    h2 = S.compute(analyze(str(SAMPLES / "page/page-h2.pcapng"), keylogs=[str(SAMPLES / "page/page-h2.keys")]))
    row = _row(S.render_text(h2), "Traffic (", "h2")
    blk = h2.protocols["h2"].tls_record_overhead
    assert blk[0] > 0 and row[13:16] == [f"{blk[0]:,}", "/", f"{blk[1]:,}"], row
