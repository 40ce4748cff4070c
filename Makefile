# sng — two commands on a fresh machine: `make demo` and `make test`.
CARGO ?= cargo

.PHONY: all build demo test setup lint bench bench-scale bench-pass bench-replicas bench-agents bench-hook bench-retry bench-console screenshots bench-hops

all: build

build:
	$(CARGO) build --release --bin sng

## demo: start a server in a temporary data dir, apply examples/, list what it holds.
demo: setup build
	scripts/demo.sh

## setup: install what the tests need (system packages, engine), idempotent.
setup:
	scripts/setup.sh

## test: install what tests need, start a PostgreSQL of its own, then run every test: all of
## them on the embedded SQLite (the store's tests and the replica tests on PostgreSQL too),
## then the end-to-end tests again against PostgreSQL (the `e2e` binary and any single-file
## test beside it), but the modules of PG_E2E_SKIP (the master key rotation and the raw SQLite
## file checks are the data directory's; the replica tests ran already, the outage and
## migration tests start or use PostgreSQL themselves; the 20,000-deep chain decides the same on
## both stores and takes minutes to write on PostgreSQL). Incremental compilation is off: CI
## builds once, and its files would double the disk the build takes.
PG_E2E_SKIP ?= keys rotation replicas database_outage migrate deep_chain
PG_E2E := e2e $(basename $(notdir $(wildcard crates/sng/tests/*.rs)))
test: setup
	@if scripts/pg.sh running; then ours=0; else ours=1; fi; \
	url=$$(scripts/pg.sh start) && export CARGO_INCREMENTAL=0 && \
	  SNG_TEST_DATABASE=$$url $(CARGO) test --workspace --all-targets && \
	  SNG_TEST_DATABASE=$$url $(CARGO) test --workspace --doc && \
	  SNG_TEST_DATABASE=$$url SNG_E2E_DATABASE=$$url $(CARGO) test --workspace \
	    $(addprefix --test ,$(PG_E2E)) -- $(addprefix --skip ,$(addsuffix ::,$(PG_E2E_SKIP))); \
	  rc=$$?; [ $$ours = 0 ] || scripts/pg.sh stop; exit $$rc

lint:
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --workspace --all-targets -- -D warnings

## bench: sng versus the bare engine, side by side (see BENCHMARKS.md).
bench: build
	bench/run-overhead.sh

## bench-pass: one reconcile pass over 10,000 idle workspaces, cold (inputs gathered) and warm.
bench-pass:
	cargo bench -p sng-server --bench reconcile_pass

## bench-scale: the server at scale (issue 21): idle RSS and CPU at BENCH_SIZES workspaces, listings,
## pass cost, a chain of 50 and a fan-out of 200 beside the bare engine, a restart (bench/scale.sh).
bench-scale: build
	SNG_BIN=target/release/sng bench/scale.sh

## bench-replicas: replicas on PostgreSQL (list 10,000 on PostgreSQL vs SQLite, apply → run
## started with 1 and 3 replicas, 1,000 runs over 3 replicas, idle CPU of 3 replicas).
bench-replicas: build
	SNG_BIN=target/release/sng bench/replicas.sh

## bench-agents: a burst of 200 runs on two remote agents of one slot vs the local agent of two
## slots, and the claim latency (job enqueued → engine started).
bench-agents: build
	SNG_BIN=target/release/sng bench/agents.sh

## bench-hops: a chain of 20 passing outputs, with 0 and 10,000 idle workspaces in the tenant,
## beside the bare engine: the hop from a parent's end to its child's start.
bench-hops: build
	SNG_BIN=target/release/sng bench/dependency-hops.sh

## bench-hook: how fast POST /hooks/registry/{tenant} acknowledges registry notifications (new
## events and replays), and how soon the queue is worked.
bench-hook: build
	SNG_BIN=target/release/sng bench/registry-hook.sh

## bench-retry: 500 workspaces fail at once on a dead registry, it comes back: how the retries
## spread over the backoff window, and that a user's apply made meanwhile starts first.
bench-retry: build
	SNG_BIN=target/release/sng bench/retry-storm.sh

## bench-console: the web console's workspaces page over 10,000 workspaces (first page, filters,
## search), request time p50/p90/max.
bench-console: build
	SNG_BIN=target/release/sng bench/console.sh

## screenshots: docs/screenshots/*.png of the web console, taken by its browser test (each page
## the accessibility check audits; every console test whose name says `in_a_real_browser`).
screenshots:
	SNG_SCREENSHOTS=$(CURDIR)/docs/screenshots cargo test -p sng --test e2e in_a_real_browser
