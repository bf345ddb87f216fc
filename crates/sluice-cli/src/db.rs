//! `sluice db`: the controller's state database. `sluice db migrate --from FILE --to
//! URL` moves a site's SQLite state and history (jobs, steps, runs, scripts, nodes,
//! accounts and QOS, reservations, the audit trail) into an empty PostgreSQL database
//! ([`sluice_store::copy`]) and prints the rows counted on each side and the job
//! rows' checksums, compared.

use std::path::PathBuf;

use clap::{Args, Subcommand};
use indicatif::{ProgressBar, ProgressStyle};
use sluice_store::{Member, PgTarget};

/// `sluice db` and its subcommands.
#[derive(Args, Debug)]
pub struct DbArgs {
    #[command(subcommand)]
    command: DbCommand,
}

#[derive(Subcommand, Debug)]
enum DbCommand {
    /// Copy a SQLite state database (StateSaveLocation/sluice.db) into PostgreSQL,
    /// then point sluice.conf at it (StorageType=postgresql). Stop the controller
    /// first: what it writes during the copy is not moved.
    Migrate(MigrateArgs),
}

#[derive(Args, Debug)]
struct MigrateArgs {
    /// The SQLite database (sluice.db in the controller's state directory).
    #[arg(long, value_name = "FILE")]
    from: PathBuf,
    /// The PostgreSQL database, as a libpq connection string
    /// (postgresql://user@host:port/database).
    #[arg(long, value_name = "URL")]
    to: String,
    /// A file holding the role's password (rather than in the URL, which others see
    /// in the process list).
    #[arg(long, value_name = "FILE")]
    pass_file: Option<PathBuf>,
    /// Empty the target cluster's tables first, when they already hold its state.
    #[arg(long)]
    replace: bool,
    /// The cluster the history belongs to (its ClusterName; one PostgreSQL database
    /// may hold several clusters' tables). Default: the ClusterName of the slurm.conf
    /// the commands read (SLURM_CONF, else /etc/slurm/slurm.conf).
    #[arg(long, value_name = "NAME")]
    cluster: Option<String>,
}

/// Runs `sluice db`; the exit status.
pub fn run(args: DbArgs) -> i32 {
    match args.command {
        DbCommand::Migrate(m) => match migrate(m) {
            Ok(()) => 0,
            Err(e) => {
                eprintln!("sluice db migrate: error: {e}");
                1
            }
        },
    }
}

/// The cluster a migration's history belongs to: `--cluster`, else slurm.conf's
/// `ClusterName`.
///
/// Errors: neither is given (what to do, in words).
fn cluster_of(args: &MigrateArgs) -> Result<String, String> {
    if let Some(c) = &args.cluster {
        return Ok(c.clone());
    }
    let path = crate::daemons::slurm_conf_path(None);
    sluice_conf::slurm_conf::read(&path)
        .map(|c| c.cluster_name)
        .map_err(|e| {
            format!(
                "name the cluster the history belongs to with --cluster (its ClusterName): \
                 {}: {}",
                path.display(),
                e.message
            )
        })
}

fn migrate(args: MigrateArgs) -> Result<(), String> {
    let cluster = cluster_of(&args)?;
    let mut target = PgTarget::from_url(&args.to)?.for_member(Member {
        cluster,
        ..Member::default()
    });
    if let Some(p) = &args.pass_file {
        target = target.with_password(&sluice_ctld::server::storage::read_pass_file(p)?);
    }
    let bar = ProgressBar::new(0);
    bar.set_style(
        ProgressStyle::with_template("{spinner} copying [{bar:40}] {pos}/{len} rows ({eta} left)")
            .expect("valid template")
            .progress_chars("=> "),
    );
    let report = sluice_store::copy::sqlite_to_postgres(
        &args.from,
        &target,
        args.replace,
        &mut |done, total| {
            bar.set_length(total);
            bar.set_position(done);
        },
    )
    .map_err(|e| e.to_string());
    bar.finish_and_clear();
    let report = report?;
    println!("{:<14} {:>12} {:>12}", "TABLE", "SQLITE", "POSTGRESQL");
    for (table, a, b) in &report.tables {
        println!("{table:<14} {a:>12} {b:>12}");
    }
    println!(
        "jobs checksum (sha256) sqlite:     {}",
        report.source_checksum
    );
    println!(
        "jobs checksum (sha256) postgresql: {}",
        report.target_checksum
    );
    println!(
        "identical: migrated {} to {} (cluster {})",
        args.from.display(),
        target.describe(),
        target.cluster()
    );
    Ok(())
}
