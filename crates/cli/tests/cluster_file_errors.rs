//! A cluster file that does not parse is refused with the line and column of the fault, as a
//! scenario file is, by every verb that reads one (they share `Cluster::load`).

use std::process::Command;

mod scratch;

#[test]
fn a_cluster_file_syntax_error_names_its_line_and_column() {
    let file = scratch::path("distsync-cluster-file-", "cluster.toml");
    // Line 3, column 10: the key is a number, not a string.
    std::fs::write(
        &*file,
        "mutex = \"central\"\nelection = \"bully\"\nsecret = 42\n",
    )
    .unwrap();
    for verb in [
        &["node", "--cluster", file.to_str().unwrap(), "--id", "0"][..],
        &["leader", "--cluster", file.to_str().unwrap()][..],
    ] {
        let o = Command::new(env!("CARGO_BIN_EXE_distsync"))
            .args(verb)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{verb:?}: {err}");
        assert!(err.contains(file.to_str().unwrap()), "{verb:?}: {err}");
        assert!(err.contains("line 3, column 10"), "{verb:?}: {err}");
        assert!(!err.contains("at byte"), "{verb:?}: {err}");
    }
}
