//! No import circle among crates/sim's modules: module A names `crate::B` (or a path into B)
//! and B, directly or by a chain, names A. The family plug-ins (src/family) depend on the core
//! (scenario, engine, report) and the core on no family's harness, so that each can be read and
//! changed alone.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Every module of the tree at `src`, by path (`""` for the crate root), with its source.
fn modules(src: &Path) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let mut stack = vec![src.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).expect("read src") {
            let path = entry.expect("entry").path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            if path.extension().is_none_or(|e| e != "rs") {
                continue;
            }
            let rel = path
                .strip_prefix(src)
                .expect("under src")
                .with_extension("");
            let mut parts: Vec<String> = rel
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect();
            if parts.last().is_some_and(|p| p == "mod") {
                parts.pop();
            }
            if parts == ["lib"] {
                parts.clear();
            }
            let text = std::fs::read_to_string(&path).expect("read file");
            out.insert(parts.join("::"), text);
        }
    }
    out
}

/// The code of a file without its comments and its unit tests.
fn code(text: &str) -> String {
    let text = match text.find("#[cfg(test)]\nmod tests") {
        Some(i) => &text[..i],
        None => text,
    };
    text.lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The paths after `prefix` in `code` (`crate::a::b::C` gives `a::b::C`), with those of
/// `use crate::{a, b::c}` lists.
fn paths(code: &str, prefix: &str) -> Vec<String> {
    let ident = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == ':';
    let mut out = Vec::new();
    let mut rest = code;
    while let Some(i) = rest.find(prefix) {
        let before = rest[..i].chars().last();
        rest = &rest[i + prefix.len()..];
        if before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_') {
            continue;
        }
        if let Some(list) = rest.strip_prefix('{') {
            let end = list.find("};").unwrap_or(list.len());
            for item in list[..end].split(',') {
                let item: String = item.trim().chars().take_while(|&c| ident(c)).collect();
                if !item.is_empty() {
                    out.push(item);
                }
            }
            continue;
        }
        let path: String = rest.chars().take_while(|&c| ident(c)).collect();
        out.push(path.trim_end_matches(':').to_string());
    }
    out
}

/// Which modules each module names.
fn graph(modules: &BTreeMap<String, String>) -> BTreeMap<String, BTreeSet<String>> {
    let resolve = |path: &str| -> Option<String> {
        let segs: Vec<&str> = path.split("::").collect();
        (1..=segs.len())
            .rev()
            .map(|k| segs[..k].join("::"))
            .find(|c| modules.contains_key(c))
    };
    let mut g = BTreeMap::new();
    for (name, text) in modules {
        let code = code(text);
        let parent = name.rsplit_once("::").map_or("", |(p, _)| p);
        let mut deps: BTreeSet<String> = paths(&code, "crate::")
            .iter()
            .filter_map(|p| resolve(p))
            .collect();
        for p in paths(&code, "super::") {
            let full = if parent.is_empty() {
                p
            } else {
                format!("{parent}::{p}")
            };
            deps.insert(resolve(&full).unwrap_or_else(|| parent.to_string()));
        }
        deps.remove(name);
        deps.remove("");
        g.insert(name.clone(), deps);
    }
    g
}

/// A circle of `g`, if any, as the modules along it.
fn circle(g: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        g: &BTreeMap<String, BTreeSet<String>>,
        at: &str,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(i) = path.iter().position(|p| p == at) {
            let mut c = path[i..].to_vec();
            c.push(at.to_string());
            return Some(c);
        }
        if done.contains(at) {
            return None;
        }
        path.push(at.to_string());
        for next in g.get(at).into_iter().flatten() {
            if let Some(c) = visit(g, next, path, done) {
                return Some(c);
            }
        }
        path.pop();
        done.insert(at.to_string());
        None
    }
    let mut done = BTreeSet::new();
    g.keys()
        .find_map(|m| visit(g, m, &mut Vec::new(), &mut done))
}

#[test]
fn the_simulator_s_modules_import_each_other_in_no_circle() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let modules = modules(&src);
    assert!(
        modules.contains_key("family::mutex::harness"),
        "the tree was read"
    );
    let g = graph(&modules);
    assert!(
        g["family::mutex"].contains("family::plugin"),
        "the graph follows crate:: paths"
    );
    if let Some(c) = circle(&g) {
        panic!("import circle: {}", c.join(" -> "));
    }
}

#[test]
fn a_circle_is_found_through_crate_and_super_paths() {
    let files = [
        ("", "mod a;\nmod b;\n"),
        ("a", "use crate::b::Thing;\n"),
        ("b", "pub struct Thing;\nmod c;\n"),
        (
            "b::c",
            "// use crate::a; in a comment does not count\nuse super::super::a::X;\n",
        ),
    ];
    let modules: BTreeMap<String, String> = files
        .iter()
        .map(|(n, t)| (n.to_string(), t.to_string()))
        .collect();
    let g = graph(&modules);
    assert_eq!(g["a"], BTreeSet::from(["b".to_string()]));
    // `super::super::a` from b::c is not resolved by this simple reader, so b::c depends on b:
    // no circle through it.
    assert_eq!(circle(&g), None);
    let mut modules = modules;
    modules.insert("b".into(), "use crate::{a::X, c};\n".into());
    let g = graph(&modules);
    assert_eq!(
        circle(&g),
        Some(vec!["a".to_string(), "b".to_string(), "a".to_string()])
    );
}
