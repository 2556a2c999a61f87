"""Lenient QPACK (RFC 9204) decoding for a capture that joined an HTTP/3 connection mid-way.

The QPACK state of such a connection is unknown: the dynamic table holds entries inserted
before the capture, the encoder stream is seen from the middle (without its type byte), the
peer's SETTINGS (the table capacity, hence MaxEntries, which the encoded Required Insert
Count is taken modulo of) were not seen.  ``pylsqpack`` cannot serve here: its decoder
refuses a block that refers to an entry it lacks (it reports the stream blocked, for ever)
and cannot be given a table that starts at an unknown absolute index.  So this is written by
hand, as ``LenientHpack`` in dissectors/http2.py is for HPACK; the static table comes from
pylsqpack itself (decoded once at import), Huffman strings from hpack's decoder (the same
code, RFC 9204 §4.1.2).

What is known, and how:

- The static table, always.
- Entries the encoder stream inserts during the capture, in order (captured entry k =
  0, 1, ...).  Their absolute index is ``start + k`` for an unknown ``start``.  An encoder
  must set a block's Required Insert Count (RIC) to one more than the largest absolute index
  it refers to (§4.5.1.1), and encoders insert an entry in order to refer to it: so the first
  header block that arrives after insertions no block referred to yet is taken to refer to
  the newest of them, which pins ``start`` = RIC - (entries captured) (modulo 2 x MaxEntries,
  all that the encoded count gives).  A later block whose RIC is beyond the captured
  entries shows the pin was too low and raises it (counted in ``repins``).
- MaxEntries = floor(capacity / 32): the capacity from the peer's SETTINGS if seen, else
  the encoder's Set Dynamic Table Capacity instruction if seen, else each of
  ``CAPACITY_GUESSES`` is followed in parallel and the one with the fewest inconsistencies
  (an encoded count beyond 2 x MaxEntries, a reference at or beyond the RIC, a re-pin) is
  used (ties: the first in the list).
- A reference to an entry not captured is ``<unknown>``: an indexed line gives the name
  ``<unknown>`` and an empty value, a literal with such a name reference the name
  ``<unknown>`` and its literal value, as ``LenientHpack`` (and Wireshark) show them.

Entries are bounded in bytes (oldest dropped first; a reference to a dropped one is
``<unknown>``).  Bytes of the encoder stream are tracked per captured entry so that a block
can be charged with the insertions it depends on that no earlier block was charged with
(``charge``).
"""
from __future__ import annotations

from collections import deque

from pylsqpack import Decoder

# (one copy for the exact and the lenient decoder, in http3, which imports this module only
# for a connection joined mid-way)
from .http3 import MAX_CHARGE_POINTS, required_insert_count  # noqa: F401  (required_insert_count: also read here by callers)
from .prefix_int import prefix_int

UNKNOWN = b"<unknown>"


def _static_table() -> tuple:
    """RFC 9204 Appendix A, as pylsqpack decodes indexed static field lines 0..98."""
    lines = b"".join(bytes([0xC0 | i]) if i < 63 else bytes([0xFF, i - 63]) for i in range(99))
    _, headers = Decoder(0, 0).feed_header(0, b"\0\0" + lines)
    return tuple((bytes(k), bytes(v)) for k, v in headers)


STATIC_TABLE = _static_table()
assert len(STATIC_TABLE) == 99 and STATIC_TABLE[17] == (b":method", b"GET")

# Capacities tried when neither SETTINGS nor a Set Dynamic Table Capacity instruction was
# seen: aioquic's (and the RFC's example) 4096, Chromium's 64 KiB, then other powers of two.
CAPACITY_GUESSES = (4096, 65536, 16384, 8192, 32768, 2048, 1024, 512, 256, 131072, 262144)
MAX_BYTES = 1 << 20  # entries kept (name + value + 32 each); the oldest are dropped beyond
_TOKEN = frozenset(b"!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyz")


def _unknown(entry: tuple[bytes, bytes]) -> bool:
    """An entry whose name or value is not known: one not captured, or one the capture saw
    inserted by reference to one it did not (a duplicate of it, its name) — shown ``<unknown>``
    and counted as such (``qpack_unknown_refs``, as ``jsonout.unknown_fields`` counts the list)."""
    return entry[0] == UNKNOWN or entry[1] == UNKNOWN


class QpackError(ValueError):
    pass


class Blocked(Exception):
    """The header block refers to entries the encoder stream has not brought yet."""


def _int(buf, p: int, n: int) -> tuple[int, int]:
    """Prefixed integer with an n-bit prefix at buf[p]: (value, next); IndexError if cut,
    QpackError past 62 bits (``prefix_int``'s ValueError, as this module's callers catch it)."""
    try:
        return prefix_int(buf, p, n)
    except ValueError as e:
        raise QpackError(str(e)) from None


def _str(buf, p: int, n: int, limit: int) -> tuple[bytes, int]:
    """String literal (H bit just above an n-bit length prefix): (bytes, next); IndexError if
    cut, QpackError if invalid (bad Huffman, longer than ``limit``)."""
    huff = buf[p] & (1 << n)
    ln, p = _int(buf, p, n)
    if ln > limit:
        raise QpackError(f"QPACK string of {ln} bytes over the {limit}-byte limit")
    if p + ln > len(buf):
        raise IndexError
    s = bytes(buf[p : p + ln])
    if huff:
        # (imported here: hpack, and the logging it imports, cost every QUIC capture ~10 ms of
        # start-up otherwise, and only a connection joined mid-way decodes with this module)
        from hpack.huffman_table import decode_huffman

        try:
            s = decode_huffman(s)
        except Exception as e:
            raise QpackError(f"bad Huffman string: {e}") from None
    return s, p + ln


def parse_encoder(buf, p: int, limit: int):
    """One encoder instruction at buf[p] (§4.3): (kind, a, b, next) with kind "insert_ref"
    (a = static?, b = (index, value)), "insert_lit" (a = name, b = value), "capacity" (a),
    "duplicate" (a = relative index).  IndexError if cut, QpackError if invalid."""
    c = buf[p]
    if c & 0x80:
        idx, q = _int(buf, p, 6)
        value, q = _str(buf, q, 7, limit)
        return "insert_ref", bool(c & 0x40), (idx, value), q
    if c & 0x40:
        name, q = _str(buf, p, 5, limit)
        value, q = _str(buf, q, 7, limit)
        return "insert_lit", name, value, q
    if c & 0x20:
        cap, q = _int(buf, p, 5)
        return "capacity", cap, None, q
    idx, q = _int(buf, p, 5)
    return "duplicate", idx, None, q


def plausible_name(name: bytes) -> bool:
    """A header field name as HTTP/3 allows it: lowercase token characters, or a pseudo-header."""
    body = name[1:] if name[:1] == b":" else name
    return bool(body) and all(c in _TOKEN for c in body)


def looks_like_encoder(data) -> int:
    """How many valid insertions ``data`` (encoder-stream bytes from an instruction
    boundary) holds, all of it parsing; 0 if it does not read as encoder instructions
    (a bad string, an implausible literal name, a static index beyond the table, bytes
    left that do not begin an instruction)."""
    p, n, inserts = 0, len(data), 0
    try:
        while p < n:
            kind, a, b, p = parse_encoder(data, p, 1 << 16)
            if kind == "insert_ref":
                if a and b[0] >= len(STATIC_TABLE):
                    return 0
                inserts += 1
            elif kind == "insert_lit":
                if not plausible_name(a):
                    return 0
                inserts += 1
            elif kind == "duplicate":
                inserts += 1
    except IndexError:
        return inserts if inserts >= 2 else 0  # (the last instruction continues in the next chunk)
    except QpackError:
        return 0
    return inserts


def looks_like_decoder(data) -> bool:
    """Decoder-stream instructions (§4.4) on client-initiated bidirectional streams only,
    all of ``data`` parsing."""
    p, n = 0, len(data)
    try:
        while p < n:
            c = data[p]
            if c & 0x80:
                sid, p = _int(data, p, 7)
                if sid % 4:
                    return False
            elif c & 0x40:
                sid, p = _int(data, p, 6)
                if sid % 4:
                    return False
            else:
                inc, p = _int(data, p, 6)
                if inc == 0:
                    return False
    except (IndexError, QpackError):
        return False
    return n > 0


class LenientQpack:
    """The header blocks one direction sends, with the dynamic table its encoder stream
    builds during the capture (see the module docstring)."""

    def __init__(self, max_header_list: int = 1 << 20):
        self.max_header_list = max_header_list
        self.entries: deque[tuple[bytes, bytes]] = deque()
        self.size = 0
        self.dropped = 0  # captured entries dropped for memory (the oldest)
        self.n = 0  # entries inserted during the capture
        self.fresh = 0  # inserted since the last block that refers to the dynamic table
        self.rest = b""  # an instruction split across chunks
        self.failed: str | None = None  # the encoder stream could not be followed from here on
        self.fed = 0  # encoder-stream bytes seen
        self.points: deque[tuple[int, int]] = deque()  # (captured entries so far, encoder bytes through that insert)
        self.charged = 0  # encoder bytes charged to blocks so far
        self.max_capacity: int | None = None  # SETTINGS_QPACK_MAX_TABLE_CAPACITY of the receiver, if seen
        self.set_capacity: int | None = None  # the last Set Dynamic Table Capacity seen
        self.starts: dict[int, int] = {}  # capacity -> absolute index of captured entry 0
        self.faults: dict[int, int] = {}  # capacity -> inconsistencies seen (encoded count, references, re-pins)
        self.repins = 0

    # -- encoder stream ---------------------------------------------------------------
    def feed_encoder(self, data) -> None:
        if self.failed:
            self.fed += len(data)
            return
        buf = self.rest + bytes(data) if self.rest else bytes(data)
        base = self.fed - len(self.rest)  # encoder-stream bytes before buf[0]
        self.fed += len(data)
        p, n = 0, len(buf)
        limit = self.max_header_list
        while p < n:
            try:
                kind, a, b, q = parse_encoder(buf, p, limit)
            except IndexError:
                break
            except QpackError as e:
                self.failed = f"QPACK encoder stream not followed: {e}"
                self.rest = b""
                return
            if kind == "capacity":
                self.set_capacity = a
                if a == 0:
                    pass  # (the table is empty now; absolute indices keep counting)
            elif kind == "insert_lit":
                self._insert(a, b, base + q)
            elif kind == "insert_ref":
                static, (idx, value) = a, b
                if static:
                    if idx >= len(STATIC_TABLE):
                        self.failed = f"QPACK encoder stream not followed: static index {idx} beyond the table"
                        self.rest = b""
                        return
                    name = STATIC_TABLE[idx][0]
                else:
                    hit = self._relative(idx)
                    name = hit[0] if hit else UNKNOWN
                self._insert(name, value, base + q)
            else:  # duplicate
                hit = self._relative(a)
                name, value = hit or (UNKNOWN, b"")  # (a field referring to it shows as one not captured does)
                self._insert(name, value, base + q)
            p = q
        rest = buf[p:]
        if len(rest) > 2 * limit + 16:
            self.failed = "QPACK encoder stream not followed: an instruction longer than the header list limit"
            rest = b""
        self.rest = rest

    def _relative(self, idx: int):
        """Entry at encoder-relative index idx (0 = the newest), if captured and kept."""
        k = self.n - 1 - idx
        if self.dropped <= k < self.n:
            return self.entries[k - self.dropped]
        return None

    def _insert(self, name: bytes, value: bytes, end: int) -> None:
        self.entries.append((name, value))
        self.size += len(name) + len(value) + 32
        self.n += 1
        self.fresh += 1
        while self.size > MAX_BYTES and self.entries:
            k, v = self.entries.popleft()
            self.size -= len(k) + len(v) + 32
            self.dropped += 1
        pts = self.points
        pts.append((self.n, end))
        if len(pts) > MAX_CHARGE_POINTS:
            pts.popleft()  # (coarser charging of old insertions, never lost bytes: see charge)

    # -- header blocks ----------------------------------------------------------------
    def _capacities(self) -> tuple:
        if self.max_capacity is not None:
            return (self.max_capacity,)
        if self.set_capacity:
            return (self.set_capacity,) + tuple(c for c in CAPACITY_GUESSES if c > self.set_capacity)
        return CAPACITY_GUESSES

    def _ric(self, enc: int, force: bool) -> list:
        """[(RIC as a virtual absolute index, start)] under the most consistent capacities
        (all those as consistent as the best; none when the captured entries cannot be placed:
        none yet, or no block has pinned them).  Raises ``Blocked`` (changing nothing) when the block refers beyond
        the entries captured so far, unless ``force``: then the pin was low and is raised.

        Inconsistencies, counted per capacity (``faults``): an encoded count it cannot
        represent, a block that follows new insertions and does not refer to the newest (an
        encoder inserts to refer; under a wrong MaxEntries the count decodes to another
        window once it wraps), a raised pin.  The capacities with the fewest, this block's
        included, are used."""
        # (capacity, rank, RIC, start, blocked, fault): RIC and start None where the count does not fit
        cands: list[tuple[int, int, int | None, int | None, bool, int]] = []
        for rank, cap in enumerate(self._capacities()):
            m = cap // 32
            full = 2 * m
            start = self.starts.get(cap)
            if full == 0 or enc > full:
                cands.append((cap, rank, None, None, False, 1))
                continue
            if start is None:
                if not self.fresh or self.failed:
                    continue  # nothing to pin with: the block refers to entries inserted before
                start = full * 8 + (enc - 1 - self.n) % full
                ric = start + self.n
            else:
                ric = required_insert_count(enc, m, start + self.n)
            if ric is None:
                cands.append((cap, rank, None, None, False, 1))
                continue
            blocked = ric > start + self.n
            stale = bool(self.fresh) and ric < start + self.n
            cands.append((cap, rank, ric, start, blocked, int(stale)))
        valid = [c for c in cands if c[2] is not None]
        best = min(valid, key=lambda c: (self.faults.get(c[0], 0) + c[5] + c[4], c[1])) if valid else None
        if best is not None and best[4] and not force:
            raise Blocked
        for cap, _rank, ric, start, blocked, fault in cands:
            self.faults[cap] = self.faults.get(cap, 0) + fault
            if ric is None or start is None:  # (both None, or neither)
                continue
            if blocked:  # refers beyond the captured entries: the pin was low
                start = ric - self.n
                self.faults[cap] += 1
                if best is not None and cap == best[0]:
                    self.repins += 1
            self.starts[cap] = start
        if best is None:
            return []
        key = min(self.faults.get(c[0], 0) for c in valid)
        return [(c[2] if not c[4] else self.starts[c[0]] + self.n, self.starts[c[0]])
                for c in valid if self.faults.get(c[0], 0) == key]

    def decode(self, block, force: bool = False) -> tuple[list[tuple[bytes, bytes]], int, int | None]:
        """(fields, how many are ``<unknown>`` (refer to entries not captured, or to one inserted
        by reference to such an entry), RIC as a captured-entry count or
        None when unknown); QpackError / IndexError if the block is malformed; ``Blocked``
        (see ``_ric``) unless ``force``.  A reference is resolved under every capacity as
        consistent as the best: where they do not agree on the entry, it is ``<unknown>``."""
        enc, p = _int(block, 0, 8)
        sign = block[p] & 0x80
        delta, p = _int(block, p, 7)
        places = self._ric(enc, force) if enc else []
        if enc:
            self.fresh = 0
        # (RIC, start, Base) per candidate placing the captured entries
        places = [(ric, start, ric - delta - 1 if sign else ric + delta) for ric, start in places if ric]
        out: list[tuple[bytes, bytes]] = []
        unknown = 0
        size = 0
        n = len(block)
        limit = self.max_header_list
        st = STATIC_TABLE
        while p < n:
            c = block[p]
            if c & 0x80:  # indexed (T: static)
                idx, p = _int(block, p, 6)
                if c & 0x40:
                    if idx >= len(st):
                        raise QpackError(f"static index {idx} beyond the table")
                    hit = st[idx]
                else:
                    hit = self._resolve(places, idx, False)
                    if hit is None:
                        hit = (UNKNOWN, b"")
                    unknown += _unknown(hit)
            elif c & 0x40:  # literal with name reference
                idx, p = _int(block, p, 4)
                value, p = _str(block, p, 7, limit)
                if c & 0x10:
                    if idx >= len(st):
                        raise QpackError(f"static index {idx} beyond the table")
                    name = st[idx][0]
                else:
                    e = self._resolve(places, idx, False)
                    name = e[0] if e else UNKNOWN
                    unknown += name == UNKNOWN
                hit = (name, value)
            elif c & 0x20:  # literal with literal name
                name, p = _str(block, p, 3, limit)
                value, p = _str(block, p, 7, limit)
                hit = (name, value)
            elif c & 0x10:  # indexed, post-base
                idx, p = _int(block, p, 4)
                hit = self._resolve(places, idx, True)
                if hit is None:
                    hit = (UNKNOWN, b"")
                unknown += _unknown(hit)
            else:  # literal with post-base name reference
                idx, p = _int(block, p, 3)
                value, p = _str(block, p, 7, limit)
                e = self._resolve(places, idx, True)
                hit = (e[0] if e else UNKNOWN, value)
                unknown += hit[0] == UNKNOWN
            size += len(hit[0]) + len(hit[1]) + 32
            if size > limit:
                raise QpackError(f"header list larger than {limit} bytes")
            out.append(hit)
        counts = {ric - start for ric, start, _ in places}
        return out, unknown, (counts.pop() if len(counts) == 1 else None)

    def _resolve(self, places, idx: int, post: bool):
        """The captured entry a dynamic reference names, if every placement agrees on it."""
        hit = None
        for ric, start, base in places:
            a = base + idx if post else base - 1 - idx
            if a >= ric:
                return None  # (a reference at or beyond the RIC is malformed under this placement)
            k = a - start
            e = self.entries[k - self.dropped] if self.dropped <= k < self.n else None
            if e is None or hit is not None and e != hit:
                return None
            hit = e
        return hit

    def charge(self, count: int | None) -> int:
        """Encoder-stream bytes of the captured insertions a block with this RIC (as a
        captured-entry count) depends on that no earlier block was charged with."""
        if not count:
            return 0
        end = None
        pts = self.points
        while pts and pts[0][0] <= count:
            end = pts.popleft()[1]
        if end is None or end <= self.charged:
            return 0
        got, self.charged = end - self.charged, end
        return got
