#!/bin/bash
# bench/vm/brpc_first_handshake.sh — runs INSIDE the Soft-RoCE VM:
#   SR_SHARE=$PWD ../shared/softroce/run-in-vm.sh 'bash bench/vm/brpc_first_handshake.sh'
# brpc's RDMA handshake step by step, the first connection against later ones
# (bench/vm/brpc_first_handshake.ts), Deno then Bun; results in
# bench/results/brpc-first-handshake-vm-<runtime>.md. Emulated VM: compare steps only.
set -u
cd "$(dirname "$0")/../.."
export NO_COLOR=1
rc=0
node_modules/.bin/deno run -A --config deno.json bench/vm/brpc_first_handshake.ts || rc=1
node_modules/.bin/bun bench/vm/brpc_first_handshake.ts || rc=1
exit $rc
