#!/bin/bash
# bench/vm/wr_cost.sh — runs INSIDE the Soft-RoCE VM:
#   SR_SHARE=$PWD ../shared/softroce/run-in-vm.sh 'bash bench/vm/wr_cost.sh'
# What one RDMA work request costs this emulated fabric, next to what one verbus call spends:
# 1. ib_write_bw message rate (rxe0 → rxe1, 20000 WRITEs) at 64 B, 1024 B (one packet at rxe's
#    1024-byte MTU) and 4096 B (four packets), and at 64 B posted 16 per doorbell (--post_list).
# 2. bench/vm/verbs_profile.ts on Deno and Bun, event mode, 16 in flight: calls/s and the rxe
#    packets each call sent and received on both devices (hw_counters).
# Writes build/bench/wr-cost.json (one JSON line per measurement). Ratios only: the VM is TCG.
set -u
cd "$(dirname "$0")/../.."
export NO_COLOR=1
mkdir -p build/bench
OUT=build/bench/wr-cost.json
: > "$OUT"
X="-x ${SR_GID_INDEX:-1}"
bw() { # bw SIZE [EXTRA...] → one JSON line
  local size=$1; shift
  timeout 120 ib_write_bw -d rxe1 $X -s "$size" -n 20000 -F "$@" > /tmp/bw-srv.log 2>&1 & local sp=$!
  sleep 0.7
  timeout 120 ib_write_bw -d rxe0 $X -s "$size" -n 20000 -F "$@" 127.0.0.1 > /tmp/bw-cli.log 2>&1
  wait $sp
  awk -v s="$size" -v x="$*" '/#bytes/{if (getline <= 0) next; printf "{\"kind\":\"ib_write_bw\",\"bytes\":%s,\"extra\":\"%s\",\"mpps\":%s}\n", s, x, $5}' /tmp/bw-cli.log | tail -n 1 >> "$OUT"
}
bw 64
bw 1024
bw 4096
bw 64 --post_list 16
for rt in deno bun; do
  if [ "$rt" = deno ]; then R="node_modules/.bin/deno run -A"; else R="node_modules/.bin/bun"; fi
  $R bench/vm/verbs_profile.ts --calls 1500 --window 16 --client-modes event \
    | grep '^{' | sed 's/^{/{"kind":"verbs_profile",/' >> "$OUT"
done
cat "$OUT"
