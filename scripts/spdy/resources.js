'use strict'
// The test page: ~10 sub-resources of varied sizes and server delays, two pushed, one large
// enough (200 KB > 64 KB initial window) to need WINDOW_UPDATE.  Content is deterministic.
function body (size, seed) {
  const b = Buffer.alloc(size)
  let x = seed * 2654435761 >>> 0
  for (let i = 0; i < size; i++) { x = (x * 1103515245 + 12345) >>> 0; b[i] = 32 + ((x >>> 16) % 95) }
  return b
}
const R = {
  '/style.css': { size: 2400, delay: 5, type: 'text/css', weight: 1 },
  '/app.js': { size: 18000, delay: 40, type: 'application/javascript', weight: 8 },
  '/img/logo.png': { size: 5200, delay: 0, type: 'image/png', weight: 22 },
  '/img/hero.jpg': { size: 41000, delay: 120, type: 'image/jpeg', weight: 30 },
  '/img/icon1.gif': { size: 900, delay: 15, type: 'image/gif', weight: 36 },
  '/img/icon2.gif': { size: 1300, delay: 60, type: 'image/gif', weight: 36 },
  '/font.woff': { size: 12000, delay: 25, type: 'font/woff', weight: 12 },
  '/big.bin': { size: 200000, delay: 10, type: 'application/octet-stream', weight: 29 },
  '/missing.txt': { size: 0, delay: 30, type: 'text/plain', weight: 20, status: 404 },
  '/api/echo': { size: 0, delay: 20, type: 'application/json', weight: 15, method: 'POST', upload: 5000 }
}
const PUSHED = {
  '/pushed.css': { size: 3100, type: 'text/css' },
  '/pushed.js': { size: 7000, type: 'application/javascript' }
}
exports.R = R
exports.PUSHED = PUSHED
exports.body = body
exports.page = function page () {
  const links = Object.keys(R).map((p) => `<a href="${p}">${p}</a>`).join('\n')
  return Buffer.from(`<!doctype html><html><head><link rel=stylesheet href="/pushed.css">` +
    `<script src="/pushed.js"></script></head><body>\n${links}\n</body></html>\n`)
}
