#!/bin/bash
# Regenerate sample_captures/secrets/*: requests carrying Cookie and Authorization and
# responses carrying Set-Cookie, over HTTP/1.1 cleartext and HTTP/2 over TLS 1.3 (key log),
# made on loopback with curl and nginx, captured with tcpdump -i lo.  Used by
# tests/test_secrets.py (HAR leaves these headers out unless asked; no key material in any
# output).  Usage: scripts/robustness/make_secret_captures.sh [OUTDIR]
# Needs: tcpdump curl nginx openssl.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=$(realpath -m "${1:-$here/../../sample_captures/secrets}")
mkdir -p "$out"
work=$(mktemp -d)
chmod 755 "$work"
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; sleep 0.3; rm -rf "$work"; }
trap cleanup EXIT

mkdir -p "$work/doc" "$work/logs"
echo "private page" > "$work/doc/index.html"
chmod -R a+rX "$work/doc"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 -subj /CN=localhost \
  -keyout "$work/key.pem" -out "$work/cert.pem" 2>/dev/null
cat > "$work/nginx.conf" <<CONF
daemon off;
worker_processes 1;
pid $work/nginx.pid;
error_log $work/logs/error.log;
events { worker_connections 64; }
http {
  access_log $work/logs/access.log;
  server {
    listen 127.0.0.1:18091;
    listen 127.0.0.1:18492 ssl http2;
    ssl_certificate $work/cert.pem;
    ssl_certificate_key $work/key.pem;
    ssl_protocols TLSv1.3;
    root $work/doc;
    location / { add_header Set-Cookie "wf_session=SETCOOKIE-0123456789abcdef; Path=/; HttpOnly"; }
  }
}
CONF
nginx -c "$work/nginx.conf" -p "$work" & pids+=($!)
sleep 0.7

cap() {
  tcpdump -i lo -U --immediate-mode -s 0 -w "$1" "tcp port $2" 2>>"$work/tcpdump.err" & tpid=$!
  pids+=("$tpid")
  sleep 1
}
stopcap() { sleep 1; kill "$tpid"; wait "$tpid" 2>/dev/null || true; }

cap "$out/cookies-h1.pcap" 18091
curl -s --http1.1 -o /dev/null -b "wf_client=COOKIE-fedcba9876543210" -u "alice:AUTH-wonderland" http://127.0.0.1:18091/
stopcap

rm -f "$out/cookies-h2.keys"
cap "$out/cookies-h2.pcap" 18492
SSLKEYLOGFILE="$out/cookies-h2.keys" curl -s -k --http2 -o /dev/null -b "wf_client=COOKIE-fedcba9876543210" \
  -u "alice:AUTH-wonderland" https://localhost:18492/
stopcap
chmod 644 "$out"/*
ls -la "$out"
