"""QUIC's variable-length integer (RFC 9000 s16), which HTTP/3 uses as it is for its stream
types, frame types and lengths and settings (RFC 9114): one home for the QUIC dissector's
packet Length, HTTP/3's stream and frame headers and SETTINGS, and the analyzer's QUIC header
fields, detail tree, transport parameters and protocol hierarchy.  A module of its own, as
``prefix_int`` (HPACK/QPACK's integer) is, so that every layer reads it from here without
loading a dissector.

The encoding (RFC 9000 s16, Table 4): the two most significant bits of the first byte give
the base-2 logarithm of the integer's length in bytes (00: 1, 01: 2, 10: 4, 11: 8), the
remaining bits and the bytes that follow are the value in network byte order: 6, 14, 30 or
62 bits (at most 4611686018427387903).  An encoding longer than it needs is read as it is
(0x4025 is 37, as 0x25 is: RFC 9000 Appendix A.1 ``decodes to 37``); whether a field may use
one is the caller's business.

A cut integer (``buf`` ends inside it, or ``p`` is at or past its end): IndexError, as
indexing past the end raises it; nothing past ``len(buf)`` is read.  Callers whose contract
differs wrap it thinly: HTTP/3's ``_varint`` and the TLS tree's ``_varint_at`` return None,
the protocol hierarchy's ``_varint`` a huge value (see each).

Why not a library's (the project's rule: a well-kept library before hand-written code):
aioquic's ``Buffer.pull_uint_var`` (C) reads this encoding, but only as a cursor over a
``Buffer`` that holds its own copy of the bytes.  One integer at an offset then costs a
``Buffer`` (a copy of the whole buffer), ``seek``, ``pull_uint_var`` and ``tell``: 330-570 ns a
read over the integers the five callers read in the QUIC sample captures, against 110-160 ns
here (session 37's timeit); it takes read-only buffers only (HTTP/3's stream heads are bytearrays: one more copy);
and a cut integer raises ``BufferReadError`` (a ValueError) where every caller here expects
IndexError.  Where a caller walks a whole packet's frames in order it does serve, and is used:
``dissectors.quic``'s ``_frames`` reads every frame's integers with it.  pylsqpack offers no
integer reader (its QPACK integers live inside ls-qpack's C, behind ``Decoder``)."""
from __future__ import annotations

_MASK62 = (1 << 62) - 1


def quic_varint(buf, p: int) -> tuple[int, int]:
    """The variable-length integer at ``buf[p]`` (``p`` >= 0): (value, offset after it).
    IndexError when ``buf`` ends inside it or before it."""
    b = buf[p]
    # (one branch a length, shortest first: most integers are one or two bytes; four are read
    # byte by byte, cheaper than slicing a bytearray for int.from_bytes; a cut one raises
    # IndexError from the first missing byte)
    if b < 0x40:
        return b, p + 1
    if b < 0x80:
        return (b & 0x3F) << 8 | buf[p + 1], p + 2
    if b < 0xC0:
        return (b & 0x3F) << 24 | buf[p + 1] << 16 | buf[p + 2] << 8 | buf[p + 3], p + 4
    end = p + 8
    if end > len(buf):
        raise IndexError("QUIC variable-length integer cut")
    return int.from_bytes(buf[p:end], "big") & _MASK62, end
