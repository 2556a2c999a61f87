#!/bin/bash
# Regenerate sample_captures/http/*: HTTP/2 and HTTP/1.x captures made on loopback with
# real clients and servers (nghttpd/nghttp, curl, nginx, Node's http/http2), tcpdump -i lo.
# Usage: scripts/make_http_captures.sh [OUTDIR]     (default sample_captures/http)
# Needs: tcpdump nghttp2-client nghttp2-server curl nginx nodejs openssl python3.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=$(realpath -m "${1:-$here/../sample_captures/http}")
mkdir -p "$out"
work=$(mktemp -d)
chmod 755 "$work"  # nginx workers (nobody) read the document root
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; sleep 0.3; rm -rf "$work"; }
trap cleanup EXIT

# --- document root ---------------------------------------------------------------------
doc=$work/doc
mkdir -p "$doc"
{
  echo '<!doctype html><html><head><title>wirefall sample</title>'
  for i in $(seq 1 8); do echo "<link rel=stylesheet href=/css/s$i.css>"; done
  for i in $(seq 1 8); do echo "<script src=/js/j$i.js></script>"; done
  echo '</head><body>'
  for i in $(seq 1 8); do echo "<img src=/img/i$i.png>"; done
  echo '</body></html>'
} > "$doc/index.html"
mkdir -p "$doc/css" "$doc/js" "$doc/img"
for i in $(seq 1 8); do
  python3 -c "print('.c$i { color: #$i$i$i; margin: ${i}px }\n' * (40 * $i))" > "$doc/css/s$i.css"
  python3 -c "print('function f$i(x) { return x * $i; }\n' * (30 * $i))" > "$doc/js/j$i.js"
  head -c $((2000 * i)) /dev/urandom > "$doc/img/i$i.png"
done
python3 -c "import random; random.seed(7); print(''.join(random.choice('abcdefghij \n') for _ in range(300000)))" > "$doc/big.txt"
head -c 300000 /dev/urandom > "$doc/big.bin"
echo "small text" > "$doc/a.txt"
chmod -R a+rX "$doc"
python3 -c "print('lorem ipsum dolor sit amet ' * 2000)" > "$doc/lorem.txt"

cap() {  # cap FILE PORT...: start tcpdump on lo for these ports
  local f=$1; shift
  local filt="tcp port $1"; shift
  for p in "$@"; do filt="$filt or tcp port $p"; done
  tcpdump -i lo -U --immediate-mode -s 0 -w "$f" "$filt" 2>>"$work/tcpdump.err" & tpid=$!
  pids+=("$tpid")
  sleep 1
}
stopcap() { sleep 1; kill "$tpid"; wait "$tpid" 2>/dev/null || true; }

# --- 1. h2c with nghttpd / nghttp: prior knowledge, 25 concurrent streams, small windows
#        (WINDOW_UPDATE), a 20 KB header (CONTINUATION), server push, GOAWAY at the end
P=18081
nghttpd --no-tls -d "$doc" -p /index.html=/css/s1.css,/js/j1.js $P >/dev/null 2>&1 & pids+=($!)
sleep 0.5
cap "$work/h2c-nghttp.pcap" $P
nghttp -nas -w 14 -W 16 "http://127.0.0.1:$P/index.html" > "$out/h2c-nghttp.client.txt"
nghttp -n -w 14 -W 15 "http://127.0.0.1:$P/big.bin"
nghttp -n -H "x-large: $(head -c 15000 /dev/zero | tr '\0' 'h')" -H "x-large2: $(head -c 6000 /dev/zero | tr '\0' 'k')" "http://127.0.0.1:$P/a.txt" || true
stopcap

# --- 2. h2c upgrade (HTTP/1.1 Upgrade: h2c -> 101) with nghttp -u and curl --http2;
#        nghttpd does not implement the upgrade, so nghttpx (nghttp2-proxy) fronts it
P2=18082
nghttpx --conf=/dev/null -f"127.0.0.1,$P2;no-tls" -b"127.0.0.1,$P;;proto=h2" --workers=1 --no-ocsp \
  --errorlog-file="$work/nghttpx.err" --accesslog-file="$work/nghttpx.access" & pids+=($!)
sleep 1
cap "$work/h2c-upgrade.pcap" $P2
nghttp -nuas "http://127.0.0.1:$P2/index.html" > "$out/h2c-upgrade.client.txt"
curl -s -o /dev/null -o /dev/null --http2 "http://127.0.0.1:$P2/lorem.txt" "http://127.0.0.1:$P2/a.txt" || true
stopcap

# --- 3. curl --http2-prior-knowledge, several requests on one connection, a POST body
cap "$work/h2c-curl.pcap" $P
curl -s -o /dev/null -o /dev/null -o /dev/null --http2-prior-knowledge "http://127.0.0.1:$P/a.txt" "http://127.0.0.1:$P/lorem.txt" "http://127.0.0.1:$P/nope" || true
curl -s -o /dev/null --http2-prior-knowledge -X POST --data-binary @"$doc/css/s3.css" "http://127.0.0.1:$P/a.txt" || true
stopcap

# --- 4. Node http2: push, RST_STREAM both ways, trailers, PRIORITY, gzip/br/deflate, PING, GOAWAY(ENHANCE_YOUR_CALM)
P4=18084
rm -f "$out/h2c-node.client.jsonl"
cap "$work/h2c-node.pcap" $P4
node "$here/http/node_h2.js" $P4 "$out/h2c-node.client.jsonl"
stopcap

# --- 5. HTTP/1.1 with nginx: keep-alive, gzip (chunked), HEAD, 304, HTTP/1.0, pipelining
P5=18085
mkdir -p "$work/nginx"
cat > "$work/nginx/nginx.conf" <<NGX
daemon off;
worker_processes 1;
error_log $work/nginx/error.log;
pid $work/nginx/nginx.pid;
events { worker_connections 64; }
http {
  access_log $work/nginx/access.log;
  types { text/html html; text/css css; application/javascript js; image/png png; text/plain txt; application/octet-stream bin; }
  gzip on; gzip_types text/css application/javascript text/plain; gzip_min_length 100; gzip_http_version 1.0;
  keepalive_requests 1000;
  server { listen 127.0.0.1:$P5; root $doc; }
}
NGX
nginx -c "$work/nginx/nginx.conf" -e "$work/nginx/error.log" & pids+=($!)
sleep 0.5
cap "$work/http1-nginx.pcap" $P5
curl -s -o /dev/null -o /dev/null -o /dev/null -o /dev/null -o /dev/null -H 'Accept-Encoding: gzip' "http://127.0.0.1:$P5/index.html" "http://127.0.0.1:$P5/css/s2.css" "http://127.0.0.1:$P5/lorem.txt" "http://127.0.0.1:$P5/img/i1.png" "http://127.0.0.1:$P5/missing"
curl -s -o /dev/null -I "http://127.0.0.1:$P5/a.txt" || true
lm=$(date -u -r "$doc/a.txt" '+%a, %d %b %Y %H:%M:%S GMT')
curl -s -o /dev/null -H "If-Modified-Since: $lm" "http://127.0.0.1:$P5/a.txt" || true
curl -s -o /dev/null -0 "http://127.0.0.1:$P5/js/j1.js" || true
curl -s -o /dev/null -X POST --data-binary @"$doc/css/s1.css" "http://127.0.0.1:$P5/a.txt" || true
python3 "$here/http/pipeline_client.py" 127.0.0.1 $P5 /a.txt /css/s1.css HEAD:/js/j2.js /lorem.txt > "$out/http1-nginx.pipeline.txt"
stopcap
cp "$work/nginx/access.log" "$out/http1-nginx.access.log"

# --- 6. HTTP/1.x with Node http: close-delimited body, 100 Continue, 103 Early Hints, websocket upgrade
P6=18086
node "$here/http/node_h1.js" $P6 8000 & pids+=($!)
sleep 0.5
cap "$work/http1-node.pcap" $P6
curl -s -o /dev/null -0 "http://127.0.0.1:$P6/close" || true
curl -s -o /dev/null -H 'Expect: 100-continue' --data-binary @"$doc/css/s2.css" "http://127.0.0.1:$P6/upload" || true
curl -s -o /dev/null "http://127.0.0.1:$P6/early-hints" || true
curl -s -o /dev/null --max-time 1 -H 'Connection: Upgrade' -H 'Upgrade: websocket' -H 'Sec-WebSocket-Version: 13' \
  -H 'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==' "http://127.0.0.1:$P6/ws" || true
stopcap

# --- 7. h2 over TLS 1.3 (ALPN h2): the Node client/server of 4 (push, resets, GOAWAY...) over TLS
#        (node --tls-keylog), and curl --http2 to nghttpd (SSLKEYLOGFILE); nghttp writes no key log
P7=18087
P7b=18088
openssl req -x509 -newkey rsa:2048 -nodes -keyout "$work/key.pem" -out "$work/cert.pem" -days 30 -subj /CN=localhost 2>/dev/null
nghttpd -d "$doc" $P7b "$work/key.pem" "$work/cert.pem" >/dev/null 2>&1 & pids+=($!)
sleep 0.5
rm -f "$out/h2-tls.keys" "$out/h2-tls.client.jsonl"
cap "$work/h2-tls.pcap" $P7 $P7b
node --tls-keylog="$out/h2-tls.keys" "$here/http/node_h2.js" $P7 "$out/h2-tls.client.jsonl" "$work/key.pem" "$work/cert.pem"
SSLKEYLOGFILE="$out/h2-tls.keys" curl -sk -o /dev/null -o /dev/null --http2 "https://127.0.0.1:$P7b/lorem.txt" "https://127.0.0.1:$P7b/a.txt" || true
stopcap

cat "$work/tcpdump.err" >&2
for f in "$work"/*.pcap; do cp "$f" "$out/"; done
ls -l "$out"
