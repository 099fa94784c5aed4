import { Color } from './model'
import { clamp } from './model/color.js'

export class Fixer {
  private color = new Color()

  fix(text: string): number {
    return this.apply(this.color.parse(text))
  }

  apply(n: number): number {
    return clamp(n)
  }
}

export function makeFixer(): Fixer {
  return new Fixer()
}
