#!/bin/bash
# bench/vm/brpc_bench.sh — runs INSIDE the Soft-RoCE VM:
#   SR_SHARE=$PWD ../shared/softroce/run-in-vm.sh 'bash bench/vm/brpc_bench.sh'
# brpc's RDMA mode vs the verbs fabric vs TCP (bench/vm/brpc_bench.ts), Deno then Bun;
# results in bench/results/brpc-rdma-vm-<runtime>.{md,json}. Emulated VM: ratios only.
set -u
cd "$(dirname "$0")/../.."
export NO_COLOR=1
rc=0
node_modules/.bin/deno run -A --config deno.json bench/vm/brpc_bench.ts || rc=1
node_modules/.bin/bun bench/vm/brpc_bench.ts || rc=1
exit $rc
