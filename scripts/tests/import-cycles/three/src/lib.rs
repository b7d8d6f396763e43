mod x;
mod z;
