#!/bin/bash
# scripts/test.sh all|quick|vm — runs the suites and ends with the line CI reads:
# "N passed, N failed" summed over every suite (host Deno, host Bun, VM Deno, VM Bun).
set -u
cd "$(dirname "$0")/.."
mode=${1:-all}
RESULTS=build/test-results
SOFTROCE=${SOFTROCE:-$(cd .. && pwd)/shared/softroce}
rm -rf "$RESULTS"; mkdir -p "$RESULTS"
export NO_COLOR=1 VERBUS_DENO=$PWD/node_modules/.bin/deno VERBUS_BUN=$PWD/node_modules/.bin/bun
suites=()
# The fabric matrix comes from the descriptors (transport/<fabric>/descriptor.ts, testSettings.where):
# the region suite runs again over each fabric tested on the host (shm, the default, is in the host
# suite already) and over each tested in the VM.
mapfile -t HOST_FABRICS < <(node_modules/.bin/deno run -A scripts/fabric_matrix.ts host --except shm)
mapfile -t VM_FABRICS < <(node_modules/.bin/deno run -A scripts/fabric_matrix.ts vm)
if [ "$mode" != vm ]; then
  echo "=== host suite on deno ==="
  node_modules/.bin/deno run -A tests/run.ts --report "$RESULTS/host-deno.json"
  echo "=== host suite on bun ==="
  node_modules/.bin/bun tests/run.ts --report "$RESULTS/host-bun.json"
  suites+=(host-deno host-bun)
  # The region suite again, over each other fabric tested on the host (URMA: verbus's simulated
  # liburma).
  for rt in deno bun; do
    if [ "$rt" = deno ]; then cmd=(node_modules/.bin/deno run -A tests/run.ts); else cmd=(node_modules/.bin/bun tests/run.ts); fi
    for kind in "${HOST_FABRICS[@]}"; do
      echo "=== region suite over $kind on $rt ==="
      VERBUS_TEST_FABRIC=$kind "${cmd[@]}" --report "$RESULTS/$kind-$rt.json" tests/fabric/*_test.ts
      suites+=("$kind-$rt")
    done
    # The other named UMDK ABIs (simulator builds in build/urma_sim/<abi>/; the host suite above
    # ran everything on the default 25.12): the URMA tests that touch the layouts that differ
    # (ABI choice, descriptions, loopback imports, two processes, the fabric handshake, its
    # faults and async events) on each, and the region suite on 25.12-B081 (about 30 s in all).
    files=(tests/urma/{abi,loader,description,loopback,cross_process,fabric_cross,fabric_faults,async_events}_test.ts)
    for abi in 25.12-B081 26.06-ext 26.06-ext56; do
      echo "=== urma suite (layout subset) on simulated ABI $abi on $rt ==="
      VERBUS_TEST_URMA_ABI=$abi "${cmd[@]}" --report "$RESULTS/urma-$abi-$rt.json" "${files[@]}"
      suites+=("urma-$abi-$rt")
    done
    echo "=== region suite over urma (simulated ABI 25.12-B081) on $rt ==="
    VERBUS_TEST_FABRIC=urma VERBUS_TEST_URMA_ABI=25.12-B081 "${cmd[@]}" --report "$RESULTS/urma-b081-fabric-$rt.json" tests/fabric/*_test.ts
    suites+=("urma-b081-fabric-$rt")
  done
fi
if [ "$mode" != quick ]; then
  if [ -x "$SOFTROCE/run-in-vm.sh" ]; then
    echo "=== VM suites (Soft-RoCE rxe0 <-> rxe1) ==="
    SR_SHARE=$PWD SR_TIMEOUT=${SR_TIMEOUT:-2400} "$SOFTROCE/run-in-vm.sh" 'bash tests/vm/run.sh' 2>&1 \
      | grep -vE '^\s*$|^\[ *[0-9.]+\] '
    suites+=(vm-deno vm-bun)
    for kind in "${VM_FABRICS[@]}"; do suites+=("vm-$kind-deno" "vm-$kind-bun"); done
  else
    echo "SKIPPED: the RDMA suites need $SOFTROCE/run-in-vm.sh (the Soft-RoCE VM), which is absent here"
  fi
fi
echo
exec node scripts/sum_results.mjs "$RESULTS" "${suites[@]}"
