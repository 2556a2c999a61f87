'use strict'
// Logs every SPDY header block this process sends or receives, as JSON lines, taken from
// spdy-transport's own framer (the uncompressed block handed to zlib) and parser (the
// block zlib returned) -- the implementation's ground truth, independent of wirefall.
// Line: {"role","dir":"send"|"recv","version","frame","stream","assoc","priority","flags",
//        "headers":[[name,value],...]}   (values exactly as on the wire, NUL separators kept)
const fs = require('fs')
const Framer = require('spdy-transport/lib/spdy-transport/protocol/spdy/framer.js')
// the SPDY Parser class is not exported; reach it through its factory
const Parser = require('spdy-transport/lib/spdy-transport/protocol/spdy/parser.js').create({}).constructor
const utils = require('spdy-transport/lib/spdy-transport/protocol/base/utils.js')

function parseNV (buf, version) {
  const size = version === 2 ? 2 : 4
  const rd = (o) => size === 2 ? buf.readUInt16BE(o) : buf.readUInt32BE(o)
  let o = 0
  const n = rd(o); o += size
  const out = []
  for (let i = 0; i < n; i++) {
    const kl = rd(o); o += size
    const k = buf.slice(o, o + kl).toString('latin1'); o += kl
    const vl = rd(o); o += size
    const v = buf.slice(o, o + vl).toString('latin1'); o += vl
    out.push([k, v])
  }
  return out
}

function toBuf (x) {
  if (Buffer.isBuffer(x)) return x
  if (Array.isArray(x)) return Buffer.concat(x.map(toBuf))
  return Buffer.from(x)
}

exports.install = function install (role, file) {
  const out = fs.createWriteStream(file, { flags: 'a' })
  const log = (o) => out.write(JSON.stringify(Object.assign({ role: role, t: Date.now() / 1000 }, o)) + '\n')

  // --- send side
  const origSyn = Framer.prototype._synFrame
  Framer.prototype._synFrame = function (frame, cb) {
    const w = (frame.priority && frame.priority.weight) || 16
    this.__wf = { frame: 'SYN_STREAM', stream: frame.id, assoc: frame.associated || 0, priority: utils.weightToPriority(w), flags: frame.fin ? 1 : 0 }
    return origSyn.call(this, frame, cb)
  }
  const origResp = Framer.prototype.responseFrame
  Framer.prototype.responseFrame = function (frame, cb) {
    this.__wf = { frame: 'SYN_REPLY', stream: frame.id }
    return origResp.call(this, frame, cb)
  }
  const origHdrs = Framer.prototype.headersFrame
  Framer.prototype.headersFrame = function (frame, cb) {
    this.__wf = { frame: 'HEADERS', stream: frame.id }
    return origHdrs.call(this, frame, cb)
  }
  const origH2D = Framer.prototype.headersToDict
  Framer.prototype.headersToDict = function (headers, pre, cb) {
    const self = this
    const c = this.compress
    if (c && !c.__wf) {
      c.__wf = true
      const w = c.write
      c.write = function (data, cb2) {
        // LockStream re-calls write() for queued blocks: log each block once, at its first call
        if (data.__wf) return w.call(c, data, cb2)
        data.__wf = true
        const ctx = self.__wf || {}
        self.__wf = null
        log(Object.assign({ dir: 'send', version: self.version }, ctx, { headers: parseNV(toBuf(data), self.version) }))
        return w.call(c, data, cb2)
      }
    }
    return origH2D.call(this, headers, pre, cb)
  }

  // --- receive side
  const origSynHead = Parser.prototype.onSynHeadFrame
  Parser.prototype.onSynHeadFrame = function (type, flags, body, cb) {
    const head = body.clone(type === 1 ? 10 : 4)
    const ctx = { frame: type === 1 ? 'SYN_STREAM' : 'SYN_REPLY', stream: head.readUInt32BE() & 0x7fffffff, flags: flags }
    if (type === 1) {
      ctx.assoc = head.readUInt32BE() & 0x7fffffff
      const p = head.readUInt8()
      ctx.priority = this.version === 2 ? p >> 6 : p >> 5
    }
    this.__wf = ctx
    return origSynHead.call(this, type, flags, body, cb)
  }
  const origHF = Parser.prototype.onHeaderFrames
  Parser.prototype.onHeaderFrames = function (body, cb) {
    const head = body.clone(4)
    this.__wf = { frame: 'HEADERS', stream: head.readUInt32BE() & 0x7fffffff }
    return origHF.call(this, body, cb)
  }
  const origKV = Parser.prototype.parseKVs
  Parser.prototype.parseKVs = function (buffer, cb) {
    const self = this
    const d = this.decompress
    if (d && !d.__wf) {
      d.__wf = true
      const w = d.write
      d.write = function (data, cb2) {
        if (data.__wf) return w.call(d, data, cb2)
        data.__wf = true
        const ctx = self.__wf || {}
        self.__wf = null
        return w.call(d, data, function (err, chunks) {
          if (!err) log(Object.assign({ dir: 'recv', version: self.version }, ctx, { headers: parseNV(toBuf(chunks), self.version) }))
          cb2(err, chunks)
        })
      }
    }
    return origKV.call(this, buffer, cb)
  }
  return { log: log, close: (cb) => out.end(cb) }
}
