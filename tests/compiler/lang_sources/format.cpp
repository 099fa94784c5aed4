#include "x.h"
#include <vector>
namespace fmt {
namespace detail {
/// formatter doc
template <typename T> struct formatter<T, char> : base<T>, public other {
  void f() const;
  int g() { return 1; }
};
}
template <typename T> void detail::formatter<T, char>::f() const { obj->run(); A::b(); x.y(); new Foo(); }
inline namespace v11 { void w() {} }
namespace a::b { class C { C() {} ~C() {} }; }
}
Foo::~Foo() {}
bool operator==(A a, B b) { return 1; }
int *ptr(void) { return 0; }
template <> struct formatter<foo, char> {};
