//! `distsync time` refuses bad input with exit code 2 and a message naming the flag or value.

use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_distsync");

fn run(args: &[&str]) -> (i32, String) {
    let out = Command::new(BIN).args(args).output().unwrap();
    (
        out.status.code().unwrap(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn bad_input_is_exit_2_naming_what_is_wrong() {
    let (code, err) = run(&[
        "time",
        "serve",
        "--listen",
        "127.0.0.1:0",
        "--refid",
        "TOOLONG",
    ]);
    assert_eq!(code, 2);
    assert!(err.contains("--refid") && err.contains("TOOLONG"), "{err}");
    let (code, err) = run(&["time", "serve", "--listen", "nowhere"]);
    assert_eq!(code, 2);
    assert!(err.contains("--listen"), "{err}");
    let (code, err) = run(&["time", "query", "not a host name:99999"]);
    assert_eq!(code, 2);
    assert!(err.contains("not a host name"), "{err}");
    let (code, err) = run(&["time", "query", "127.0.0.1:123", "--samples", "0"]);
    assert_eq!(code, 2);
    assert!(err.contains("--samples"), "{err}");
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("time-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let keys = dir.join("k.keys");
    std::fs::write(&keys, "1 SHA256 ASCII:tulip\n2 MD5 crocus\n").unwrap();
    let k = keys.to_str().unwrap();
    let (code, err) = run(&["time", "serve", "--listen", "127.0.0.1:0", "--keys", k]);
    assert_eq!(code, 2);
    assert!(
        err.contains(k) && err.contains("line 2") && err.contains("MD5"),
        "{err}"
    );
    std::fs::write(&keys, "1 SHA256 ASCII:tulip\n").unwrap();
    let (code, err) = run(&["time", "query", "127.0.0.1:1", "--keys", k, "--key", "5"]);
    assert_eq!(code, 2);
    assert!(err.contains("--key 5"), "{err}");
    let (code, err) = run(&["time", "query", "127.0.0.1:1", "--key", "1"]);
    assert_eq!(code, 2);
    assert!(err.contains("--keys"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
    let (code, err) = run(&["time", "status", "--cluster", "/nonexistent/c.toml"]);
    assert_eq!(code, 2);
    assert!(err.contains("/nonexistent/c.toml"), "{err}");
    let (code, err) = run(&[
        "cluster",
        "up",
        "--nodes",
        "2",
        "--mutex",
        "central",
        "--dir",
        "/nonexistent/x",
        "--clock",
        "bully",
    ]);
    assert_eq!(code, 2);
    assert!(err.contains("--clock") && err.contains("bully"), "{err}");
}
