#!/bin/bash
# tests/vm/run.sh — runs INSIDE the Soft-RoCE VM (see ../shared/softroce/run-in-vm.sh):
# the VM suites (tests/vm/*_test.ts) under Deno and under Bun, each writing its report to
# build/test-results/vm-<runtime>.json (the repo is shared read-write with the guest).
set -u
cd "$(dirname "$0")/../.."
export NO_COLOR=1
mkdir -p build/test-results
ibv_devices || true
rc=0
for rt in deno bun; do
  echo "=== VM suite on $rt ==="
  if [ "$rt" = deno ]; then cmd=(node_modules/.bin/deno run -A tests/run.ts); else cmd=(node_modules/.bin/bun tests/run.ts); fi
  "${cmd[@]}" --report "build/test-results/vm-$rt.json" tests/vm/*_test.ts || rc=1
done
exit $rc
