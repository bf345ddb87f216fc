//! `slurmctld` on one of several controller hosts (`SlurmctldHost` listed more than
//! once, the state in PostgreSQL): it stands by until it holds its cluster's lease
//! (`sluice_store::lease`), then takes over as a restart does — the state loaded from
//! the database, the fencing epoch incremented first — and serves until it stops, is
//! asked to hand over (`scontrol takeover`), or finds that another controller took
//! over, when it starts again as a standby (the same program, executed again).
//!
//! While standing by it answers on the controller's port that it stands by
//! (`sluice_ctld::server::standby`), and asks for the lease every [`POLL`]: the lock of
//! a controller that died is free as soon as PostgreSQL sees its session end, at once
//! for a killed process, within about half of `SlurmctldTimeout` for a host cut off
//! (the lease connection's keepalives).

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use sluice_ctld::config::ClusterConfig;
use sluice_ctld::server::{fencing, Epoch, Network, ServeError};
use sluice_store::lease::{epoch_key, Again, Lease};
use sluice_store::Location;

/// How often a standby asks for the lease.
pub const POLL: Duration = Duration::from_millis(250);

/// The environment variable that has a controller started again after handing over
/// wait this long (milliseconds) before it asks for the lease, so that the backup that
/// asked for it gets it.
const HOLD_OFF_ENV: &str = "SLUICE_CTLD_HOLD_OFF_MS";

/// The environment variable that tells a controller it was started again by
/// [`start_again`]: it detached already, so it keeps its process (and pid) rather
/// than detaching once more.
pub const AGAIN_ENV: &str = "SLUICE_CTLD_AGAIN";

/// Whether this process is a controller started again ([`AGAIN_ENV`], then removed
/// from the environment).
pub fn started_again() -> bool {
    let again = std::env::var_os(AGAIN_ENV).is_some();
    std::env::remove_var(AGAIN_ENV);
    again
}

/// How long a controller that handed over waits before standing by.
const HAND_OVER_HOLD_OFF_MS: u64 = 3000;

/// Stands by, takes over, serves; see the module documentation. Returns when stopped
/// (SIGTERM, SIGINT) as the active controller or as a standby.
///
/// Errors: the storage settings cannot be used, or the controller could not run.
pub fn run_active_or_standby(
    runtime: &tokio::runtime::Runtime,
    conf: ClusterConfig,
    state_dir: &Path,
    index: usize,
    auth: &sluice_proto::auth::Scheme,
    network: impl Fn(Option<Epoch>) -> Network,
) -> Result<(), ServeError> {
    let location = sluice_ctld::server::storage::location(&conf.site.storage, state_dir)
        .map_err(ServeError::Storage)?;
    // The lease's connection means this cluster's tables (its epoch row among them).
    let location = sluice_ctld::server::storage::for_cluster(location, &conf, None);
    let Location::Postgres(target) = location else {
        return Err(ServeError::Storage(
            "backup controllers need StorageType=postgresql".into(),
        ));
    };
    let net = conf.net.clone();
    let timeout = Duration::from_secs(net.slurmctld_timeout);
    let cluster = conf.cluster_name.clone();
    fencing::on_step_down(Arc::new(|why: &str| {
        tracing::error!("stepping down: {why}; standing by");
        start_again(None)
    }));
    if let Some(ms) = std::env::var(HOLD_OFF_ENV)
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
    {
        std::env::remove_var(HOLD_OFF_ENV);
        std::thread::sleep(Duration::from_millis(ms));
    }
    let role = if index == 0 {
        "primary".to_string()
    } else {
        format!("backup #{index}")
    };
    tracing::info!(
        "slurmctld ({role} of {} controllers): standing by until the active one is gone",
        net.controllers.len()
    );

    // Standing by: the port answers that, and SIGTERM still stops the daemon.
    let listen = std::net::SocketAddr::from(([0, 0, 0, 0], net.slurmctld_port));
    let stopping = Arc::new(AtomicBool::new(false));
    let (takeover_tx, mut takeover_rx) = tokio::sync::mpsc::unbounded_channel();
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let admin = nix::unistd::geteuid().as_raw();
    let standby = {
        let auth = auth.clone();
        runtime.spawn(async move {
            sluice_ctld::server::standby::serve(listen, &auth, admin, takeover_tx, async {
                let _ = stop_rx.await;
            })
            .await
        })
    };
    {
        let stopping = stopping.clone();
        runtime.spawn(async move {
            crate::daemons::terminated().await;
            stopping.store(true, Ordering::SeqCst);
        });
    }
    let mut lease: Option<Lease> = None;
    let mut said = None::<Instant>;
    // Whether the database was lost (or could not be reached), and until when the
    // lease is not asked for once it is back.
    let mut outage = false;
    let mut hold_until = None::<Instant>;
    let epoch = loop {
        if stopping.load(Ordering::SeqCst) {
            let _ = stop_tx.send(());
            let _ = runtime.block_on(standby);
            return Ok(());
        }
        if takeover_rx.try_recv().is_ok() {
            ask_to_hand_over(&net, index, auth);
        }
        if lease.is_none() {
            match Lease::connect(&target, &cluster, timeout, conf.first_job_id) {
                Ok(l) => {
                    lease = Some(l);
                    if std::mem::take(&mut outage) {
                        hold_until = Some(Instant::now() + hold_off_after_outage(timeout));
                    }
                }
                Err(e) => {
                    outage = true;
                    if said.is_none_or(|t| t.elapsed() >= Duration::from_secs(60)) {
                        said = Some(Instant::now());
                        tracing::error!("standing by, cannot reach the state database: {e}");
                    }
                    std::thread::sleep(Duration::from_secs(1));
                    continue;
                }
            }
        }
        if hold_until.is_some_and(|t| Instant::now() < t) {
            std::thread::sleep(POLL);
            continue;
        }
        match lease.as_mut().map(Lease::try_take) {
            Some(Ok(Some(epoch))) => break epoch,
            Some(Ok(None)) => {}
            Some(Err(e)) => {
                tracing::warn!("standing by, lost the state database: {e}");
                lease = None;
                outage = true;
            }
            None => {}
        }
        std::thread::sleep(POLL);
    };
    let lease = lease.expect("taken");
    let _ = stop_tx.send(());
    match runtime.block_on(standby) {
        Ok(Ok(())) => {}
        Ok(Err(e)) => tracing::warn!("the standby listener on {listen} failed: {e}"),
        Err(e) => tracing::warn!("the standby listener on {listen} failed: {e}"),
    }
    tracing::info!("slurmctld ({role}): taking over as the active controller (epoch {epoch})");

    // The lease is watched while serving: another epoch, or the lock another's, and
    // this controller steps down at once; its connection lost (the database restarted,
    // a short outage), it is taken again, stepping down only if that fails for as long
    // as a controller may be silent.
    let (watch_tx, watch_rx) = std::sync::mpsc::channel::<()>();
    let watcher = std::thread::Builder::new()
        .name("sluice-lease".into())
        .spawn(move || watch(lease, epoch, timeout, &watch_rx))
        .expect("spawn the lease watcher");
    let handed = Arc::new(AtomicBool::new(false));
    let shutdown = {
        let handed = handed.clone();
        async move {
            tokio::select! {
                _ = crate::daemons::terminated() => {}
                _ = fencing::hand_over_requested() => handed.store(true, Ordering::SeqCst),
            }
        }
    };
    let value = Epoch {
        value: epoch,
        key: epoch_key(&cluster),
    };
    let result = runtime.block_on(sluice_ctld::server::run(
        conf,
        state_dir,
        network(Some(value)),
        shutdown,
    ));
    // Stopped cleanly (everything written): the lease goes.
    drop(watch_tx);
    let _ = watcher.join();
    if handed.load(Ordering::SeqCst) && result.is_ok() {
        tracing::info!("handed over: standing by");
        start_again(Some(HAND_OVER_HOLD_OFF_MS));
    }
    result
}

/// Watches the active controller's `lease` (taken with `epoch`) until `stop` says
/// (or is dropped), then gives it up; see [`lease_lost`].
fn watch(mut lease: Lease, epoch: i64, timeout: Duration, stop: &std::sync::mpsc::Receiver<()>) {
    // Since when, and why, the lease's connection has been lost.
    let mut lost: Option<(Instant, String)> = None;
    loop {
        let every = if lost.is_some() {
            POLL
        } else {
            Duration::from_secs(1)
        };
        match stop.recv_timeout(every) {
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
            _ => {
                lease.release();
                return;
            }
        }
        if let Some((since, why)) = &lost {
            match lease.take_again() {
                Ok(Again::Ours) => {
                    tracing::info!(
                        "took the controller lease again (epoch {epoch}): still the active controller"
                    );
                    lost = None;
                }
                Ok(Again::Lost(now)) => fencing::step_down(&match now {
                    Some(e) => format!("the fencing epoch is {e}: another controller took over"),
                    None => "another controller holds the controller lease".to_string(),
                }),
                Err(e) => {
                    if lease_lost(since.elapsed(), timeout) {
                        fencing::step_down(&format!(
                            "lost the controller lease ({why}) and could not take it again within SlurmctldTimeout ({}s): {e}",
                            timeout.as_secs()
                        ))
                    }
                }
            }
            continue;
        }
        match lease.current() {
            Ok(e) if e == epoch => {}
            Ok(e) => fencing::step_down(&format!(
                "the fencing epoch is {e}: another controller took over"
            )),
            Err(e) => {
                tracing::warn!("lost the controller lease ({e}): taking it again");
                lost = Some((Instant::now(), e.to_string()));
            }
        }
    }
}

/// Whether a lease whose connection has been lost for `lost` is given up: past
/// `SlurmctldTimeout`, when a standby may have taken over (its writes would fence
/// this controller's anyway).
fn lease_lost(lost: Duration, timeout: Duration) -> bool {
    lost >= timeout
}

/// How long a standby that lost the database (or could not reach it) waits, once it
/// reaches it again, before asking for the lease: the active controller, which lost
/// its lease connection too in a database restart, takes its lease again first and
/// nothing changes hands.
fn hold_off_after_outage(timeout: Duration) -> Duration {
    (timeout / 4).max(Duration::from_secs(2))
}

/// Asks the other controllers to hand over to this one (`scontrol takeover`): the
/// active one stops cleanly and gives its lease up.
fn ask_to_hand_over(
    net: &sluice_conf::net_conf::NetConf,
    index: usize,
    auth: &sluice_proto::auth::Scheme,
) {
    tracing::info!("asked to take over: asking the active controller to hand over");
    for (i, addr) in net.controller_addrs().iter().enumerate() {
        if i == index {
            continue;
        }
        let client =
            sluice_proto::Client::signed(addr, auth.signer()).with_timeout(Duration::from_secs(5));
        match client.post::<_, serde_json::Value>("/v1/step-down", &serde_json::json!({})) {
            Ok(_) => tracing::info!("the controller at {addr} hands over"),
            Err(e) => tracing::debug!("the controller at {addr} does not hand over: {e}"),
        }
    }
}

/// Executes this program again with the same arguments (a standby again), after
/// `hold_off_ms` when given. Never returns.
fn start_again(hold_off_ms: Option<u64>) -> ! {
    use std::os::unix::process::CommandExt;
    let mut args = std::env::args_os();
    let argv0 = args.next().unwrap_or_else(|| "slurmctld".into());
    let exe = std::fs::read_link("/proc/self/exe")
        .ok()
        .filter(|p| p.exists())
        .or_else(|| std::env::current_exe().ok())
        .unwrap_or_else(|| argv0.clone().into());
    let mut cmd = std::process::Command::new(exe);
    // The same process (exec keeps the pid): it is detached already, and its pid file
    // stays right.
    cmd.arg0(argv0).args(args).env(AGAIN_ENV, "1");
    if let Some(ms) = hold_off_ms {
        cmd.env(HOLD_OFF_ENV, ms.to_string());
    }
    let e = cmd.exec();
    tracing::error!("cannot start again as a standby: {e}");
    std::process::exit(1)
}
