// HTTP/1.x server for the cases nginx does not produce on demand: a close-delimited body
// (no Content-Length, no chunking, answered to HTTP/1.0), 100 Continue, 1xx + final,
// and a websocket Upgrade (101, then opaque bytes).  Usage: node node_h1.js PORT
'use strict';
const http = require('http');
const crypto = require('crypto');
const port = +process.argv[2];
const server = http.createServer((req, res) => {
  if (req.url === '/close') {
    res.useChunkedEncodingByDefault = false;
    res.shouldKeepAlive = false;
    res.writeHead(200, { 'content-type': 'text/plain', connection: 'close' });
    res.write('close-delimited body part one\n');
    setTimeout(() => res.end('and part two\n'), 50);
  } else if (req.url === '/upload') {
    let n = 0;
    req.on('data', (d) => { n += d.length; });
    req.on('end', () => { res.writeHead(200, { 'content-type': 'text/plain', 'content-length': String(('got ' + n + '\n').length) }); res.end('got ' + n + '\n'); });
  } else if (req.url === '/early-hints') {
    res.writeEarlyHints({ link: '</style.css>; rel=preload; as=style' });
    res.writeHead(200, { 'content-type': 'text/plain' });
    res.end('after 103\n');
  } else {
    res.writeHead(404, { 'content-type': 'text/plain' });
    res.end('not found\n');
  }
});
server.on('upgrade', (req, socket) => {
  const key = req.headers['sec-websocket-key'] || '';
  const accept = crypto.createHash('sha1').update(key + '258EAFA5-E914-47DA-95CA-C5AB0DC85B11').digest('base64');
  socket.write('HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: ' + accept + '\r\n\r\n');
  socket.write(Buffer.from([0x81, 0x05, 0x68, 0x65, 0x6c, 0x6c, 0x6f]));  // text frame "hello"
  setTimeout(() => socket.end(Buffer.from([0x88, 0x00])), 100);
});
server.listen(port, '127.0.0.1');
setTimeout(() => process.exit(0), +process.argv[3] || 15000);
