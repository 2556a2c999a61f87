"""A waterfall must be true, complete or say what is missing (session s7-truth)."""
from __future__ import annotations

from wirefall.dissectors.http1 import H1Connection


def _head(fields: int, pad: int = 0) -> bytes:
    return (b"GET /x HTTP/1.1\r\nHost: a.example\r\n" + b"".join(b"X-F%d: v\r\n" % i for i in range(fields - 1))
            + (b"X-Pad: " + b"p" * pad + b"\r\n" if pad else b"") + b"\r\n")


def test_http1_limits_write_one_note_per_cause():
    """A head over the field count is one note (it was two: "head has more than N header
    fields" and the same error again); over the size, one; over both, one for each."""
    for fields, pad, want in ((50, 0, ["more than 20 header fields"]), (5, 3000, ["longer than 1000 bytes"]),
                              (50, 3000, ["more than 20 header fields", "longer than 1000 bytes"])):
        p = H1Connection(max_head=1000, max_fields=20)
        ev = p.receive(0, _head(fields, pad), 1, 0)
        assert len(ev) == 1 and len(ev[0].headers) == min(fields + (1 if pad else 0), 20)
        assert len(p.notes) == len(want) and all(w in n for w, n in zip(want, p.notes)), p.notes
