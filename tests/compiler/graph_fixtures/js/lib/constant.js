export const FORMAT_DEFAULT = 'YYYY'
export function normalize(u) {
  return u.toLowerCase()
}
