//! The command line's conveniences: completions, man pages, the compare summary, aligned lists,
//! clear refusals of negative numbers and contradictory flags, plural and article forms.

use std::process::{Command, Output};

fn distsync(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_distsync"))
        .args(args)
        .output()
        .expect("the binary runs")
}

fn out(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn err(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// The subcommands `distsync PATH --help` lists, without `help`.
fn subcommands(path: &[String]) -> Vec<String> {
    let mut args: Vec<&str> = path.iter().map(String::as_str).collect();
    args.push("--help");
    let o = distsync(&args);
    assert_eq!(o.status.code(), Some(0), "distsync {}", args.join(" "));
    out(&o)
        .lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .map(|l| l.split_whitespace().next().unwrap().to_string())
        .filter(|v| v != "help")
        .collect()
}

/// The verbs `distsync --help` lists.
fn verbs() -> Vec<String> {
    subcommands(&[])
}

/// Every command path below `path`, at every depth, parents first.
fn every_path(path: Vec<String>, into: &mut Vec<Vec<String>>) {
    for sub in subcommands(&path) {
        let mut deeper = path.clone();
        deeper.push(sub);
        into.push(deeper.clone());
        every_path(deeper, into);
    }
}

#[test]
fn completions_cover_every_verb_in_every_shell() {
    let verbs = verbs();
    assert!(verbs.len() >= 15, "{verbs:?}");
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let o = distsync(&["completions", shell]);
        assert_eq!(o.status.code(), Some(0), "{shell}: {}", err(&o));
        let script = out(&o);
        for verb in &verbs {
            assert!(script.contains(verb.as_str()), "{shell} lacks {verb}");
        }
    }
    let o = distsync(&["completions", "tcsh"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(err(&o).contains("tcsh"), "{}", err(&o));
}

/// `distsync man` prints the tool's page; `--out DIR` writes one for every verb at every depth
/// (`trace render`, `cluster up`, ... too), each titled and with a synopsis that names its whole
/// path. The verbs are read from the binary's own `--help` at every depth, so a verb added later
/// is held to it without touching this test.
#[test]
fn man_pages_for_the_tool_and_every_verb_at_every_depth() {
    let o = distsync(&["man"]);
    assert_eq!(o.status.code(), Some(0));
    assert!(out(&o).contains(".TH distsync 1"), "{}", out(&o));
    let mut paths = Vec::new();
    every_path(Vec::new(), &mut paths);
    let nested = paths.iter().filter(|p| p.len() > 1).count();
    assert!(
        paths.contains(&vec!["trace".into(), "render".into()])
            && paths.contains(&vec!["cluster".into(), "up".into()]),
        "{paths:?}"
    );
    assert!(nested >= 10, "{nested} nested verbs: {paths:?}");

    // A directory `man --out` makes, inside a scratch one removed when the test ends.
    let tmp = tempfile::TempDir::with_prefix("distsync-man-depth-").unwrap();
    let dir = tmp.path().join("man");
    let o = distsync(&["man", "--out", dir.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
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
        assert!(page.contains(".SH OPTIONS"), "{name}: {page}");
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
    let said = err(&o);
    assert!(
        said.contains(&format!("wrote {} man pages", expected.len())),
        "{said}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn compare_summary_is_the_pivot_and_heavy_rows_carry_no_light_formulas() {
    let o = distsync(&["compare", "--nodes", "5", "--summary"]);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    let text = out(&o);
    let line = |name: &str| {
        text.lines()
            .find(|l| l.starts_with(&format!("{name} ")))
            .unwrap_or_else(|| panic!("no {name} line: {text}"))
            .to_string()
    };
    let ra = line("ricart-agrawala");
    assert!(
        ra.contains("8 = 2(N-1) ✓") && ra.contains("1 = T ✓") && ra.contains("12 = 2T+E ✓"),
        "{ra}"
    );
    assert!(
        line("singhal").contains("7.60 = (N-1)(2R-1)/R ✓"),
        "{}",
        line("singhal")
    );
    assert!(line("central").contains("3.98 = 4 ✓"));
    // One line per algorithm (and N), not one per figure.
    assert_eq!(
        text.lines().filter(|l| l.starts_with("raymond ")).count(),
        1
    );
    // Piped, the default is the full table, one figure per row.
    let o = distsync(&["compare", "--nodes", "5", "--algo", "raymond"]);
    assert!(out(&o).contains("agrees"), "{}", out(&o));
    assert_eq!(
        out(&o)
            .lines()
            .filter(|l| l.starts_with("raymond "))
            .count(),
        4
    );
    let o = distsync(&["compare", "--summary", "--json"]);
    assert_eq!(o.status.code(), Some(2));
    // No heavy row shows a light-load formula.
    let o = distsync(&["compare", "--nodes", "3,5", "--json"]);
    let rows: Vec<serde_json::Value> = serde_json::from_slice(&o.stdout).unwrap();
    for r in rows.iter().filter(|r| r["load"] == "heavy") {
        let formula = r["formula"].as_str().unwrap();
        assert!(!formula.contains("light"), "{r}");
    }
}

#[test]
fn list_aligns_every_column_for_every_family() {
    let text = out(&distsync(&["list"]));
    let column = |l: &str, word: &str| l.find(word).unwrap();
    let header = text.lines().next().unwrap();
    let (fifo, description) = (column(header, "fifo"), column(header, "description"));
    for l in text.lines().skip(1) {
        let cells: Vec<&str> = l.split_whitespace().collect();
        let at = |i: usize| {
            let mut from = 0;
            for c in &cells[..i] {
                from = l[from..].find(c).unwrap() + from + c.len();
            }
            l[from..].find(cells[i]).unwrap() + from
        };
        assert_eq!(at(2), fifo, "{l}");
        assert_eq!(at(3), description, "{l}");
    }
}

#[test]
fn bad_numbers_and_contradictions_are_refused_clearly() {
    for (args, says) in [
        (
            vec!["simulate", "--algo", "central", "--nodes", "-3"],
            "got the negative number -3",
        ),
        (
            vec!["compare", "--nodes", "3,-5"],
            "got the negative number -5",
        ),
        (
            vec![
                "sweep",
                "--algo",
                "central",
                "--param",
                "nodes=2..3",
                "--seeds",
                "-1",
            ],
            "negative number -1",
        ),
        (
            vec!["run", "scenarios/lamport-light.toml", "--seed", "-2"],
            "negative number -2",
        ),
        (
            vec!["simulate", "--algo", "central", "--nodes", "many"],
            "got `many`",
        ),
        (
            vec!["simulate", "--algo", "central", "--fifo", "--no-fifo"],
            "cannot be used with",
        ),
    ] {
        let o = distsync(&args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", err(&o));
        assert!(err(&o).contains(says), "{args:?}: {}", err(&o));
        assert!(!err(&o).contains("panicked"));
    }
    let o = distsync(&["check", "--help"]);
    assert!(out(&o).contains("ids 0..N-1"), "{}", out(&o));
}

#[test]
fn one_is_singular_and_election_takes_an() {
    let o = distsync(&["compare", "--algo", "bully"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(err(&o).contains("is an election algorithm"), "{}", err(&o));
    let o = distsync(&["simulate", "--algo", "cristian"]);
    assert!(err(&o).contains("is a clock-sync algorithm"), "{}", err(&o));
    let file = tempfile::Builder::new()
        .prefix("distsync-one-")
        .suffix(".toml")
        .tempfile()
        .unwrap();
    let path = file.path();
    std::fs::write(
        path,
        "algorithm = \"bully\"\nnodes = 1\n[[event]]\nat = \"1ms\"\nelect = 0\n",
    )
    .unwrap();
    let o = distsync(&["run", path.to_str().unwrap()]);
    let text = out(&o);
    assert!(text.contains(": 1 node, seed"), "{text}");
    assert!(
        !text.contains("1 nodes") && !text.contains(" 1 elections"),
        "{text}"
    );
}

/// Found walking issue 16: a swept value the scenario refuses did not name `--param`.
#[test]
fn a_swept_value_the_scenario_refuses_names_the_param_flag() {
    let o = distsync(&["sweep", "--algo", "raymond", "--param", "nodes=-2..3"]);
    let err = err(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.starts_with("error: --param nodes=-2"), "{err}");
}

/// `distsync run NAME` with no file of that name runs the built-in example (`distsync
/// examples NAME`), saying so on stderr; a file of that name wins; anything else is an error
/// that names the file.
#[test]
fn run_falls_back_to_the_built_in_example_of_that_name() {
    let dir = tempfile::TempDir::with_prefix("distsync-run-example-").unwrap();
    let in_dir = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_distsync"))
            .args(args)
            .current_dir(dir.path())
            .output()
            .expect("the binary runs")
    };
    for name in ["maekawa-plane", "maekawa-plane.toml"] {
        let o = in_dir(&["run", name, "--json"]);
        assert!(
            err(&o).contains("running the built-in example `maekawa-plane`"),
            "{}",
            err(&o)
        );
        let report: serde_json::Value = serde_json::from_str(&out(&o)).expect("a JSON report");
        assert_eq!(report["algorithm"], "maekawa", "{}", out(&o));
    }
    // A file of that name in the directory wins over the example.
    std::fs::write(
        dir.path().join("maekawa-plane.toml"),
        "algorithm = \"central\"\nnodes = 3\n[workload]\nkind = \"saturated\"\nrequests = 1\n",
    )
    .unwrap();
    let o = in_dir(&["run", "maekawa-plane.toml", "--json"]);
    assert!(!err(&o).contains("built-in example"), "{}", err(&o));
    let report: serde_json::Value = serde_json::from_str(&out(&o)).expect("a JSON report");
    assert_eq!(report["algorithm"], "central");
    // Neither a file nor an example: the error names what was asked.
    let o = in_dir(&["run", "no-such-scenario"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(err(&o).contains("no-such-scenario"), "{}", err(&o));
}
