# verbus — build, demo and test. Every target installs what it needs on a fresh Debian 12
# (root; node, npm, gcc, make present): Debian packages, npm packages (pinned deno and bun),
# and the C helper.
SHELL := /bin/bash
DENO := node_modules/.bin/deno
BUN := node_modules/.bin/bun
SOFTROCE ?= $(abspath ../shared/softroce)
APT_PKGS := rdma-core ibverbs-providers libibverbs-dev librdmacm-dev ibverbs-utils rdmacm-utils perftest iproute2
RESULTS := build/test-results
export NO_COLOR := 1

.PHONY: all setup deps helper demo test test-quick test-vm check binary bench bench-ffi bench-e2e bench-vm bench-profile bench-scale bench-scale-vm bench-brpc-vm soak bench-agent clean

all: setup

setup: deps node_modules/.verbus-installed helper

# Debian packages (headers to build the helper; libraries and tools at run time).
deps: build/.apt-done
build/.apt-done:
	@missing=""; for p in $(APT_PKGS); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  echo "installing Debian packages:$$missing"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing; \
	fi
	@mkdir -p build && touch $@

node_modules/.verbus-installed: package.json package-lock.json
	npm ci --no-audit --no-fund
	@$(DENO) --version | head -1 && echo "bun $$($(BUN) --version)"
	@touch $@

helper: deps
	$(MAKE) -C c-helpers OUT=$(abspath build)
	$(MAKE) -C c-helpers/urma_sim OUT=$(abspath build)

# The main job: what this host can do, then a server and clients over the best path it has.
demo: setup
	@bash scripts/demo.sh

# All tests: host suites on Deno and Bun, then the RDMA suites inside the Soft-RoCE VM.
test: setup
	@bash scripts/test.sh all

# Host suites only (no VM): for the edit-test loop.
test-quick: setup
	@bash scripts/test.sh quick

test-vm: setup
	@bash scripts/test.sh vm

check: setup
	$(DENO) check mod.ts examples/demo/mod.ts cli/main.ts cli/verbus_bun.ts tests/run.ts tests/*_test.ts tests/*/*_test.ts tests/urma/fixtures/peer.ts

# The single-file binary (Bun): build/verbus, next to the helper it loads.
binary: setup
	$(BUN) build --compile cli/verbus_bun.ts ffi/bun_worker.ts --outfile build/verbus

bench: bench-ffi bench-e2e

bench-e2e: setup
	$(DENO) run -A bench/e2e/run.ts

# Per-call cost breakdown (CPU profiles of an ECHO server and client, shm EAGER and TCP, both
# runtimes) into bench/results/profile.{md,json}; options: see bench/profile/README.md.
bench-profile: setup
	$(DENO) run -A bench/profile/run.ts $(PROFILE_ARGS)

# N idle sessions with one active (issue 10 item 6), both runtimes, shm, into
# bench/results/scale.{md,json}; options (e.g. SCALE_ARGS="--sessions 10,1000 --max-seconds 120"):
# see bench/scale/README.md.
bench-scale: setup
	$(DENO) run -A bench/scale/run.ts $(SCALE_ARGS)

# The soak (not in CI): 64 sessions x 32 calls in flight, mixed ops, on each runtime in turn;
# SOAK_SECONDS per runtime (default 600), SOAK_ARGS for --sessions / --window. Reports calls,
# failures, lost or duplicated KV writes and the server's RSS over time (build/soak/*.json).
SOAK_SECONDS ?= 600
soak: setup
	$(DENO) run -A tests/reliability/soak.ts --seconds $(SOAK_SECONDS) $(SOAK_ARGS)
	$(BUN) tests/reliability/soak.ts --seconds $(SOAK_SECONDS) $(SOAK_ARGS)

# 8 processes through one `verbus agent` vs 8 with their own connections (issue 15), both
# runtimes, into bench/results/agent.{md,json}; options (e.g. AGENT_ARGS="--procs 8 --rounds 3"):
# see the header of bench/agent/run.ts.
bench-agent: setup
	$(DENO) run -A bench/agent/run.ts $(AGENT_ARGS)

# Inside the Soft-RoCE VM: verbus over verbs against perftest; issue 11's VM table in
# bench/results/vm.{md,json}. VERBS_BENCH_BEFORE=/path/to/checkout adds that tree's figures.
bench-vm: setup
	SR_SHARE=$(CURDIR) $(SOFTROCE)/run-in-vm.sh 'VERBS_BENCH_BEFORE=$(VERBS_BENCH_BEFORE) bash bench/vm/verbs_bench.sh both'

# Inside the Soft-RoCE VM: brpc's RDMA mode vs the verbs fabric vs TCP, both runtimes
# (bench/results/brpc-rdma-vm-<runtime>.{md,json}).
bench-brpc-vm: setup
	SR_SHARE=$(CURDIR) $(SOFTROCE)/run-in-vm.sh 'bash bench/vm/brpc_bench.sh'

# Inside the Soft-RoCE VM: N idle verbs sessions (10, 100, 500) and one active, both runtimes
# (bench/results/scale-vm-<runtime>.{md,json}).
bench-scale-vm: setup
	SR_SHARE=$(CURDIR) $(SOFTROCE)/run-in-vm.sh 'ulimit -n 20000; node_modules/.bin/deno run -A bench/vm/scale_verbs.ts $(SCALE_VM_ARGS) && node_modules/.bin/bun bench/vm/scale_verbs.ts $(SCALE_VM_ARGS)'

bench-ffi: setup
	$(DENO) run -A bench/ffi_bench.ts
	$(BUN) bench/ffi_bench.ts

clean:
	rm -rf build
