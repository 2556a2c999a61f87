'use strict'
// SPDY client on spdy-transport 3.0.0 (the engine of npm spdy 4.0.2's agent, used directly so
// that each request gets its own priority).  Loads "/", accepts pushes, then fetches every
// sub-resource concurrently, one with an upload body.  Logs every header block (hooks.js).
// node client.js --port P --version 2|3|3.1 [--tls 1] --log FILE [--host H]
//   [--page 1]  load a real page like a browser instead of resources.js's list: GET "/", find the
//               sub-resources the HTML references (href/src/fetch of same-origin paths, as the lab
//               page of scripts/lab/page/generate.py has them), fetch them all concurrently with
//               Chromium's SPDY/3 priorities (document and CSS 0, scripts and fetch 1, images 3);
//               prints one JSON line per response {path, status, bytes, start_ms, end_ms}.
const net = require('net')
const tls = require('tls')
const transport = require('spdy-transport')
const hooks = require('./hooks.js')
const { R, body } = require('./resources.js')

const args = {}
for (let i = 2; i < process.argv.length; i += 2) args[process.argv[i].slice(2)] = process.argv[i + 1]
const version = args.version || '3.1'
const port = +args.port
const log = hooks.install('client', args.log || 'client.jsonl')
const addr = args.host || '127.0.0.1'
const host = (args.host ? args.host : 'localhost') + ':' + port

const socket = args.tls
  ? tls.connect({ port: port, host: addr, servername: 'localhost', ALPNProtocols: ['spdy/' + version], rejectUnauthorized: false })
  : net.connect(port, addr)

function fetch (conn, path, weight, method, upload) {
  return new Promise((resolve, reject) => {
    const stream = conn.request({
      method: method || 'GET',
      path: path,
      host: host,
      priority: { weight: weight, parent: 0, exclusive: false },
      headers: { 'user-agent': 'wirefall-spdy-client/1.0 (spdy-transport 3.0.0)', accept: '*/*', 'accept-encoding': 'identity' }
    }, (err) => { if (err) reject(err) })
    let n = 0
    const chunks = []
    const t0 = Date.now()
    const pushes = []
    const pushDone = []
    stream.on('pushPromise', (push) => {
      pushes.push(push.path)
      let pn = 0
      push.on('data', (d) => { pn += d.length })
      pushDone.push(new Promise((resolve) => { push.on('end', resolve); push.on('error', resolve) }))
      push.on('end', () => {
        if (!args.page) { console.log('push', push.path, pn); return }
        const h = push.headers || {}
        const st = h[':status'] || h.status
        console.log(JSON.stringify({ path: push.path, status: st ? parseInt(st, 10) : null, bytes: pn, pushed: true, end_ms: Date.now() }))
      })
      push.on('error', () => {})
      push.resume()
    })
    stream.on('response', (status) => { stream.status = status })
    stream.on('data', (d) => { n += d.length; if (args.page) chunks.push(d) })
    stream.on('end', () => {
      if (args.page) {
        console.log(JSON.stringify({ path, status: stream.status, bytes: n, start_ms: t0, end_ms: Date.now() }))
      } else console.log(path, stream.status, n)
      resolve({ path, status: stream.status, n, pushes, pushDone, body: Buffer.concat(chunks) })
    })
    stream.on('error', reject)
    if (upload) stream.end(body(upload, 7))
    else stream.end()
  })
}

// Chromium's SPDY/3 priority per resource type; spdy-transport maps weight w to priority
// floor(min(35, w - 1) / 35 * 7), so weight 5p + 1 gives priority p.
function weightFor (path) {
  const p = /\.css$/.test(path) ? 0 : /\.(js|json)$/.test(path) ? 1 : /\.(jpe?g|png|gif|webp)$/.test(path) ? 3 : 2
  return 5 * p + 1
}

async function loadPage (conn) {
  const page = await fetch(conn, '/', 1)
  const html = page.body.toString('utf8')
  const seen = new Set(['/'])
  const paths = []
  const re = /(?:href|src)="(\/[^"]*)"|fetch\("(\/[^"]*)"/g
  let m
  while ((m = re.exec(html)) !== null) {
    const p = m[1] || m[2]
    // a pushed resource is taken from the push, as a browser's push cache would
    if (!seen.has(p) && !page.pushes.includes(p)) { seen.add(p); paths.push(p) }
  }
  const res = await Promise.all(paths.map((p) => fetch(conn, p, weightFor(p))))
  await Promise.all(page.pushDone)
  if (page.status !== 200 || res.some((r) => r.status !== 200)) process.exitCode = 1
}

socket.on(args.tls ? 'secureConnect' : 'connect', async () => {
  // --page: Chromium's SPDY/3.1 receive window (10 MiB), larger than any resource of the page. With
  // 64 KiB, spdy-transport sends WINDOW_UPDATE for streams the server has already finished, the
  // server answers RST_STREAM INVALID_STREAM and the client fails those requests.
  const conn = transport.connection.create(socket, {
    protocol: 'spdy', isServer: false, headerCompression: true, windowSize: args.page ? 10 << 20 : 65536
  })
  conn.start(version === '3.1' ? 3.1 : +version)
  conn.on('error', (e) => console.error('conn error', e))
  try {
    if (args.page) {
      await loadPage(conn)
    } else {
      await fetch(conn, '/', 1)
      await new Promise((resolve) => setTimeout(resolve, 30))
      await Promise.all(Object.keys(R).map((p) => fetch(conn, p, R[p].weight, R[p].method, R[p].upload)))
      await conn.ping ? new Promise((resolve) => conn.ping(resolve)) : null
    }
  } catch (e) { console.error('error', e); process.exitCode = 1 }
  conn.end(() => { log.close(() => { socket.end(); setTimeout(() => process.exit(process.exitCode || 0), 100) }) })
})
