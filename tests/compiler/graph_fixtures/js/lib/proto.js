// A constructor function with prototype methods, a prototype written as an object literal,
// and object-literal methods calling one another.
function Query(text) {
  this.text = text
  this.reset()
}

Query.prototype.reset = function () {
  this.parts = this.split(this.text)
}

Query.prototype.split = function (text) {
  return text.split(' ')
}

Cursor.prototype = {
  next() {
    return this.peek()
  },
  peek: function () {
    return this.items[0]
  }
}

function Cursor(items) {
  this.items = items
}

const registry = {
  add(name) {
    this.check(name)
    return helpers.wrap(name)
  },
  check(name) {
    return name
  }
}

const helpers = {
  wrap(x) {
    return check(x)
  }
}

function check(x) {
  return x
}

module.exports = { Query, Cursor, registry }
