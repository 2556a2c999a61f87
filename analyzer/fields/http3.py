"""``http3``: HTTP/3 frames (QUIC streams), on the packet where the frame completes."""
from __future__ import annotations

import re

from wirefall.dissectors.http3 import FRAME_TYPES, settings_items

from ._util import frame_field as F, frames_present, header_family
from .types import NONE, UINT, Protocol

TYPE_CODES = {v: k for k, v in FRAME_TYPES.items()}
TYPE_CODES["PRIORITY_UPDATE"] = 0xF0700


def _is_h3(fr) -> bool:
    return fr.protocol.startswith("h3")


HEADERS = header_family("http3", _is_h3, note="Wireshark 4.2 and later name these fields so; 4.0 does not decode QPACK", since="4.2")


def _type(fr, ctx):
    if fr.type == "PRIORITY_UPDATE":
        return [0xF0701 if (fr.fields or {}).get("push") else 0xF0700]
    c = TYPE_CODES.get(fr.type)
    if c is None:
        m = re.fullmatch(r"UNKNOWN_0x([0-9a-fA-F]+)", fr.type)
        c = int(m.group(1), 16) if m else (fr.fields or {}).get("frame_type")
    return [c] if c is not None else []


def _is_settings(fr) -> bool:
    return fr.protocol.startswith("h3") and fr.type == "SETTINGS"


def _setting(ident: int | None, part: int = 2):
    """The settings of a SETTINGS frame, in wire order (GREASE and repeats too), as tshark adds
    them: every identifier (``part`` 0), every value (2), or the values of one identifier."""
    def fn(fr, ctx):
        return [s[part] for s in settings_items(fr.fields) if ident is None or s[0] == ident]
    return fn


PROTOCOL = Protocol("http3", "HTTP/3", frames_present("http3", _is_h3, "an HTTP/3 frame ends here",
                                                    note="tshark 4.0 shows an HTTP/3 frame where it begins (it does not reassemble frames "
                                                         "spanning STREAM frames); wirefall where it ends, as for every other protocol"), [
    F("http3.frame_type", UINT, _is_h3, _type, "frame type (0 DATA, 1 HEADERS, 4 SETTINGS, 7 GOAWAY…)", names=TYPE_CODES,
      note="a GREASE frame's type is not kept by wirefall: it has no value here"),
    F("http3.frame_length", UINT, _is_h3, lambda fr, ctx: [fr.length], "frame payload length"),
    F("http3.settings", NONE, _is_settings, lambda fr, ctx: [True] * len(settings_items(fr.fields)),
      "a setting of a SETTINGS frame (one per setting, GREASE ones too)"),
    F("http3.settings.id", UINT, _is_settings, _setting(None, 0), "setting identifier (1 QPACK_MAX_TABLE_CAPACITY, 6, 7, 8, 0x33…)"),
    F("http3.settings.value", UINT, _is_settings, _setting(None), "setting value"),
    F("http3.settings.qpack.max_table_capacity", UINT, _is_settings, _setting(0x01), "SETTINGS_QPACK_MAX_TABLE_CAPACITY (0x01)"),
    F("http3.settings.max_field_section_size", UINT, _is_settings, _setting(0x06), "SETTINGS_MAX_FIELD_SECTION_SIZE (0x06)"),
    F("http3.settings.qpack.blocked_streams", UINT, _is_settings, _setting(0x07), "SETTINGS_QPACK_BLOCKED_STREAMS (0x07)"),
    F("http3.settings.extended_connect", UINT, _is_settings, _setting(0x08), "SETTINGS_ENABLE_CONNECT_PROTOCOL (0x08, RFC 9220)"),
    *HEADERS.generic(),
    *HEADERS.named(),
], prefixes={"http3.headers.": HEADERS.field})
