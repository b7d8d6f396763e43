mod a;
mod b;
