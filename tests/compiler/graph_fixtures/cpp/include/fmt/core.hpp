#pragma once
namespace fmt {
namespace detail {
class buffer {
 public:
  void push_back(char c) { grow(1); }
  void grow(int n);
};
int count_digits(int n);
}  // namespace detail

class formatter : public detail::buffer {
 public:
  void format(int v);
};
}  // namespace fmt
