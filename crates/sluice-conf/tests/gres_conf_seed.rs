//! The seed article's gres.conf, verbatim: the copy kept in `tests/data/` always, and the
//! article in the workspace's `../shared/seeds/` when that directory is present (the
//! crate itself does not need it).

use std::path::{Path, PathBuf};

use sluice_conf::gres_conf::{self, AutoDetect, DeviceSource, GresConf, GresFlags, GresRecord};

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(name)
}

/// The block of consecutive non-blank lines holding `AutoDetect=` in a seed article.
fn gres_block(article: &str) -> Option<String> {
    let lines: Vec<&str> = article.lines().collect();
    let at = lines.iter().position(|l| l.starts_with("AutoDetect="))?;
    let start = lines[..at]
        .iter()
        .rposition(|l| l.trim().is_empty())
        .map_or(0, |i| i + 1);
    let end = lines[at..]
        .iter()
        .position(|l| l.trim().is_empty())
        .map_or(lines.len(), |i| at + i);
    Some(lines[start..end].iter().map(|l| format!("{l}\n")).collect())
}

fn check_seed(g: &GresConf, path: &Path) {
    assert_eq!(g.autodetect, Some(AutoDetect::Nvml));
    assert_eq!(g.node_autodetect, vec![]);
    assert_eq!(g.warnings, Vec::<String>::new());
    assert_eq!(
        g.records,
        vec![GresRecord {
            path: path.to_path_buf(),
            line: 2,
            nodes: Some(vec![
                "node01".into(),
                "node02".into(),
                "node03".into(),
                "node04".into(),
            ]),
            name: "gpu".into(),
            gres_type: Some("rtxpro6000".into()),
            files: (0..8).map(|i| format!("/dev/nvidia{i}")).collect(),
            multiple_files: false,
            count: 8,
            cores: None,
            links: None,
            flags: GresFlags::default(),
        }]
    );
    assert_eq!(
        gres_conf::format_files(&g.records[0].files),
        "/dev/nvidia[0-7]"
    );
}

#[test]
fn the_kept_seed_parses_and_resolves_against_the_seed_slurm_conf() {
    let path = data("seed-gres.conf");
    let g = gres_conf::read(&path).unwrap();
    check_seed(&g, &path);

    let s = sluice_conf::slurm_conf::read(&data("seed-slurm.conf")).unwrap();
    let layout = gres_conf::resolve(&s, &g).unwrap();
    assert_eq!(layout.warnings, Vec::<String>::new());
    assert_eq!(layout.nodes.len(), 4);
    for devices in &layout.nodes {
        let got: Vec<(&str, Option<&str>, u64, &[String])> = devices
            .iter()
            .map(|d| {
                (
                    d.name.as_str(),
                    d.gres_type.as_deref(),
                    d.count,
                    &d.files[..],
                )
            })
            .collect();
        let files: Vec<Vec<String>> = (0..8).map(|i| vec![format!("/dev/nvidia{i}")]).collect();
        let want: Vec<(&str, Option<&str>, u64, &[String])> = files
            .iter()
            .map(|f| ("gpu", Some("rtxpro6000"), 1, &f[..]))
            .collect();
        assert_eq!(got, want);
        assert!(devices
            .iter()
            .all(|d| d.cores.is_none() && d.links.is_none()));
        assert!(devices.iter().all(|d| d.source
            == DeviceSource::GresConf {
                path: path.clone(),
                line: 2
            }));
    }
}

#[test]
fn the_seed_article_holds_the_same_gres_conf() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/seeds");
    let Ok(entries) = std::fs::read_dir(&dir) else {
        eprintln!(
            "skipped: the_seed_article_holds_the_same_gres_conf: comparing with the seeds' \
             articles: {} is absent (the reference folder `shared` next to the repository \
             root); checked the kept copy only",
            dir.display()
        );
        return;
    };
    let mut found = 0;
    for entry in entries {
        let path = entry.unwrap().path();
        let Ok(article) = std::fs::read_to_string(&path) else {
            continue;
        };
        let Some(block) = gres_block(&article) else {
            continue;
        };
        found += 1;
        let g = gres_conf::parse_str(&block, Path::new("gres.conf")).unwrap();
        check_seed(&g, Path::new("gres.conf"));
        assert_eq!(
            block,
            std::fs::read_to_string(data("seed-gres.conf")).unwrap(),
            "the kept copy differs from {}",
            path.display()
        );
    }
    assert_eq!(found, 1, "one seed article carries a gres.conf");
}
