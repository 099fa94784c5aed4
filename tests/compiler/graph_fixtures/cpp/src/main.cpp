#include <fmt/core.hpp>
#include <vector>

int main() {
  fmt::formatter* f = new fmt::formatter();
  f->format(42);
  std::vector<int> v;
  v.push_back(1);
  return fmt::detail::count_digits(7);
}
