#include "fmt/core.hpp"

namespace fmt {
namespace detail {
void buffer::grow(int n) {}

int count_digits(int n) { return n < 10 ? 1 : 1 + count_digits(n / 10); }
}  // namespace detail

void formatter::format(int v) {
  int n = detail::count_digits(v);
  push_back('0');
  this->grow(n);
}
}  // namespace fmt
