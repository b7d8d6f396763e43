//! The documentation holds on a fresh clone: every `distsync` command the README shows runs
//! (except those that start real node processes), every output it quotes is what the binary
//! prints, every scenario template in the README and docs/ runs clean, every relative link points
//! to a file of the repository (and so does every path they mention), and every scenario of
//! scenarios/ is drawn in the gallery.

use regex::Regex;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap()
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// README.md and every docs/*.md, sorted.
fn markdown_files() -> Vec<PathBuf> {
    let mut files = vec![repo().join("README.md")];
    let mut docs: Vec<PathBuf> = std::fs::read_dir(repo().join("docs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    docs.sort();
    files.extend(docs);
    files
}

/// The fenced code blocks of a markdown text with the given info string.
fn blocks(text: &str, lang: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current: Option<String> = None;
    for line in text.lines() {
        match &mut current {
            None if line.trim_end() == format!("```{lang}") => current = Some(String::new()),
            None => {}
            Some(_) if line.starts_with("```") => out.push(current.take().unwrap()),
            Some(block) => {
                block.push_str(line);
                block.push('\n');
            }
        }
    }
    out
}

/// A scratch directory holding a link to scenarios/, where README commands run as written.
/// It is removed (the link, not what it points to) when the returned value drops, also when the
/// test fails.
fn workdir(name: &str) -> tempfile::TempDir {
    let dir = tempfile::TempDir::with_prefix(format!("distsync-docs-{name}-")).unwrap();
    std::os::unix::fs::symlink(repo().join("scenarios"), dir.path().join("scenarios")).unwrap();
    dir
}

fn distsync(dir: &Path, args: &[String]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_distsync"))
        .args(args)
        .current_dir(dir)
        .output()
        .expect("the binary runs")
}

/// The verbs the README shows that start real node processes or serve until stopped:
/// documented and tested in crates/net, crates/time, crates/web and crates/cli/tests
/// (net_cluster, lock_service, jepsen, store_snapshot, store_jepsen, time_chrony,
/// time_cluster, web_verb), not run from here.
const REAL_PROCESSES: [&str; 7] = ["cluster", "lock", "leader", "elect", "store", "time", "web"];

/// The `distsync` commands of a shell block: comments dropped, `&&` chains split, output
/// redirections dropped (the output is checked instead), the README's placeholder SCENARIO.toml
/// replaced by a real scenario, and `~/` (the user's home) by a directory of the scratch one.
fn commands(block: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    for line in block.lines() {
        let line = line.split(" #").next().unwrap().trim();
        for command in line.split("&&") {
            let command = command.split(" > ").next().unwrap();
            let words: Vec<String> = command
                .split_whitespace()
                .map(|w| match w {
                    "SCENARIO.toml" => "scenarios/ricart-agrawala-heavy.toml".to_string(),
                    w => match w.strip_prefix("~/") {
                        Some(rest) => format!("home/{rest}"),
                        None => w.to_string(),
                    },
                })
                .collect();
            if words.first().is_some_and(|w| w == "distsync") {
                out.push(words[1..].to_vec());
            }
        }
    }
    out
}

#[test]
fn every_readme_command_runs() {
    let readme = read(&repo().join("README.md"));
    let tmp = workdir("tour");
    let dir = tmp.path().to_path_buf();
    // The trace the tour's `clocks` and `trace render` lines read.
    let o = distsync(
        &dir,
        &[
            "run".into(),
            "scenarios/ricart-agrawala-heavy.toml".into(),
            "--trace".into(),
            "run.jsonl".into(),
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{o:?}");
    let mut ran = 0;
    let mut skipped = Vec::new();
    for block in blocks(&readme, "sh") {
        for args in commands(&block) {
            let shown = format!("distsync {}", args.join(" "));
            if REAL_PROCESSES.contains(&args[0].as_str()) {
                skipped.push(shown);
                continue;
            }
            let o = distsync(&dir, &args);
            let out = String::from_utf8_lossy(&o.stdout);
            let err = String::from_utf8_lossy(&o.stderr);
            assert!(!err.contains("panicked"), "{shown}: {err}");
            assert!(
                !out.is_empty() || !err.is_empty() || args.contains(&"--out".to_string()),
                "{shown} printed nothing"
            );
            match o.status.code() {
                Some(0) => {}
                // A violation is what some of these commands show; it must be said.
                Some(1) => assert!(
                    out.to_lowercase().contains("violation"),
                    "{shown} exited 1 without a violation: {out}{err}"
                ),
                code => panic!("{shown} exited {code:?}: {err}"),
            }
            // Files the command says it writes are written.
            for (flag, file) in args.iter().zip(args.iter().skip(1)) {
                if ["--plot", "--svg", "--perfetto", "--shiviz", "--trace"].contains(&flag.as_str())
                {
                    let written = dir.join(file);
                    assert!(
                        written.metadata().is_ok_and(|m| m.len() > 0),
                        "{shown} did not write {file}"
                    );
                }
            }
            ran += 1;
        }
    }
    assert!(ran >= 15, "only {ran} README commands found: {skipped:?}");
    for s in &skipped {
        let verb = s.split_whitespace().nth(1).unwrap();
        assert!(REAL_PROCESSES.contains(&verb), "{s}");
    }
    tmp.close().unwrap();
}

/// A `text` block opening with `$ distsync ...` shows that command's output: every line it
/// shows (but `...`) is printed, in that order, on stdout then stderr.
#[test]
fn readme_outputs_are_what_the_binary_prints() {
    let readme = read(&repo().join("README.md"));
    let tmp = workdir("outputs");
    let dir = tmp.path().to_path_buf();
    let mut checked = 0;
    for block in blocks(&readme, "text") {
        let mut lines = block.lines();
        let Some(command) = lines.next().and_then(|l| l.strip_prefix("$ distsync ")) else {
            continue;
        };
        let args: Vec<String> = command.split_whitespace().map(String::from).collect();
        let o = distsync(&dir, &args);
        let printed = format!(
            "{}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        );
        let mut rest = printed.as_str();
        for shown in lines.filter(|l| l.trim() != "...") {
            match rest.find(shown) {
                Some(at) => rest = &rest[at + shown.len()..],
                None => panic!(
                    "README shows `{shown}` for `distsync {command}`, which prints:\n{printed}"
                ),
            }
        }
        checked += 1;
    }
    assert!(checked >= 2, "only {checked} outputs found in the README");
    tmp.close().unwrap();
}

/// Every complete scenario (a `toml` block with `algorithm = ...` at its top level, before any
/// table: a cluster file's `[clock]` table names an algorithm too) in the README and docs/ runs
/// with no violation.
#[test]
fn every_scenario_template_in_the_docs_runs_clean() {
    let tmp = workdir("templates");
    let dir = tmp.path().to_path_buf();
    let mut checked = 0;
    for file in markdown_files() {
        for (i, block) in blocks(&read(&file), "toml").iter().enumerate() {
            if !block
                .lines()
                .take_while(|l| !l.trim_start().starts_with('['))
                .any(|l| l.starts_with("algorithm ="))
            {
                continue;
            }
            let name = format!("{}-{i}.toml", file.file_stem().unwrap().to_string_lossy());
            std::fs::write(dir.join(&name), block).unwrap();
            let o = distsync(&dir, &["run".into(), name.clone()]);
            assert_eq!(
                o.status.code(),
                Some(0),
                "template {i} of {}:\n{block}\n{}{}",
                file.display(),
                String::from_utf8_lossy(&o.stdout),
                String::from_utf8_lossy(&o.stderr)
            );
            checked += 1;
        }
    }
    assert!(checked >= 2, "only {checked} templates found");
    tmp.close().unwrap();
}

/// Every relative link and image of the README and docs/ names a file of the repository (no
/// link out of it, like the ../shared/ files a clone does not have).
#[test]
fn relative_links_point_to_files() {
    let link = Regex::new(r"\]\(([^)\s]+)\)").unwrap();
    let root = repo();
    let mut broken = Vec::new();
    let mut checked = 0;
    for file in markdown_files() {
        let text = read(&file);
        for m in link.captures_iter(&text) {
            let target = &m[1];
            if target.starts_with("http://")
                || target.starts_with("https://")
                || target.starts_with('#')
                || target.starts_with("mailto:")
            {
                continue;
            }
            let path = target.split('#').next().unwrap();
            let resolved = file.parent().unwrap().join(path);
            let inside = resolved
                .canonicalize()
                .map(|p| p.starts_with(&root))
                .unwrap_or(false);
            if !inside {
                broken.push(format!("{}: {target}", file.display()));
            }
            checked += 1;
        }
        // Plain mentions of the specification outside the repository.
        if text.contains("../shared/") {
            broken.push(format!("{}: mentions ../shared/", file.display()));
        }
    }
    assert!(broken.is_empty(), "links that point nowhere:\n{broken:#?}");
    assert!(checked > 20, "only {checked} links found");
}

/// Every scenario is drawn in the gallery, and its `name` is its file's name.
#[test]
fn every_scenario_is_in_the_gallery_under_its_own_name() {
    let gallery = read(&repo().join("docs/gallery.md"));
    let mut problems = Vec::new();
    let mut count = 0;
    for entry in std::fs::read_dir(repo().join("scenarios")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|x| x != "toml") {
            continue;
        }
        count += 1;
        let stem = path.file_stem().unwrap().to_string_lossy().into_owned();
        if !gallery.lines().any(|l| l == format!("## {stem}")) {
            problems.push(format!("{stem}: no section in docs/gallery.md"));
        }
        let svg = repo().join(format!("docs/gallery/{stem}.svg"));
        if !svg.metadata().is_ok_and(|m| m.len() > 0) {
            problems.push(format!("{stem}: no drawing {}", svg.display()));
        }
        let text = read(&path);
        let name = text
            .lines()
            .find_map(|l| l.strip_prefix("name = "))
            .map(|n| n.trim().trim_matches('"').to_string());
        if name.as_deref() != Some(stem.as_str()) {
            problems.push(format!("{stem}: named {name:?} inside"));
        }
    }
    assert!(count >= 20, "only {count} scenarios");
    assert!(
        problems.is_empty(),
        "{problems:#?}\n(run scripts/gallery.sh to redraw the gallery)"
    );
}

/// Every path of the repository the README or docs/ mention in passing (docs/viz.md once
/// named a scenario that did not exist, which the links test above cannot see) (`scenarios/...`,
/// `docs/...`, `crates/...`, `scripts/...`, `benches/...`), not only in links, exists; a `*`
/// matches any run of characters.
#[test]
fn every_path_the_docs_mention_exists() {
    let root = repo();
    let mention = Regex::new(
        r"(?:^|[\s`(\[])((?:scenarios|docs|crates|scripts|benches)/[A-Za-z0-9_./*-]*[A-Za-z0-9_*/])",
    )
    .unwrap();
    let mut missing = Vec::new();
    let mut checked = 0;
    for file in markdown_files() {
        let text = read(&file);
        for m in mention.captures_iter(&text) {
            let path = m[1].trim_end_matches('.');
            checked += 1;
            if !exists(&root, path) {
                missing.push(format!("{}: {path}", file.display()));
            }
        }
    }
    assert!(checked > 50, "only {checked} paths mentioned");
    assert!(
        missing.is_empty(),
        "paths the docs mention that do not exist:\n{missing:#?}"
    );
}

/// Whether `path` (which may hold `*`) names something under `root`.
fn exists(root: &Path, path: &str) -> bool {
    if !path.contains('*') {
        return root.join(path).exists();
    }
    let (dir, pattern) = path.rsplit_once('/').unwrap();
    let parts: Vec<&str> = pattern.split('*').collect();
    let Ok(entries) = std::fs::read_dir(root.join(dir)) else {
        return false;
    };
    entries.filter_map(Result::ok).any(|e| {
        let name = e.file_name().to_string_lossy().into_owned();
        let (first, last) = (parts[0], parts[parts.len() - 1]);
        name.starts_with(first) && name.ends_with(last) && name.len() >= first.len() + last.len()
    })
}
