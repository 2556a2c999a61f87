"""The prefixed integer of HPACK (RFC 7541 s5.1), which QPACK uses as it is (RFC 9204
s4.1.1): one home for HTTP/2's header-block walks, HTTP/3's bound on a block and the
lenient QPACK decoder.  A module of its own: importing ``dissectors.http2`` loads the
``hpack`` library, which a QUIC capture does not need."""
from __future__ import annotations

# continuation bytes add 7 bits each: past this shift a value needs more than 62 bits (QUIC's
# varints, and every length these protocols carry, fit in 62): a hostile run of 0x80 bytes
MAX_SHIFT = 62


def prefix_int(buf, p: int, n: int) -> tuple[int, int]:
    """The integer at ``buf[p]`` with an ``n``-bit prefix: (value, offset after it).
    IndexError when ``buf`` ends inside it; ValueError when it runs past 62 bits."""
    m = (1 << n) - 1
    v = buf[p] & m
    p += 1
    if v < m:
        return v, p
    shift = 0
    while True:
        b = buf[p]
        p += 1
        v += (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return v, p
        if shift > MAX_SHIFT:
            raise ValueError("HPACK/QPACK integer longer than 62 bits")
