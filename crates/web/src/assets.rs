//! The page's files, embedded in the binary: `cargo build` alone gives a working page, and it
//! works offline.

/// (path under `/assets/`, content type, bytes).
pub const ASSETS: &[(&str, &str, &[u8])] = &[
    (
        "app.js",
        "text/javascript; charset=utf-8",
        include_bytes!("../assets/app.js"),
    ),
    (
        "engine.js",
        "text/javascript; charset=utf-8",
        include_bytes!("../assets/engine.js"),
    ),
    (
        "worker.js",
        "text/javascript; charset=utf-8",
        include_bytes!("../assets/worker.js"),
    ),
    (
        "favicon.svg",
        "image/svg+xml",
        include_bytes!("../assets/favicon.svg"),
    ),
    (
        "style.css",
        "text/css; charset=utf-8",
        include_bytes!("../assets/style.css"),
    ),
];

/// The page itself.
pub const INDEX_HTML: &str = include_str!("../assets/index.html");

/// The asset at `path`, with its content type.
pub fn asset(path: &str) -> Option<(&'static str, &'static [u8])> {
    ASSETS
        .iter()
        .find(|(p, _, _)| *p == path)
        .map(|(_, t, b)| (*t, *b))
}
