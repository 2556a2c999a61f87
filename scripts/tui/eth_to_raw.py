"""Copy an Ethernet pcap to a raw-IP pcap (LINKTYPE_RAW, 101) by removing each packet's
14-byte Ethernet header; timestamps and lengths are kept.  Used by make_link_samples.sh."""
import struct
import sys

src, dst = sys.argv[1], sys.argv[2]
with open(src, "rb") as f:
    data = f.read()
magic = data[:4]
e = "<" if magic in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1") else ">"
hdr = bytearray(data[:24])
struct.pack_into(e + "I", hdr, 20, 101)
out = [bytes(hdr)]
p = 24
while p + 16 <= len(data):
    sec, frac, caplen, origlen = struct.unpack_from(e + "IIII", data, p)
    pkt = data[p + 16 : p + 16 + caplen]
    out.append(struct.pack(e + "IIII", sec, frac, caplen - 14, origlen - 14) + pkt[14:])
    p += 16 + caplen
with open(dst, "wb") as f:
    f.write(b"".join(out))
