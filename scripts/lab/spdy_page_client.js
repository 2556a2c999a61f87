'use strict'
// SPDY/3.1 page loader for `wirefall lab --page` (pages with several origins, lab/pages.py).
// The engine is spdy-transport 3.0.0 (npm spdy 4.0.2's), from scripts/spdy/node_modules.
//
//   node spdy_page_client.js --url https://HOST/ [--version 3.1] --log FILE [--port 443]
//
// Like a browser without a parser: GET the document; every https:// URL found in the document,
// a stylesheet or a script (the lab's generated bodies reference their children by absolute URL:
// href/src attributes, url() in CSS, the list a script inserts) is fetched as soon as the body
// that references it has arrived, at once, on one connection per origin (names resolved with
// dns.lookup: the system resolver, i.e. the lab's DNS server through the namespace's
// resolv.conf), with Chromium's SPDY/3 priorities (document and CSS 0, scripts and fetch 1,
// images 3). A pushed resource is taken from the push. Prints one JSON line per response
// {url, status, bytes, start_ms, end_ms, pushed?}; exit status 1 unless every one was a 200.
const path = require('path')
const tls = require('tls')
const dns = require('dns')
const MODS = path.join(__dirname, '..', 'spdy', 'node_modules')
const transport = require(path.join(MODS, 'spdy-transport'))
const hooks = require(path.join(__dirname, '..', 'spdy', 'hooks.js'))

const args = {}
for (let i = 2; i < process.argv.length; i += 2) args[process.argv[i].slice(2)] = process.argv[i + 1]
const version = args.version || '3.1'
const port = +(args.port || 443)
const log = hooks.install('client', args.log || 'client.jsonl')
const conns = new Map() // host -> Promise<connection>
const seen = new Set()
const pushed = new Set()
const jobs = []
let failed = false

function connect (host) {
  if (conns.has(host)) return conns.get(host)
  const p = new Promise((resolve, reject) => {
    dns.lookup(host, { family: 4 }, (err, addr) => {
      if (err) { reject(err); return }
      const socket = tls.connect({ port, host: addr, servername: host, ALPNProtocols: ['spdy/' + version], rejectUnauthorized: false })
      socket.on('error', reject)
      socket.on('secureConnect', () => {
        // Chromium's SPDY/3.1 receive window (10 MiB); with 64 KiB spdy-transport sends
        // WINDOW_UPDATE for streams the server has finished and the server resets them
        const conn = transport.connection.create(socket, { protocol: 'spdy', isServer: false, headerCompression: true, windowSize: 10 << 20 })
        conn.start(version === '3.1' ? 3.1 : +version)
        conn.on('error', (e) => console.error('conn error', host, e))
        conn.socket_ = socket
        resolve(conn)
      })
    })
  })
  conns.set(host, p)
  return p
}

function weightFor (u) {
  const p = /\.css$/.test(u) ? 0 : /\.(js|json)$/.test(u) ? 1 : /\.(jpe?g|png|gif|webp|svg|ico)$/.test(u) ? 3 : 2
  return 5 * p + 1
}

function refs (body) {
  const out = []
  const re = /https:\/\/[A-Za-z0-9.-]+(?::\d+)?\/[^"'()\s<>\\]*/g
  let m
  while ((m = re.exec(body)) !== null) out.push(m[0])
  return out
}

function discover (u, body) {
  if (!/\.(css|js)$/.test(u) && !/\/$/.test(u) && !/\.html$/.test(u)) return
  for (const r of refs(body.toString('utf8'))) {
    if (seen.has(r) || pushed.has(r)) continue
    seen.add(r)
    jobs.push(fetch(r))
  }
}

async function fetch (u) {
  const url = new URL(u)
  const conn = await connect(url.hostname)
  return new Promise((resolve, reject) => {
    const t0 = Date.now()
    const stream = conn.request({
      method: 'GET',
      path: url.pathname + url.search,
      host: url.host,
      priority: { weight: weightFor(url.pathname), parent: 0, exclusive: false },
      headers: { 'user-agent': 'wirefall-spdy-client/1.0 (spdy-transport 3.0.0)', accept: '*/*', 'accept-encoding': 'identity' }
    }, (err) => { if (err) reject(err) })
    const chunks = []
    let n = 0
    stream.on('pushPromise', (push) => {
      const pu = 'https://' + url.host + push.path
      pushed.add(pu)
      seen.add(pu)
      const pc = []
      let pn = 0
      const done = new Promise((resolve) => {
        push.on('data', (d) => { pn += d.length; pc.push(d) })
        push.on('end', () => {
          const h = push.headers || {}
          const st = h[':status'] || h.status
          console.log(JSON.stringify({ url: pu, status: st ? parseInt(st, 10) : null, bytes: pn, pushed: true, end_ms: Date.now() }))
          discover(pu, Buffer.concat(pc))
          resolve()
        })
        push.on('error', resolve)
      })
      jobs.push(done)
      push.resume()
    })
    stream.on('response', (status) => { stream.status = status })
    stream.on('data', (d) => { n += d.length; chunks.push(d) })
    stream.on('end', () => {
      console.log(JSON.stringify({ url: u, status: stream.status, bytes: n, start_ms: t0, end_ms: Date.now() }))
      if (stream.status !== 200) failed = true
      discover(u, Buffer.concat(chunks))
      resolve()
    })
    stream.on('error', reject)
    stream.end()
  })
}

async function main () {
  seen.add(args.url)
  jobs.push(fetch(args.url))
  // jobs grows while bodies arrive: wait until no new fetch was started
  for (let done = 0; done < jobs.length;) {
    const n = jobs.length
    await Promise.all(jobs.slice(done, n))
    done = n
  }
}

main().catch((e) => { console.error('error', e); failed = true }).then(async () => {
  const cs = await Promise.all([...conns.values()].map((p) => p.catch(() => null)))
  let left = cs.filter(Boolean).length
  const finish = () => log.close(() => setTimeout(() => process.exit(failed ? 1 : 0), 100))
  if (!left) { finish(); return }
  for (const c of cs.filter(Boolean)) {
    c.end(() => { c.socket_.end(); if (--left === 0) finish() })
  }
})
