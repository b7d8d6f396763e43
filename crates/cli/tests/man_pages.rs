//! `distsync man --out DIR` writes a page for every verb at every depth: the nested ones
//! (`trace render`, `cluster up`, `time serve`, ...) too, each titled and with a synopsis that
//! names its whole path. The verbs are read from the binary's own `--help` at every depth, so a
//! verb added later is held to it without touching this test.

use std::process::{Command, Output};

fn distsync(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_distsync"))
        .args(args)
        .output()
        .expect("the binary runs")
}

/// The subcommands `distsync PATH --help` lists, without `help`.
fn subcommands(path: &[String]) -> Vec<String> {
    let mut args: Vec<&str> = path.iter().map(String::as_str).collect();
    args.push("--help");
    let o = distsync(&args);
    assert_eq!(o.status.code(), Some(0), "distsync {}", args.join(" "));
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .map(|l| l.split_whitespace().next().unwrap().to_string())
        .filter(|v| v != "help")
        .collect()
}

/// Every command path below `path`, at every depth.
fn every_path(path: Vec<String>, into: &mut Vec<Vec<String>>) {
    for sub in subcommands(&path) {
        let mut deeper = path.clone();
        deeper.push(sub);
        into.push(deeper.clone());
        every_path(deeper, into);
    }
}

#[test]
fn every_subcommand_at_every_depth_gets_a_page() {
    let mut paths = Vec::new();
    every_path(Vec::new(), &mut paths);
    let nested = paths.iter().filter(|p| p.len() > 1).count();
    assert!(
        paths.contains(&vec!["trace".into(), "render".into()])
            && paths.contains(&vec!["cluster".into(), "up".into()]),
        "{paths:?}"
    );
    assert!(nested >= 10, "{nested} nested verbs: {paths:?}");

    let dir = std::env::temp_dir().join(format!("distsync-man-depth-{}", std::process::id()));
    let o = distsync(&["man", "--out", dir.to_str().unwrap()]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let mut expected = vec!["distsync.1".to_string()];
    for path in &paths {
        let name = format!("distsync-{}", path.join("-"));
        let file = dir.join(format!("{name}.1"));
        let page = std::fs::read_to_string(&file)
            .unwrap_or_else(|e| panic!("no page for `distsync {}`: {e}", path.join(" ")));
        assert!(page.contains(&format!(".TH {name} 1")), "{name}: {page}");
        // The synopsis names the whole path, in roff's bold.
        assert!(
            page.contains(&format!("\\fBdistsync {}\\fR", path.join(" "))),
            "{name}'s synopsis: {page}"
        );
        if !subcommands(path).is_empty() {
            assert!(page.contains(".SH SUBCOMMANDS"), "{name}: {page}");
        }
        expected.push(format!("{name}.1"));
    }
    // Exactly those pages: none for `help`, none for hidden verbs.
    let mut written: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    written.sort();
    expected.sort();
    assert_eq!(written, expected);
    let said = String::from_utf8_lossy(&o.stderr);
    assert!(
        said.contains(&format!("wrote {} man pages", expected.len())),
        "{said}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
