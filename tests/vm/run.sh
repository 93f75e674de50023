#!/bin/bash
# tests/vm/run.sh — runs INSIDE the Soft-RoCE VM (see ../shared/softroce/run-in-vm.sh): the VM
# suites (tests/vm/*_test.ts) and the region suite over each fabric whose descriptor is tested in
# the VM (scripts/fabric_matrix.ts vm: verbs, tests/fabric/*_test.ts with VERBUS_TEST_FABRIC=verbs:
# server on rxe1 10.77.0.2, client bound to rxe0 10.77.0.1), under Deno and under Bun. Reports go
# to build/test-results/vm-<runtime>.json and vm-<fabric>-<runtime>.json (the repo is shared
# read-write with the guest).
set -u
cd "$(dirname "$0")/../.."
export NO_COLOR=1 VERBUS_DENO=$PWD/node_modules/.bin/deno VERBUS_BUN=$PWD/node_modules/.bin/bun
mkdir -p build/test-results
ibv_devices || true
rc=0
# No process substitution here: the guest has no /dev/fd. Fabric names are single words.
vm_list=$(node_modules/.bin/deno run -A scripts/fabric_matrix.ts vm) || { echo "fabric_matrix failed"; exit 1; }
read -r -d '' -a VM_FABRICS <<< "$vm_list" || true
for rt in deno bun; do
  if [ "$rt" = deno ]; then cmd=(node_modules/.bin/deno run -A tests/run.ts); else cmd=(node_modules/.bin/bun tests/run.ts); fi
  echo "=== VM suite on $rt ==="
  "${cmd[@]}" --report "build/test-results/vm-$rt.json" tests/vm/*_test.ts || rc=1
  for kind in "${VM_FABRICS[@]}"; do
    echo "=== region suite over $kind (rxe0 -> rxe1) on $rt ==="
    VERBUS_TEST_FABRIC=$kind "${cmd[@]}" --report "build/test-results/vm-$kind-$rt.json" tests/fabric/*_test.ts || rc=1
  done
done
exit $rc
