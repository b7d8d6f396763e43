pub struct Thing;
pub fn f() {
    crate::b::g()
}
