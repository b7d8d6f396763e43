// use crate::a;  (a comment)
/* crate::b::g() /* nested */ crate::a::f() */
pub struct C;
pub fn text() -> (&'static str, &'static str, char) {
    ("crate::a::f()", r#"crate::b::g() "quoted" "#, '"')
}
pub fn after<'a>(s: &'a str) -> &'a str {
    s
}
