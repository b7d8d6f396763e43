pub struct B;

impl B {
    pub fn a(&self) -> usize {
        std::mem::size_of::<crate::a::A>()
    }
}
