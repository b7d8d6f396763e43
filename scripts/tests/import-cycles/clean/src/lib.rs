pub mod a;
pub mod b;
pub mod c;
pub use a::Thing;
pub fn run() {
    a::f();
    b::g();
}
