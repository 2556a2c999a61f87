'use strict'
// SPDY client on spdy-transport 3.0.0 (the engine of npm spdy 4.0.2's agent, used directly so
// that each request gets its own priority).  Loads "/", accepts pushes, then fetches every
// sub-resource concurrently, one with an upload body.  Logs every header block (hooks.js).
// node client.js --port P --version 2|3|3.1 [--tls 1] --log FILE
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
const host = 'localhost:' + port

const socket = args.tls
  ? tls.connect({ port: port, host: '127.0.0.1', servername: 'localhost', ALPNProtocols: ['spdy/' + version], rejectUnauthorized: false })
  : net.connect(port, '127.0.0.1')

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
    const pushes = []
    stream.on('pushPromise', (push) => {
      pushes.push(push.path)
      let pn = 0
      push.on('data', (d) => { pn += d.length })
      push.on('end', () => console.log('push', push.path, pn))
      push.on('error', () => {})
      push.resume()
    })
    stream.on('response', (status) => { stream.status = status })
    stream.on('data', (d) => { n += d.length })
    stream.on('end', () => { console.log(path, stream.status, n); resolve({ path, status: stream.status, n, pushes }) })
    stream.on('error', reject)
    if (upload) stream.end(body(upload, 7))
    else stream.end()
  })
}

socket.on(args.tls ? 'secureConnect' : 'connect', async () => {
  const conn = transport.connection.create(socket, {
    protocol: 'spdy', isServer: false, headerCompression: true, windowSize: 65536
  })
  conn.start(version === '3.1' ? 3.1 : +version)
  conn.on('error', (e) => console.error('conn error', e))
  try {
    await fetch(conn, '/', 1)
    await new Promise((resolve) => setTimeout(resolve, 30))
    await Promise.all(Object.keys(R).map((p) => fetch(conn, p, R[p].weight, R[p].method, R[p].upload)))
    await conn.ping ? new Promise((resolve) => conn.ping(resolve)) : null
  } catch (e) { console.error('error', e) }
  conn.end(() => { log.close(() => { socket.end(); setTimeout(() => process.exit(0), 100) }) })
})
