import { pad } from './util'

// ES classes: `this.m()` reaches the class's own and inherited methods; a parameter or a
// local variable shadows a same-named import or top-level function.
export class Model {
  constructor(data) {
    this.data = data
  }

  save() {
    this.validate()
    return this.store(pad(this.data, 2))
  }

  validate() {
    return validate(this.data)
  }

  store(payload) {
    return payload
  }
}

export class User extends Model {
  store(payload) {
    const pad = payload.padding
    return pad(payload)
  }

  rename(name, validate) {
    validate(name)
    this.validate()
    return this.save()
  }
}

function validate(data) {
  return data !== undefined
}
