//! `sluice db`: the controller's state database. `sluice db migrate --from FILE --to
//! URL` moves a site's SQLite state and history (jobs, steps, runs, scripts, nodes,
//! accounts and QOS, reservations, the audit trail) into an empty PostgreSQL database
//! ([`sluice_store::copy`]) and prints the rows counted on each side and the job
//! rows' checksums, compared.

use std::path::PathBuf;

use clap::{Args, Subcommand};
use indicatif::{ProgressBar, ProgressStyle};
use sluice_store::PgTarget;

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
    /// Empty the target database first, when it already holds a cluster's state.
    #[arg(long)]
    replace: bool,
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

fn migrate(args: MigrateArgs) -> Result<(), String> {
    let mut target = PgTarget::from_url(&args.to)?;
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
        "identical: migrated {} to {}",
        args.from.display(),
        target.describe()
    );
    Ok(())
}
