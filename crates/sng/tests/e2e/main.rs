//! Every end-to-end test of the `sng` binary, in one test binary: one link instead of one per
//! file (the ~35 binaries of ~90 MB each filled a CI disk), and one pool of test threads.
//! Each file is a module; `cargo test -p sng --test e2e MODULE::` runs one of them. The
//! harness stays in `tests/common/` so that a single-file test beside this directory can still
//! say `mod common;`.

#[path = "../common/mod.rs"]
mod common;

mod agent_faults;
mod agent_pools;
mod agents;
mod audit;
mod audit_runs;
mod balance;
mod burst;
mod cli;
mod console;
mod console_admin;
mod console_detail;
mod console_live;
mod database_outage;
mod decisions;
mod deep_chain;
mod exceptions;
mod expiry;
mod freeze;
mod governance;
mod guarantees;
mod idempotency;
mod integrity;
mod interruptions;
mod keys;
mod kubectl;
mod lifecycle;
mod migrate;
mod module_publish;
mod module_tags;
mod operate;
mod pagination;
mod plan_actions;
mod priority;
mod probes;
mod production;
mod quarantine;
mod quickstart;
mod quotas;
mod replicas;
mod retention;
mod rotation;
mod runs;
mod s3;
mod schemas;
mod selectors;
mod service;
mod service_tls;
mod state_guard;
mod tenant_isolation;
mod tenant_move;
mod tenant_roles;
mod webhooks;
mod webhooks_standard;
