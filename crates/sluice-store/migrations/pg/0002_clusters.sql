-- Several clusters on one database, as slurmdbd keeps them: each cluster's tables
-- (jobs, steps, runs, scripts, nodes, accounts, reservations, audit, meta) live in a
-- schema of its own, "cluster_<ClusterName>", which every connection of that
-- cluster's controller puts first in its search_path (crates/sluice-store/src/
-- clusters.rs); a database of the single-cluster layout (tables in public) has them
-- moved there by that code before this migration runs, under the configured
-- ClusterName. This migration runs once per cluster's schema and adds what clusters
-- share: the registry `sacctmgr show cluster` lists (idempotent, as every cluster
-- runs it).

CREATE TABLE IF NOT EXISTS public.clusters (
    name TEXT PRIMARY KEY,
    -- Where the controller listens for TCP (sacctmgr's ControlHost, ControlPort).
    control_host TEXT NOT NULL DEFAULT '',
    control_port INTEGER NOT NULL DEFAULT 0,
    -- The hosts SlurmctldHost lists, comma separated.
    controllers TEXT NOT NULL DEFAULT '',
    registered TIMESTAMPTZ NOT NULL DEFAULT now(),
    last_start TIMESTAMPTZ NOT NULL DEFAULT now());
