//! The seam between the store and its database: what one group-commit transaction
//! does ([`Batch`], one implementation per engine: [`crate::sqlite`],
//! [`crate::pg`]), and the one place a batch of the writer's operations is turned
//! into those calls ([`apply`]). The queue, the batching and the answers
//! (`crate::writer_loop`) are the store's, whatever the engine.

use crate::{AccountRow, AuditRecord, JobKeys, Op, StoreError};

/// One transaction in progress on the writer's connection. Each call is one write;
/// nothing is visible to readers until the engine commits the whole batch.
pub(crate) trait Batch {
    /// The id the next submission gets, as stored.
    fn next_job_id(&mut self) -> Result<i64, StoreError>;
    /// Stores the next id.
    fn set_next_job_id(&mut self, next: i64) -> Result<(), StoreError>;
    /// Inserts a new job with its keys.
    fn insert_job(&mut self, id: u64, keys: &JobKeys, record: &str) -> Result<(), StoreError>;
    /// Writes a job's record and keys, inserting it if new.
    fn put_job(&mut self, id: u64, keys: &JobKeys, record: &str) -> Result<(), StoreError>;
    /// Inserts or replaces a step's record.
    fn put_step(&mut self, id: u64, step: u64, record: &str) -> Result<(), StoreError>;
    /// Inserts or replaces a submission's script.
    fn put_script(&mut self, id: u64, script: &str, environment: &str) -> Result<(), StoreError>;
    /// Deletes a job, its steps and its script.
    fn delete_job(&mut self, id: u64) -> Result<(), StoreError>;
    /// Inserts or replaces a requeued job's earlier run.
    fn put_run(&mut self, id: u64, run: u32, record: &str) -> Result<(), StoreError>;
    /// Inserts, replaces or deletes a node's record.
    fn put_node(&mut self, name: &str, record: Option<&str>) -> Result<(), StoreError>;
    /// Inserts, replaces or deletes an account row.
    fn put_account(&mut self, row: &AccountRow) -> Result<(), StoreError>;
    /// Inserts, replaces or deletes a reservation's record.
    fn put_reservation(&mut self, name: &str, record: Option<&str>) -> Result<(), StoreError>;
    /// Sets the mark of a clean stop with the agents.
    fn mark_stopped(&mut self, stopped: bool) -> Result<(), StoreError>;
    /// Appends audit records and their device holds.
    fn audit(&mut self, records: &[AuditRecord]) -> Result<(), StoreError>;
    /// Deletes up to `limit` old audit events and ended holds; how many went.
    fn purge_audit(&mut self, before: i64, limit: u64) -> Result<u64, StoreError>;
}

/// What each operation of a batch produced (a count for purges).
pub(crate) type Outcome = Vec<Option<u64>>;

/// Carries out `batch` in the transaction `b`, in order; the caller commits.
pub(crate) fn apply(b: &mut dyn Batch, batch: &[Op]) -> Result<Outcome, StoreError> {
    let mut out = Vec::with_capacity(batch.len());
    // The id after the last one this batch inserts: the stored next id is read (and
    // moved) only by a batch that inserts jobs, not by every commit.
    let mut next: Option<i64> = None;
    for op in batch {
        let mut produced = None;
        match op {
            Op::Insert {
                first,
                records,
                script,
                audit,
                ..
            } => {
                for (i, (keys, record)) in records.iter().enumerate() {
                    b.insert_job(first + i as u64, keys, record)?;
                }
                if let Some(s) = script {
                    b.put_script(*first, &s.script, &s.environment)?;
                }
                if !audit.is_empty() {
                    b.audit(audit)?;
                }
                let after = *first as i64 + records.len().max(1) as i64;
                next = Some(next.map_or(after, |n| n.max(after)));
            }
            Op::PutJob {
                id, keys, record, ..
            } => b.put_job(*id, keys, record)?,
            Op::PutStep {
                id, step, record, ..
            } => b.put_step(*id, *step, record)?,
            Op::PutScript { id, script } => {
                b.put_script(*id, &script.script, &script.environment)?
            }
            Op::DeleteJob { id } => b.delete_job(*id)?,
            Op::PutRun { id, run, record } => b.put_run(*id, *run, record)?,
            Op::PutNode { name, record, .. } => b.put_node(name, record.as_deref())?,
            Op::PutAccounts { rows, .. } => {
                for row in rows {
                    b.put_account(row)?;
                }
            }
            Op::PutReservation { name, record, .. } => {
                b.put_reservation(name, record.as_deref())?
            }
            Op::MarkStopped(stopped) => b.mark_stopped(*stopped)?,
            Op::Audit(records) => b.audit(records)?,
            Op::PurgeAudit { before, limit, .. } => {
                produced = Some(b.purge_audit(*before, *limit)?)
            }
            Op::Sync { .. } | Op::Shutdown => {}
            #[cfg(test)]
            Op::Hold(_) => {}
        }
        out.push(produced);
    }
    if let Some(next) = next {
        if next > b.next_job_id()? {
            b.set_next_job_id(next)?;
        }
    }
    Ok(out)
}
