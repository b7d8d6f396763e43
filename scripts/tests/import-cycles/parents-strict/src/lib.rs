mod a;
pub struct Shared;
pub fn run() {
    a::f(Shared)
}
