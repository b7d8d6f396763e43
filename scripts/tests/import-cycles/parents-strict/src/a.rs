use crate::Shared;
pub fn f(_: Shared) {}
