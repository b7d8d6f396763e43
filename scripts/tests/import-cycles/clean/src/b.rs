use crate::Thing;
pub fn g() {
    let _ = Thing;
    let _ = crate::c::C;
}
