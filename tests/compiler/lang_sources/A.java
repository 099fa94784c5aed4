package a.b;
import static a.b.C.d;
import a.b.*;
import x.Y;
/** A doc. */
@Ann public class A<T> extends B<T> implements I, J {
  A() { super(); }
  // m doc
  <U> void m(int x) { this.f(); new Foo<>(); C.g(); h(); new Runnable() { public void run() {} }; }
  interface K extends L { void k(); }
  enum E { X; void z(){} }
  record R(int a) {}
}
