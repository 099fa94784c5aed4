import X, { a as b, c } from './util'
import * as ns from "../ns"
const { d, e: ee } = require('./req')
const mod = require('mod')

/**
 * Dayjs wraps a date.
 */
class Dayjs extends Base {
  constructor(cfg) { super(cfg); this.init() }
  // formats it
  format(str) { return ns.fmt(this, str) }
  static parse = (s) => new Dayjs(s)
  get y() { return 1 }
  set y(v) {}
}

export const f = () => { helper() }
const g = function () {}, h = () => 2
Dayjs.prototype.add = function (n) { return this.clone() }
exports.plugin = function (o, c) {}
export default {
  name: 'en',
  ordinal: n => `${n}th`,
  m() { function inner() {} }
}
export { q } from './q'
import('./lazy')
