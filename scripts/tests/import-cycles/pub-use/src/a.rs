pub struct Thing;
pub fn f() -> usize {
    crate::b::g()
}
