// `var` and a hoisted function of one name: the `require` assigned at load time wins.
var pad = require('./util').pad
var merge = require('lodash.merge')

function merge(a, b) {
  return Object.assign(a, b)
}

function pad(s) {
  return s
}

exports.fill = function fill(s, n) {
  return merge(pad(s, n), {})
}
