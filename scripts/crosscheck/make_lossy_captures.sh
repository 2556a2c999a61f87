#!/bin/sh
# Lossy page loads for the crosscheck tests (tests/test_crosscheck.py): the lab page loaded by
# headless Chromium over HTTP/1.1, HTTP/2 and HTTP/3 and by the SPDY/3.1 client, through
# `wirefall lab`'s delay/loss relay (30 ms RTT, 3 % seeded loss each way), so the captures hold
# TCP retransmissions, segments lost before the capture point and out-of-order arrivals, QUIC
# retransmitted and out-of-order STREAM frames. Needs root (network namespaces), chromium,
# nginx, node with the npm spdy packages (see scripts/spdy/), aioquic.
# Usage: scripts/crosscheck/make_lossy_captures.sh   (writes sample_captures/lossy/)
set -eu
cd "$(dirname "$0")/../.."
OUT=$(mktemp -d /tmp/wirefall-lossy.XXXXXX)
trap 'rm -rf "$OUT"' EXIT
.venv/bin/python -m wirefall lab --protocols h1,spdy,h2,h3 --rtt 30 --loss 3 --runs 1 -o "$OUT"
RUN="$OUT/rtt30ms-loss3pct/run1"
DEST=sample_captures/lossy
mkdir -p "$DEST"
for p in h1 spdy h2 h3; do
  cp "$RUN/page-$p.pcapng" "$DEST/page-$p.pcapng"
  cp "$RUN/page-$p.keys" "$DEST/page-$p.keys"
done
cp "$OUT/manifest.json" "$DEST/manifest.json"
ls -la "$DEST"
