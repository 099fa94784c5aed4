//! Crate doc.
use crate::a::{b, c as d, e::*, self};
use std::io;
mod m;

#[derive(Debug)]
/// A struct.
/// More.
pub struct S<T> { x: T }

impl<T: X> fmt::Display for S<T> {
    fn fmt(&self) { self.g(); S::new(); foo::bar(); h(); x.y::<u8>(); Vec::<u8>::new(); }
}
impl S<u8> { pub fn new() -> Self { fn inner() {} S { x: 0 } } }
trait Tr: A + B { fn q(&self); fn r() {} }
mod inner { enum E {} union U {} fn f() {} }
