export function pad(s, n) {
  return repeat(' ', n) + s
}

function repeat(c, n) {
  return c.repeat(n)
}

export const isDate = (d) => d instanceof Date
