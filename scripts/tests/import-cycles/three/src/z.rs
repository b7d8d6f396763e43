pub fn g() -> usize {
    crate::x::y::h(crate::x::X)
}
