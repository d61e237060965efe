//! The command line: argument errors exit with 2, help documents every command, and
//! scale and walks output is reproducible.

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
        "walks",
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

#[test]
fn walks_are_reproducible_and_routes_are_walked_again() {
    let tmp = std::env::temp_dir().join(format!("whereabouts-sim-walks-{}", std::process::id()));
    let (a, b) = (tmp.join("a"), tmp.join("b"));
    for dir in [&a, &b] {
        let o = sim(&["walks", "--seed", "3", "--out", dir.to_str().unwrap()]);
        assert_eq!(
            o.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
    let mut names: Vec<String> = std::fs::read_dir(a.join("walks"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    assert!(names.len() >= 8, "{names:?}");
    let first_fix = |name: &str| -> (f64, f64) {
        let text = std::fs::read_to_string(a.join("walks").join(name)).unwrap();
        assert_eq!(
            std::fs::read_to_string(b.join("walks").join(name)).unwrap(),
            text
        );
        let mut lines = text.lines();
        assert!(lines
            .next()
            .unwrap()
            .starts_with("mcc,mnc,lac,cellid,lat,lon,signal"));
        let row: Vec<&str> = lines.next().expect("a walk logs rows").split(',').collect();
        (row[4].parse().unwrap(), row[5].parse().unwrap())
    };
    // Walks of one route (`-rRR-`) start where it starts, on other days.
    let route = |n: &str| n.split('-').nth(2).unwrap().to_string();
    let mut again = 0;
    for (i, n) in names.iter().enumerate() {
        for m in &names[i + 1..] {
            if route(n) == route(m) {
                let (p, q) = (first_fix(n), first_fix(m));
                let d = ((p.0 - q.0) * 111_195.0).hypot((p.1 - q.1) * 68_400.0);
                assert!(d < 100.0, "{n} and {m} start {d} m apart");
                again += 1;
            }
        }
    }
    assert!(again > 0, "no route walked twice: {names:?}");
    std::fs::remove_dir_all(&tmp).unwrap();
}
