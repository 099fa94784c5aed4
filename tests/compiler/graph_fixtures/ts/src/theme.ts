import { clamp } from './model/color'

// Object-literal methods call one another through `this`; a parameter shadows an import.
export const theme = {
  lighten(n: number): number {
    return this.scale(n, 2)
  },
  scale(n: number, by: number): number {
    return clamp(n * by)
  },
}

export function darken(n: number, clamp?: (x: number) => number): number {
  return clamp ? clamp(n) : theme.scale(n, 0.5)
}

export class Palette {
  base = 1

  adapter() {
    return {
      bright: () => this.boost(2),
    }
  }

  boost(n: number): number {
    return n + this.base
  }
}
