const helper = (d) => d

export default function Plugin(d) {
  return helper(d)
}
