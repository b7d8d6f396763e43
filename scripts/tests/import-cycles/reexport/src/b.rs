use crate::Thing;
pub fn g() {
    let _ = Thing;
}
