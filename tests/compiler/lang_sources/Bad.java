class Ok {
  void fine() {}
  void broken( {
}
class After { void g() {} }
