use crate::{b::B, other::Thing};

pub struct A(pub B);
