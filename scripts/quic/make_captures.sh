#!/bin/sh
# Regenerate the QUIC / HTTP/3 sample captures in sample_captures/quic (run as root: tcpdump on lo).
#  - aioquic-h3.*: aioquic 1.7.2 client and server (scripts/quic/aioquic_capture.py)
#  - aioquic-h3-cut.*: the same with 300 resources, cut after 600 packets (editcap): responses
#                  whose DATA frames the capture's end cuts, and a stream on which tshark 4.0 loses
#                  its place (aioquic sends a HEADERS frame's type byte alone in a STREAM frame)
#  - page-h3.*:    headless Chromium loading the lab page from the aioquic server with QUIC forced
#                  (scripts/lab/serve_and_capture.py --protocols h3), NetLog + server log as truth
set -e
cd "$(dirname "$0")/../.."
PY=.venv/bin/python
OUT=sample_captures/quic
mkdir -p "$OUT"
$PY scripts/quic/aioquic_capture.py "$OUT" --count 6
CUT=$(mktemp -d)
$PY scripts/quic/aioquic_capture.py "$CUT" --count 300
editcap -F pcap -r "$CUT/aioquic-h3.pcap" "$OUT/aioquic-h3-cut.pcap" 1-600
cp "$CUT/aioquic-h3.keys" "$OUT/aioquic-h3-cut.keys"
rm -rf "$CUT"
TMP=$(mktemp -d)
$PY scripts/lab/serve_and_capture.py -o "$TMP" --protocols h3
for f in page-h3.pcapng page-h3.keys page-h3.netlog.json.gz page-h3.server.log; do cp "$TMP/$f" "$OUT/"; done
cp "$TMP/manifest.json" "$OUT/page-h3.manifest.json"
rm -rf "$TMP"
