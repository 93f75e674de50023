#!/bin/bash
# The single-file `verbus` binary: bun build --compile of the Bun CLI, its FFI worker, and the two
# native libraries it must carry to stand alone (the C helper and the simulated liburma), embedded
# under their file names (Bun.embeddedFiles; ffi/embedded.ts writes them to the per-user cache on
# first use). Usage: scripts/build_binary.sh OUTFILE   (BUN names the bun binary; run `make helper` first)
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: scripts/build_binary.sh OUTFILE}
BUN=${BUN:-node_modules/.bin/bun}
libs=(build/libverbus_helper.so build/urma_sim/liburma.so.0)
for f in "${libs[@]}"; do
  [ -f "$f" ] || { echo "build_binary: $f is missing (run 'make helper')" >&2; exit 1; }
done
exec "$BUN" build --compile cli/verbus_bun.ts ffi/bun_worker.ts "${libs[@]}" \
  --asset-naming='[name].[ext]' --outfile "$out"
