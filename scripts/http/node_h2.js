// HTTP/2 cleartext server + client on loopback (Node's http2 = nghttp2), used by
// scripts/make_http_captures.sh to capture frames the other tools do not send on demand:
// server push, RST_STREAM from either side, trailers, PRIORITY flags, a request body,
// gzip / br / deflate bodies, PING, GOAWAY with an error code.
// Usage: node [--tls-keylog=KEYS] node_h2.js PORT LOGFILE [KEY.pem CERT.pem]
// (the client writes one JSON line per response to LOGFILE; with a key and certificate both
// ends speak h2 over TLS, and --tls-keylog writes the secrets)
'use strict';
const http2 = require('http2');
const zlib = require('zlib');
const fs = require('fs');
const { constants: C } = http2;
const port = +process.argv[2];
const logfile = process.argv[3];
const text = Buffer.from('wirefall HTTP/2 sample body line, compressible and repetitive.\n'.repeat(1500));
const big = Buffer.alloc(200 * 1024, 'x');
for (let i = 0; i < big.length; i += 97) big[i] = 65 + (i % 26);

const tls = process.argv[4] ? { key: fs.readFileSync(process.argv[4]), cert: fs.readFileSync(process.argv[5]) } : null;
const server = tls ? http2.createSecureServer(tls) : http2.createServer();
server.on('stream', (stream, headers) => {
  const path = headers[':path'];
  stream.on('error', () => {});
  if (path === '/gzip' || path === '/br' || path === '/deflate') {
    const enc = path.slice(1);
    const body = enc === 'gzip' ? zlib.gzipSync(text) : enc === 'br' ? zlib.brotliCompressSync(text) : zlib.deflateSync(text);
    stream.respond({ ':status': 200, 'content-type': 'text/plain', 'content-encoding': enc, 'x-decoded-length': String(text.length) });
    stream.end(body);
  } else if (path === '/push') {
    stream.pushStream({ ':path': '/pushed.css' }, (err, ps) => {
      if (err) return;
      ps.on('error', () => {});
      ps.respond({ ':status': 200, 'content-type': 'text/css' });
      ps.end('body { color: red }\n'.repeat(20));
    });
    stream.respond({ ':status': 200, 'content-type': 'text/html' });
    stream.end('<link rel=stylesheet href=/pushed.css>\n');
  } else if (path === '/slow') {
    stream.respond({ ':status': 200, 'content-type': 'application/octet-stream' });
    let n = 0;
    const t = setInterval(() => {
      if (stream.destroyed || stream.closed || n++ > 50) { clearInterval(t); return; }
      stream.write(Buffer.alloc(1000, 's'));
    }, 20);
  } else if (path === '/reset') {
    stream.close(C.NGHTTP2_INTERNAL_ERROR);
  } else if (path === '/trailers') {
    stream.respond({ ':status': 200, 'content-type': 'text/plain' }, { waitForTrailers: true });
    stream.on('wantTrailers', () => stream.sendTrailers({ 'x-checksum': 'abc123' }));
    stream.end('with trailers\n');
  } else if (path === '/post') {
    let n = 0;
    stream.on('data', (d) => { n += d.length; });
    stream.on('end', () => { stream.respond({ ':status': 201, 'x-received': String(n) }); stream.end('got ' + n + '\n'); });
  } else if (path === '/big') {
    stream.respond({ ':status': 200, 'content-type': 'application/octet-stream', 'content-length': String(big.length) });
    stream.end(big);
  } else if (path === '/goaway') {
    stream.respond({ ':status': 200 });
    stream.end('bye\n');
    setTimeout(() => stream.session && !stream.session.destroyed && stream.session.goaway(C.NGHTTP2_ENHANCE_YOUR_CALM, 0, Buffer.from('calm down')), 100);
  } else {
    stream.respond({ ':status': 404, 'content-type': 'text/plain' });
    stream.end('not found\n');
  }
});

function log(obj) { fs.appendFileSync(logfile, JSON.stringify(obj) + '\n'); }

function request(client, headers, opts, body) {
  return new Promise((resolve) => {
    const req = client.request(headers, opts || {});
    const chunks = [];
    let rh = null;
    req.on('response', (h) => { rh = h; });
    req.on('data', (d) => chunks.push(d));
    req.on('error', () => {});
    req.on('close', () => {
      const raw = Buffer.concat(chunks);
      let decoded = raw.length;
      const enc = rh && rh['content-encoding'];
      try {
        if (enc === 'gzip') decoded = zlib.gunzipSync(raw).length;
        else if (enc === 'br') decoded = zlib.brotliDecompressSync(raw).length;
        else if (enc === 'deflate') decoded = zlib.inflateSync(raw).length;
      } catch (e) { decoded = null; }
      log({ stream: req.id, path: headers[':path'], method: headers[':method'] || 'GET', status: rh ? rh[':status'] : null,
            body: raw.length, decoded, rst: req.rstCode });
      resolve();
    });
    if (body) req.end(body); else req.end();
  });
}

server.listen(port, '127.0.0.1', async () => {
  const client = http2.connect(`${tls ? 'https' : 'http'}://127.0.0.1:${port}`, tls ? { rejectUnauthorized: false } : {});
  client.on('error', () => {});
  client.on('stream', (ps, rh) => {
    const chunks = [];
    let status = null;
    ps.on('push', (h) => { status = h[':status']; });
    ps.on('data', (d) => chunks.push(d));
    ps.on('error', () => {});
    ps.on('close', () => log({ stream: ps.id, path: rh[':path'], pushed: true, status, body: Buffer.concat(chunks).length }));
  });
  await new Promise((r) => client.ping(Buffer.from('wirefall'), r));
  await Promise.all([
    request(client, { ':path': '/gzip' }, { weight: 200 }),
    request(client, { ':path': '/br' }, { weight: 32, exclusive: true }),
    request(client, { ':path': '/deflate' }),
    request(client, { ':path': '/push' }),
    request(client, { ':path': '/trailers' }),
    request(client, { ':path': '/missing' }),
  ]);
  await request(client, { ':path': '/reset' });
  await request(client, { ':method': 'POST', ':path': '/post', 'content-type': 'application/octet-stream' }, {}, Buffer.alloc(50000, 'p'));
  await request(client, { ':path': '/big' });
  // cancel a slow response: RST_STREAM(CANCEL) from the client
  await new Promise((resolve) => {
    const req = client.request({ ':path': '/slow' });
    let got = 0;
    req.on('data', (d) => { got += d.length; if (got >= 3000 && !req.closed) req.close(C.NGHTTP2_CANCEL); });
    req.on('error', () => {});
    req.on('close', () => { log({ stream: req.id, path: '/slow', status: 200, body: got, rst: req.rstCode }); resolve(); });
    req.end();
  });
  await request(client, { ':path': '/goaway' });
  setTimeout(() => { client.close(); server.close(); setTimeout(() => process.exit(0), 200); }, 500);
});
