# ShopLedger — the two commands of the README, and a few more.
#   make run    install what is missing, build, serve on 127.0.0.1:8080 with a private PostgreSQL
#   make test   install what is missing, run every test against a throwaway PostgreSQL

SWIFT ?= swift
HOST ?= 127.0.0.1
PORT ?= 8080

.PHONY: run test build bench deps clean

deps:
	@./scripts/install-deps.sh

build: deps
	$(SWIFT) build -c release --product shopledger

run: build
	@echo "ShopLedger: serving on http://$(HOST):$(PORT) (private PostgreSQL under .shopledger/; Ctrl-C stops both)"
	.build/release/shopledger serve --host $(HOST) --port $(PORT)

# The test process starts its own throwaway PostgreSQL cluster (under /tmp) and removes it at exit.
test: deps
	$(SWIFT) build --build-tests
	$(SWIFT) test --skip-build

# Figures, not pass/fail: release build, each benchmark starts (and stops) its own PostgreSQL.
bench: deps
	$(SWIFT) build -c release --product PostgresBench
	$(SWIFT) build -c release --product LedgerBench
	$(SWIFT) build -c release --product ReceiptsBench
	$(SWIFT) build -c release --product ReportsBench
	.build/release/PostgresBench 5
	.build/release/LedgerBench
	taskset -c 0 .build/release/ReceiptsBench 20000
	.build/release/ReportsBench 1000000

clean:
	rm -rf .build .shopledger
