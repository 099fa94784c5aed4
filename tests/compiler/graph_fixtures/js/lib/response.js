'use strict'
// express's lib/response.js in small: methods assigned to one object call one another
// through `this`; the `send` package's import shadows the name `send` of `res.send`.
var send = require('send')
var normalize = require('./constant').normalize

var res = module.exports = {}

res.status = function status(code) {
  this.statusCode = code
  return this
}

res.set =
res.header = function header(field, value) {
  this.setHeader(field, value)
  return this
}

res.send = function send(body) {
  this.set('Content-Length', body.length)
  this.end(body)
  return this
}

res.json = function json(obj) {
  var body = stringify(obj)
  this.set('Content-Type', 'application/json')
  return this.send(body)
}

res.sendStatus = function sendStatus(code) {
  this.status(code)
  return this.send(normalize(String(code)))
}

res.sendFile = function sendFile(path, callback) {
  var self = this
  var file = send(this.req, path)
  file.on('end', function () {
    self.status(200)
    callback()
  })
}

res.render = function render(view, status) {
  status(200)
  return res.send(view)
}

function stringify(value) {
  return JSON.stringify(value)
}
