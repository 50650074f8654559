use super::*;

pub(crate) fn file(size: u64, mtime_ms: i64, hash: Option<&str>) -> Stamp {
    Stamp::File {
        size,
        mtime_ms,
        hash: hash.map(str::to_string),
    }
}

pub(crate) fn stamp(path: &str, stamp: Stamp) -> FileStamp {
    FileStamp {
        path: path.into(),
        stamp,
    }
}

pub(crate) fn dirty(path: &str, status: &str, stamp: Stamp) -> DirtyFile {
    DirtyFile {
        path: path.into(),
        status: status.into(),
        stamp,
    }
}

pub(crate) const HEAD_A: &str = "1111111111111111111111111111111111111111";
pub(crate) const HEAD_B: &str = "2222222222222222222222222222222222222222";

pub(crate) fn record() -> WorkspaceRecord {
    WorkspaceRecord {
        cwd: "/work/app".into(),
        repo_root: Some("/work/app".into()),
        git_state: GitState::Repo,
        branch: Some("feature".into()),
        head: Some(HEAD_A.into()),
        dirty: DirtySet::Listed {
            files: vec![
                dirty("src/lib.rs", " M", file(10, 1, Some("aa"))),
                dirty("notes.txt", "??", file(5, 1, Some("bb"))),
            ],
        },
        files: vec![
            stamp("src/lib.rs", file(10, 1, Some("aa"))),
            stamp("README.md", file(3, 1, Some("cc"))),
        ],
    }
}

/// The workspace exactly as recorded.
pub(crate) fn same(rec: &WorkspaceRecord) -> WorkspaceNow {
    WorkspaceNow {
        repo_root: rec.repo_root.clone(),
        git_state: rec.git_state,
        branch: rec.branch.clone(),
        head: rec.head.clone(),
        ancestry: None,
        dirty: rec.dirty.clone(),
        files: rec.files.clone(),
    }
}

#[test]
fn stamps_compare_by_content_when_hashed_else_by_size_and_time() {
    let cases = [
        // (then, now, expected)
        (file(1, 1, Some("x")), file(1, 9, Some("x")), Change::Same),
        (
            file(1, 1, Some("x")),
            file(1, 1, Some("y")),
            Change::Changed,
        ),
        (
            file(1, 1, Some("x")),
            file(2, 1, Some("x")),
            Change::Changed,
        ),
        (file(1, 1, None), file(1, 1, None), Change::Same),
        (file(1, 1, None), file(1, 2, None), Change::Changed),
        (file(1, 1, Some("x")), file(1, 2, None), Change::Changed),
        (file(1, 1, None), Stamp::Missing, Change::Vanished),
        (Stamp::Missing, file(1, 1, None), Change::Appeared),
        (Stamp::Missing, Stamp::Missing, Change::Same),
        (Stamp::Dir, Stamp::Dir, Change::Same),
        (Stamp::Dir, file(1, 1, None), Change::Changed),
        (Stamp::Dir, Stamp::Missing, Change::Vanished),
        (Stamp::Unknown, file(1, 1, None), Change::Unknown),
        (file(1, 1, None), Stamp::Unknown, Change::Unknown),
    ];
    for (then, now, expected) in cases {
        assert_eq!(change(&then, &now), expected, "{then:?} → {now:?}");
    }
}

#[test]
fn the_report_survives_its_json_form() {
    let rec = record();
    let mut now = same(&rec);
    now.branch = Some("main".into());
    let report = compare(&rec, &now);
    let back: StaleReport = serde_json::from_value(serde_json::to_value(&report).unwrap()).unwrap();
    assert_eq!(back, report);
    let rec_back: WorkspaceRecord =
        serde_json::from_value(serde_json::to_value(&rec).unwrap()).unwrap();
    assert_eq!(rec_back, rec);
}

#[test]
fn files_to_stamp_keeps_the_first_of_each_path() {
    let files = ["a".to_string(), "b".into(), "a".into()];
    assert_eq!(files_to_stamp(&files), vec!["a".to_string(), "b".into()]);
}
