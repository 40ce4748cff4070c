# sng — two commands on a fresh machine: `make demo` and `make test`.
CARGO ?= cargo

.PHONY: all build demo test setup lint bench bench-scale bench-pass

all: build

build:
	$(CARGO) build --release --bin sng

## demo: start a server in a temporary data dir, apply examples/, list what it holds.
demo: setup build
	scripts/demo.sh

## setup: install what the tests need (system packages, engine), idempotent.
setup:
	scripts/setup.sh

## test: install what tests need, then run every test.
test: setup
	$(CARGO) test --workspace --all-targets
	$(CARGO) test --workspace --doc

lint:
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --workspace --all-targets -- -D warnings

## bench: sng versus the bare engine, side by side (see BENCHMARKS.md).
bench: build
	bench/run-overhead.sh

## bench-pass: one reconcile pass over 10,000 idle workspaces, cold (inputs gathered) and warm.
bench-pass:
	cargo bench -p sng-server --bench reconcile_pass

## bench-scale: the reconciler at scale (1,000 Ready workspaces restarted, a burst of 200).
bench-scale: build
	SNG_BIN=target/release/sng bench/restart-and-burst.sh
