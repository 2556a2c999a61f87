"""``http3``: HTTP/3 over QUIC streams, on the packets tshark 4.0 shows it on.

``http3`` is present where tshark's HTTP/3 dissector runs — an HTTP/3 frame begins in the
packet, or it carries data of a unidirectional stream (control, QPACK encoder and decoder) —
the packet list's HTTP3 protocol column (one rule: ``analyzer.detail.http3_on_packet``).  The
frame fields (``http3.frame_type``, ``.frame_length``, ``.settings*``, ``.header*``) are those
of the frames a STREAM frame of the packet holds whole (``shown``): tshark 4.0 does not
reassemble an HTTP/3 frame spanning STREAM frames, and shows its fields nowhere (a large DATA
frame, a HEADERS frame whose type byte came alone).  ``frames -Y`` filters every frame."""
from __future__ import annotations

import re

from wirefall.dissectors.http3 import FRAME_TYPES, settings_items

from ._util import frame_field as F, header_family
from .types import NONE, PROTO_OPAQUE, UINT, Field, Protocol

TYPE_CODES = {v: k for k, v in FRAME_TYPES.items()}
TYPE_CODES["PRIORITY_UPDATE"] = 0xF0700


def _is_h3(fr) -> bool:
    return fr.protocol.startswith("h3")


def shown(fr) -> bool:
    """Whether tshark 4.0 shows an HTTP/3 frame's fields (on the packet where it begins): it
    begins and ends in one packet and the capture or its stream does not end inside it."""
    return fr.first_packet in (0, fr.packet) and not (fr.error or "").startswith(_CUT)


_CUT = ("capture ends ", "stream ended ")  # (dissectors.http3: a frame whose bytes never all came)


def _present(pv) -> list:
    from wirefall.analyzer.detail import http3_on_packet

    return [True] if http3_on_packet(pv.ctx.an, pv.spanning, pv.n) else []


HEADERS = header_family("http3", _is_h3, note="Wireshark 4.2 and later name these fields so; 4.0 does not decode QPACK", since="4.2",
                        shown=shown)


def _type(fr, ctx):
    if fr.type == "PRIORITY_UPDATE":
        return [0xF0701 if (fr.fields or {}).get("push") else 0xF0700]
    c = TYPE_CODES.get(fr.type)
    if c is None:
        m = re.fullmatch(r"UNKNOWN_0x([0-9a-fA-F]+)", fr.type)
        c = int(m.group(1), 16) if m else (fr.fields or {}).get("frame_type")
    if c is None and ctx is not None:  # a reserved (GREASE) type, kept by name: read from the frame's bytes
        from wirefall.analyzer.detail import h3_wire_type

        c = h3_wire_type(ctx.an, ctx.source, fr)
    return [c] if c is not None else []


def _is_settings(fr) -> bool:
    return fr.protocol.startswith("h3") and fr.type == "SETTINGS"


def _setting(ident: int | None, part: int = 2):
    """The settings of a SETTINGS frame, in wire order (GREASE and repeats too), as tshark adds
    them: every identifier (``part`` 0), every value (2), or the values of one identifier."""
    def fn(fr, ctx):
        return [s[part] for s in settings_items(fr.fields) if ident is None or s[0] == ident]
    return fn


def _stream_types(pv) -> list:
    """The Stream Type of each unidirectional stream that opens in the packet (0 control, 1 push,
    2 QPACK encoder, 3 QPACK decoder, or a reserved one), as tshark 4.0 adds it: once per STREAM
    frame at stream offset 0 on an HTTP/3 connection (a resent one again), read from that frame's
    first byte decrypted again (the analysis keeps the stream's kind by name only)."""
    an = pv.ctx.an
    out: list[int] = []
    for fr in pv.frames:
        if (fr.protocol == "quic" and fr.type == "STREAM" and fr.offset == 0 and fr.length and fr.stream_id is not None
                and fr.stream_id & 2):
            c = an.connections[fr.connection] if 0 <= fr.connection < len(an.connections) else None
            if c is not None and (c.protocol or "").startswith("h3"):
                from wirefall.analyzer.detail import h3_wire_type

                v = h3_wire_type(an, pv.ctx.source, fr)
                if v is not None:
                    out.append(v)
    return out


def _push_ids(pv) -> list:
    """The Push ID of each push stream (type 1) that opens in the packet, as tshark 4.0 adds it:
    the varint after the Stream Type in a STREAM frame at stream offset 0 (a resent one again),
    where that frame holds it; read from the frame decrypted again, as ``_stream_types``."""
    import copy

    an = pv.ctx.an
    out: list[int] = []
    for fr in pv.frames:
        if (fr.protocol == "quic" and fr.type == "STREAM" and fr.offset == 0 and fr.length > 1 and fr.stream_id is not None
                and fr.stream_id & 2):
            c = an.connections[fr.connection] if 0 <= fr.connection < len(an.connections) else None
            if c is None or not (c.protocol or "").startswith("h3"):
                continue
            from wirefall.analyzer.detail import h3_wire_type

            if h3_wire_type(an, pv.ctx.source, fr) != 1:
                continue
            after = copy.copy(fr)
            after.offset = 1  # (the Stream Type 1 in its one-byte encoding, as every sender writes it)
            v = h3_wire_type(an, pv.ctx.source, after)
            # (whole in the STREAM frame, taken as minimally encoded: tshark reads no varint past it)
            if v is not None and 1 + (1 if v < 1 << 6 else 2 if v < 1 << 14 else 4 if v < 1 << 30 else 8) <= fr.length:
                out.append(v)
    return out


_SPAN = "a frame spanning STREAM frames is on no packet (tshark 4.0 does not reassemble it); frames -Y sees it"
PROTOCOL = Protocol("http3", "HTTP/3", Field("http3", PROTO_OPAQUE, _present, "HTTP/3 stream data: a frame begins here, or "
                                                                           "a unidirectional stream's bytes (control, QPACK)",
                                             frame=lambda fr: [True] if _is_h3(fr) else []), [
    F("http3.frame_type", UINT, _is_h3, _type, "frame type (0 DATA, 1 HEADERS, 4 SETTINGS, 7 GOAWAY…)",
      shown=shown, note=_SPAN + "; a GREASE frame's type is read from its bytes (none in frames -Y)", size=8),
    F("http3.frame_length", UINT, _is_h3, lambda fr, ctx: [fr.length], "frame payload length", shown=shown, note=_SPAN, size=8),
    Field("http3.stream_type", UINT, _stream_types, "unidirectional stream type, where the stream opens (0 control, 1 push, "
          "2 QPACK encoder, 3 QPACK decoder)", size=8),
    Field("http3.push_id", UINT, _push_ids, "a push stream's Push ID, where the stream opens (after its Stream Type 1)", size=8,
          note="the Stream Type read as one byte (as senders write 1): a longer encoding of it would shift the Push ID"),
    F("http3.settings", NONE, _is_settings, lambda fr, ctx: [True] * len(settings_items(fr.fields)),
      "a setting of a SETTINGS frame (one per setting, GREASE ones too)", shown=shown),
    F("http3.settings.id", UINT, _is_settings, _setting(None, 0), "setting identifier (1 QPACK_MAX_TABLE_CAPACITY, 6, 7, 8, 0x33…)",
      shown=shown, size=8),
    F("http3.settings.value", UINT, _is_settings, _setting(None), "setting value", shown=shown, size=8),
    F("http3.settings.qpack.max_table_capacity", UINT, _is_settings, _setting(0x01), "SETTINGS_QPACK_MAX_TABLE_CAPACITY (0x01)",
      shown=shown, size=8),
    F("http3.settings.max_field_section_size", UINT, _is_settings, _setting(0x06), "SETTINGS_MAX_FIELD_SECTION_SIZE (0x06)",
      shown=shown, size=8),
    F("http3.settings.qpack.blocked_streams", UINT, _is_settings, _setting(0x07), "SETTINGS_QPACK_BLOCKED_STREAMS (0x07)",
      shown=shown, size=8),
    F("http3.settings.extended_connect", UINT, _is_settings, _setting(0x08), "SETTINGS_ENABLE_CONNECT_PROTOCOL (0x08, RFC 9220)",
      shown=shown, size=8),
    *HEADERS.generic(),
    *HEADERS.named(),
], prefixes={"http3.headers.": HEADERS.field})
