# ShopLedger — the two commands of the README, and a few more.
#   make run    install what is missing, build, serve on 127.0.0.1:8080 with a private PostgreSQL
#   make test   install what is missing, run every test against a throwaway PostgreSQL
#   make test-faults   the reliability scenarios in full, then schemathesis (docs/reliability.md)
#   make fuzz   coverage-guided fuzzing of the parsers and verifiers, FUZZ_SECONDS per target (docs/testing.md)
#   make dist   the release artifact: dist/shopledger-<version>-linux-<arch>.tar.gz (deploy/README.md)

SWIFT ?= swift
HOST ?= 127.0.0.1
PORT ?= 8080
CONSOLE_PORT ?= 8081
# Seconds of fuzzing per target: `make fuzz`, and `make test-faults`, which fuzzes for minutes.
FUZZ_SECONDS ?= 60
FUZZ_FAULT_SECONDS ?= 120

.PHONY: run test test-faults test-ha fuzz build bench deps deps-test clean lint dist

# Building and running need PostgreSQL's binaries, libpq and pkg-config only; the tests also need HAProxy,
# nginx and openssl, pgBackRest, zlib's headers (CZlib: only the ReportsTests target links it), Chromium
# and its WebDriver (with Selenium and axe-core from PyPI in .build/browser-venv), a Korean font and
# cmark-gfm (scripts/install-deps.sh says which test needs which).
deps:
	@./scripts/install-deps.sh --for run

deps-test:
	@./scripts/install-deps.sh --for test

build: deps
	$(SWIFT) build -c release --product shopledger

# The release artifact (scripts/dist.sh): the binary built release with the Swift runtime linked in (its own
# scratch folder, .build-dist), the systemd unit, the env example and the operator's README, in one tarball
# under dist/ with its SHA-256. Prints the tarball's path.
dist: deps
	SWIFT=$(SWIFT) ./scripts/dist.sh

# Development mode: dev:<uid> tokens and stub receipts are accepted, and webhooks may go to a receiver on this
# machine's loopback addresses (never in production).
# The operators' console on CONSOLE_PORT: the first run makes an `admin` operator with a random password in
# .shopledger/console-admin-password (scripts/console-operator.sh; docs/console.md).
run: build
	@./scripts/console-operator.sh .build/release/shopledger http://$(HOST):$(CONSOLE_PORT)
	@echo "ShopLedger: serving on http://$(HOST):$(PORT) (private PostgreSQL under .shopledger/; Ctrl-C stops both)"
	@echo "ShopLedger: DEVELOPMENT MODE: tokens 'dev:<uid>' and stub receipts are accepted (see README, 'Try it')"
	.build/release/shopledger serve --host $(HOST) --port $(PORT) --console-port $(CONSOLE_PORT) --dev-auth --stub-receipts --webhook-allow-loopback

# The test process starts its own throwaway PostgreSQL cluster (under /tmp) and removes it at exit.
# The fault scenarios (each spawning the shopledger binary and a cluster, loading it) run on their own
# afterwards: they would slow the suites with tight time bounds, and those would slow them.
# Formatting is enforced: the project's .swift-format (120 columns), swift-format from the toolchain.
lint:
	$(SWIFT) format lint --strict --recursive Sources Tests Benchmarks Package.swift

# The scenarios past one machine (several servers, nginx with TLS in front, a standby, failover) each
# run two or three servers and clusters, and the restore drill (pgBackRest: a full backup, a restore to
# a point in time) two clusters and a burst of disk writes: they run after the others, not beside them,
# whose time bounds are tight.
SCALING_FAULTS = FaultTests.(SeveralServersTests|TLSProxyTests|StandbyTests|FailoverTests|BackupRestoreTests)
# The attacks (thousands of half-open connections, hostile proofs beside a load) run on their own too:
# beside the others they pushed the hung-database scenario's 1-second bounds over (docs/security.md). The
# floods beside a timed buyer run after them, alone: others' load (a full accept queue) blurs the buyer.
HOSTILE_FAULTS = FaultTests.HostileRequestTests
FLOOD_FAULTS = FaultTests.FloodTests
# Unit tests that need NIO's event loops to themselves: stopping the in-process server waits for NIO to
# accept connections while the server's accept loop is held; beside the other suites (storms, fuzzers)
# that accept did not happen within 15 s in a fresh clone's run, and took 8-43 s in others.
ALONE_UNIT_TESTS = ShopServerTests.ServerStopTests
# The release artifact's checks need the tarball `make dist` builds (a release build: not in `make test`).
# The attacks run against its binary in `make test-faults`: the floods' latency targets are a release
# build's (docs/security.md).
RELEASE_ARTIFACT = FaultTests.ReleaseArtifactTests

test: deps-test lint
	$(SWIFT) build --build-tests
	$(SWIFT) test --skip-build --skip FaultTests --skip '$(ALONE_UNIT_TESTS)'
	$(SWIFT) test --skip-build --filter '$(ALONE_UNIT_TESTS)'
	SHOPLEDGER_FAULT_TESTS=quick $(SWIFT) test --skip-build --filter FaultTests --skip '$(SCALING_FAULTS)' --skip '$(HOSTILE_FAULTS)' --skip '$(FLOOD_FAULTS)'
	SHOPLEDGER_FAULT_TESTS=quick $(SWIFT) test --skip-build --filter '$(HOSTILE_FAULTS)'
	SHOPLEDGER_FAULT_TESTS=quick $(SWIFT) test --skip-build --filter '$(FLOOD_FAULTS)'
	SHOPLEDGER_FAULT_TESTS=quick $(SWIFT) test --skip-build --filter '$(SCALING_FAULTS)'

# Reliability, in full (a few minutes more than `make test`, which runs the quick scenarios): the real
# `shopledger serve` killed with SIGKILL, PostgreSQL crashed, SIGTERM under load, with longer loads;
# the storms and the mutation fuzzers again; then schemathesis against /openapi.yaml (installed from
# PyPI when missing); then the libFuzzer targets for FUZZ_FAULT_SECONDS each (`make fuzz`, longer).
# `swift build --build-tests` builds the shopledger binary the scenarios spawn. The release artifact is
# built (`make dist`) and checked unpacked on its own: its libraries, `migrate`, `serve`, the systemd unit.
test-faults: deps-test
	$(SWIFT) build --build-tests
	SHOPLEDGER_FAULT_TESTS=all $(SWIFT) test --skip-build --filter 'FaultTests|StormTests|TruncationFuzzTests|MutationFuzzTests' --skip '$(SCALING_FAULTS)' --skip '$(HOSTILE_FAULTS)' --skip '$(FLOOD_FAULTS)' --skip '$(RELEASE_ARTIFACT)'
	SWIFT=$(SWIFT) ./scripts/dist.sh >/dev/null
	SHOPLEDGER_FAULT_TESTS=all SHOPLEDGER_BINARY=$(CURDIR)/.build-dist/release/shopledger \
	  $(SWIFT) test --skip-build --filter '$(HOSTILE_FAULTS)'
	SHOPLEDGER_FAULT_TESTS=all SHOPLEDGER_BINARY=$(CURDIR)/.build-dist/release/shopledger \
	  $(SWIFT) test --skip-build --filter '$(FLOOD_FAULTS)'
	SHOPLEDGER_FAULT_TESTS=all $(SWIFT) test --skip-build --filter '$(SCALING_FAULTS)'
	tarball=$$(SWIFT=$(SWIFT) ./scripts/dist.sh) && \
	  SHOPLEDGER_FAULT_TESTS=all SHOPLEDGER_DIST_TARBALL="$$tarball" $(SWIFT) test --skip-build --filter '$(RELEASE_ARTIFACT)'
	HA_BINARY=$(CURDIR)/.build-dist/release/shopledger $(MAKE) --no-print-directory test-ha
	./scripts/fuzz-openapi.sh
	SWIFT=$(SWIFT) FUZZ_SECONDS=$(FUZZ_FAULT_SECONDS) ./scripts/fuzz.sh

# Failover without a person (docs/operations.md, "Failover with Patroni"): three PostgreSQL nodes under
# Patroni, each in a network namespace of its own (root), one etcd, HAProxy, two servers under load;
# HA_ROUNDS rounds of five leader faults, audited. The targets are a release build's: it builds one
# (.build-dist, as `make dist`) unless HA_BINARY names a shopledger binary.
HA_ROUNDS ?= 3
test-ha:
	@./scripts/install-deps.sh --for ha
	$(SWIFT) build --build-tests
	binary="$(HA_BINARY)"; if [ -z "$$binary" ]; then SWIFT=$(SWIFT) ./scripts/dist.sh >/dev/null && binary=$(CURDIR)/.build-dist/release/shopledger; fi; \
	  SHOPLEDGER_FAULT_TESTS=all SHOPLEDGER_HA_ROUNDS=$(HA_ROUNDS) SHOPLEDGER_BINARY="$$binary" \
	  $(SWIFT) test --skip-build --filter FaultTests.PatroniFailoverTests

# Coverage-guided fuzzing with libFuzzer (from the Swift toolchain): builds the instrumented shopledger-fuzz
# into .build-fuzz, runs each target for FUZZ_SECONDS on a working copy of its corpus (Fuzz/corpus stays as
# committed); fails when one crashed, hung or ran out of memory. `make test` replays the committed corpora.
fuzz: deps
	SWIFT=$(SWIFT) FUZZ_SECONDS=$(FUZZ_SECONDS) ./scripts/fuzz.sh

# Figures, not pass/fail: release builds; each benchmark starts (and stops) its own PostgreSQL, LoadBench
# also the release server. Prints the figures and writes docs/performance.md.
bench: deps
	SWIFT=$(SWIFT) ./scripts/bench.sh

clean:
	rm -rf .build .build-dist .shopledger dist
