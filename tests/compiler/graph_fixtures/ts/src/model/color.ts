export interface Parser {
  parse(text: string): number
}

export class Color implements Parser {
  parse(text: string): number {
    return clamp(parseInt(text, 16))
  }
}

export function clamp(n: number): number {
  return Math.max(0, n)
}
