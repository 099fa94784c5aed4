import { pad, isDate } from './util'
import * as C from './constant.js'
import Plugin from './plugin'

class Base {
  init() {
    return this.reset()
  }

  reset() {
    return 0
  }
}

class Dayjs extends Base {
  constructor(date) {
    super()
    this.$d = isDate(date) ? date : new Date()
    this.init()
  }

  format(str) {
    const unit = C.normalize(str || C.FORMAT_DEFAULT)
    return pad(unit, 2)
  }
}

const dayjs = function (date) {
  return new Dayjs(date)
}

dayjs.extend = (plugin) => {
  plugin(Dayjs, dayjs)
  return Plugin(dayjs)
}

export default dayjs
