pub(crate) use crate::a::Thing;
pub fn g() -> usize {
    std::mem::size_of::<Thing>()
}
