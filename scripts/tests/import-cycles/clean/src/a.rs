pub struct Thing;
pub fn f() {
    let _ = crate::c::C;
    let _ = crate::Thing;
}
#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn t() {
        f();
        let _ = super::Thing;
    }
}
