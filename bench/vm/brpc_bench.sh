#!/bin/bash
# bench/vm/brpc_bench.sh — runs INSIDE the Soft-RoCE VM:
#   SR_SHARE=$PWD ../shared/softroce/run-in-vm.sh 'bash bench/vm/brpc_bench.sh'
# brpc's RDMA mode vs the verbs fabric vs TCP (bench/vm/brpc_bench.ts), Deno then Bun;
# results in bench/results/brpc-rdma-vm-<runtime>.{md,json}. Emulated VM: ratios only.
exec bash "$(dirname "$0")/both_runtimes.sh" bench/vm/brpc_bench.ts
