use super::X;
pub fn h(_: X) -> usize {
    1
}
