//! The command line: argument errors exit with 2, help documents both commands,
//! and scale output is reproducible.

use std::process::Command;

fn sim(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_whereabouts-sim"))
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn bad_arguments_exit_2_with_a_message() {
    for args in [
        vec![],
        vec!["planet"],
        vec!["world"],
        vec!["world", "--out"],
        vec!["world", "--out", "/tmp/x", "--seed", "abc"],
        vec!["world", "--out", "/tmp/x", "--rows", "5"],
        vec!["scale", "--out", "/tmp/x"],
        vec!["scale", "--rows", "-3", "--out", "/tmp/x"],
        vec!["scale", "--rows", "10", "--out", "/tmp/x", "--frobnicate"],
        vec!["scale", "--rows", "10", "--out", "/tmp/x", "--family"],
        vec![
            "world",
            "--out",
            "/tmp/x",
            "--family",
            "--separate-masts",
            "0.3",
        ],
    ] {
        let o = sim(&args);
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            err.contains("whereabouts-sim:") && err.contains("--help"),
            "{args:?}: {err}"
        );
    }
}

#[test]
fn help_documents_everything() {
    let o = sim(&["--help"]);
    assert_eq!(o.status.code(), Some(0));
    let h = String::from_utf8_lossy(&o.stdout);
    for flag in [
        "world",
        "scale",
        "--out",
        "--seed",
        "--requests",
        "--rows",
        "--gz",
        "--family",
        "params.json",
    ] {
        assert!(h.contains(flag), "{flag}");
    }
}

#[test]
fn scale_to_stdout_is_reproducible_and_reports_bad_rows() {
    let a = sim(&["scale", "--rows", "3000", "--out", "-", "--seed", "9"]);
    let b = sim(&["scale", "--rows=3000", "--out", "-", "--seed", "9"]);
    assert_eq!(a.status.code(), Some(0));
    assert_eq!(a.stdout, b.stdout);
    assert_eq!(String::from_utf8_lossy(&a.stdout).lines().count(), 3001);
    let err = String::from_utf8_lossy(&a.stderr);
    assert!(err.contains("2 bad rows"), "{err}");
    assert!(err.contains("line numbers"), "{err}");
}
