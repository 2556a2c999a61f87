'use strict'
// SPDY server (npm spdy 4.0.2 / spdy-transport 3.0.0) for wirefall's sample captures.
// node server.js --port P --version 2|3|3.1 [--key K --cert C] --log FILE [--host H]
//                 [--root DIR]   (serve the files of DIR, e.g. the lab page of scripts/lab/page/generate.py,
//                                 instead of the built-in page of resources.js)
//                 [--push P1,P2] (with --root: push these files of DIR with "/" and /index.html)
const spdy = require('spdy')
const fs = require('fs')
const pathlib = require('path')
const hooks = require('./hooks.js')
const { R, PUSHED, body, page } = require('./resources.js')

const args = {}
for (let i = 2; i < process.argv.length; i += 2) args[process.argv[i].slice(2)] = process.argv[i + 1]
const version = args.version || '3.1'
const log = hooks.install('server', args.log || 'server.jsonl')

const TYPES = { '.html': 'text/html', '.css': 'text/css', '.js': 'application/javascript', '.jpg': 'image/jpeg',
  '.png': 'image/png', '.json': 'application/json', '.gif': 'image/gif', '.webp': 'image/webp', '.svg': 'image/svg+xml',
  '.ico': 'image/x-icon', '.woff2': 'font/woff2', '.woff': 'font/woff', '.txt': 'text/plain', '.xml': 'application/xml' }

// Static files of --root (what nginx and the aioquic server do for the other protocols)
function staticHandler (req, res) {
  let path = decodeURIComponent(req.url.split('?')[0])
  if (path.endsWith('/')) path += 'index.html'
  const root = pathlib.resolve(args.root)
  const file = pathlib.resolve(root, '.' + path)
  req.resume()
  req.on('end', () => {
    if (args.push && path === '/index.html' && req.method === 'GET') {
      for (const p of args.push.split(',')) {
        const f = pathlib.resolve(root, '.' + p)
        if (!f.startsWith(root + pathlib.sep) || !fs.existsSync(f)) continue
        const b = fs.readFileSync(f)
        const s = res.push(p, {
          request: { accept: '*/*' },
          response: { 'content-type': TYPES[pathlib.extname(f)] || 'application/octet-stream', 'content-length': b.length }
        })
        s.on('error', () => {})
        s.end(b)
      }
    }
    if ((req.method !== 'GET' && req.method !== 'HEAD') || !file.startsWith(root + pathlib.sep)) {
      res.writeHead(404, { 'content-length': 0 }); res.end(); return
    }
    fs.readFile(file, (err, b) => {
      if (err) { res.writeHead(404, { 'content-length': 0 }); res.end(); return }
      res.writeHead(200, {
        'content-type': TYPES[pathlib.extname(file)] || 'application/octet-stream',
        'content-length': b.length,
        // the lab's pages fetch across their origins (credentialed CORS: the Origin echoed)
        ...(req.headers.origin ? { 'access-control-allow-origin': req.headers.origin, 'access-control-allow-credentials': 'true' } : {})
      })
      res.end(req.method === 'HEAD' ? undefined : b)
    })
  })
}

function handler (req, res) {
  const path = req.url.split('?')[0]
  let upload = 0
  req.on('data', (d) => { upload += d.length })
  req.on('end', () => {
    if (path === '/') {
      for (const p of Object.keys(PUSHED)) {
        const s = res.push(p, {
          request: { accept: '*/*' },
          response: { 'content-type': PUSHED[p].type, 'cache-control': 'max-age=60' }
        })
        s.on('error', () => {})
        s.end(body(PUSHED[p].size, p.length))
      }
      res.writeHead(200, {
        'content-type': 'text/html; charset=utf-8',
        'x-associated-content': Object.keys(PUSHED).map((p) => `"http://localhost${p}"`).join(', '),
        'x-subresources': '/style.css,/app.js,/img/logo.png'
      })
      res.end(page())
      return
    }
    const r = R[path]
    setTimeout(() => {
      if (!r) { res.writeHead(404); res.end(); return }
      if (r.method === 'POST') {
        const b = Buffer.from(JSON.stringify({ received: upload }))
        res.writeHead(200, { 'content-type': r.type, 'content-length': b.length })
        res.end(b)
        return
      }
      const b = body(r.size, path.length)
      res.writeHead(r.status || 200, { 'content-type': r.type, 'content-length': b.length, 'cache-control': 'max-age=3600' })
      res.end(b)
    }, r ? r.delay : 0)
  })
}

const opts = {
  spdy: {
    protocols: ['spdy/' + version],
    protocol: 'spdy/' + version, // plain: no ALPN, so say which version to speak
    plain: !args.key,
    ssl: !!args.key,
    // autoSpdy31: a cleartext server cannot learn 3.1 from the wire (frames say version 3); without
    // it spdy-transport speaks 3 and ignores the client's session window
    connection: { headerCompression: true, windowSize: 1 << 20, autoSpdy31: version === '3.1' }
  }
}
if (args.key) {
  opts.key = fs.readFileSync(args.key)
  opts.cert = fs.readFileSync(args.cert)
}
const server = spdy.createServer(opts, args.root ? staticHandler : handler)
server.listen(+args.port, args.host || '127.0.0.1', () => console.log('listening', args.port, version, args.key ? 'tls' : 'plain'))
process.on('SIGTERM', () => { log.close(() => process.exit(0)) })
