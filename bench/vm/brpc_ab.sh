#!/bin/bash
# bench/vm/brpc_ab.sh — runs INSIDE the Soft-RoCE VM: A/B of brpc's RDMA mode between two checkouts,
# each running its own bench/vm/brpc_bench.ts (brpc-rdma vs verbs fabric vs TCP, one server process
# per run), A then B, REPS times, for the runtimes given (default deno). Each run prints its table;
# compare the ratios inside each run (brpc-rdma / tcp), not figures across runs (the VM drifts).
#   SR_SHARE=/work ../shared/softroce/run-in-vm.sh 'bash /work/main/bench/vm/brpc_ab.sh /work/a /work/main 1 "deno bun"'
# Both checkouts need build/ (the helper) and node_modules, and must be visible in the guest.
set -u
A=${1:?checkout A}; B=${2:?checkout B}; REPS=${3:-1}; RTS=${4:-deno}
export NO_COLOR=1
for rep in $(seq 1 "$REPS"); do
  for rt in $RTS; do
    for side in A B; do
      root=$A; [ $side = B ] && root=$B
      echo "=== $side ($root) $rt rep $rep ==="
      if [ "$rt" = bun ]; then (cd "$root" && node_modules/.bin/bun bench/vm/brpc_bench.ts)
      else (cd "$root" && node_modules/.bin/deno run -A --config deno.json bench/vm/brpc_bench.ts); fi
    done
  done
done
