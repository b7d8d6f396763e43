mod y;
pub struct X;
pub fn f() -> usize {
    crate::z::g()
}
