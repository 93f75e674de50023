#!/bin/bash
# bench/vm/both_runtimes.sh SCRIPT [ARGS...] — runs INSIDE the Soft-RoCE VM:
#   SR_SHARE=$PWD ../shared/softroce/run-in-vm.sh 'bash bench/vm/both_runtimes.sh bench/vm/X.ts'
# One bench script under Deno, then under Bun (each writes its own results); exits 1 when
# either failed.
set -u
cd "$(dirname "$0")/../.."
export NO_COLOR=1
rc=0
node_modules/.bin/deno run -A --config deno.json "$@" || rc=1
node_modules/.bin/bun "$@" || rc=1
exit $rc
