#!/bin/bash
# Socket syscalls per call of the TCP path, counted by the kernel (perf's syscall tracepoints):
# the raw TCP echo against verbus TCP as make bench-e2e runs it (verbus serve + verbus call
# --async-bench), ECHO 64 B, W in flight, same runtime on both sides. Needs perf and root.
#
#   bash bench/tcp/syscalls.sh deno|bun raw|verbus [calls=200000] [inflight=32] [checkout=.]
#
# Prints, per process, the counts over the measured run (the client's whole life; the server
# from attach to the client's exit, after a 20,000-call warm-up client) and per call.
set -euo pipefail
RT=$1; SYS=$2; N=${3:-200000}; W=${4:-32}; ROOT=$(cd "${5:-.}" && pwd)
cd "$ROOT"
if [ "$RT" = deno ]; then R="node_modules/.bin/deno run -A"; else R="node_modules/.bin/bun"; fi
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
EV=syscalls:sys_enter_sendto,syscalls:sys_enter_recvfrom,syscalls:sys_enter_write,syscalls:sys_enter_read,syscalls:sys_enter_writev
if [ "$SYS" = verbus ]; then
  $R cli/main.ts serve --port 0 --json > "$TMP/serve" 2>&1 &
  SP=$!
  for _ in $(seq 100); do grep -q '"port"' "$TMP/serve" && break; sleep 0.1; done
  PORT=$(grep -o '"port":[0-9]*' "$TMP/serve" | head -1 | cut -d: -f2)
  client() {
    $R cli/main.ts call --port "$PORT" --json --fabric tcp --async-bench "$1" --bench-op echo \
      --bench-bytes 64 --async-window "$W" --async-warmup 0 --timeout-ms 30000
  }
else
  $R bench/e2e/baselines/raw_tcp.ts --serve --port 0 > "$TMP/serve" 2>&1 &
  SP=$!
  for _ in $(seq 100); do grep -q PORT "$TMP/serve" && break; sleep 0.1; done
  PORT=$(grep -o 'PORT [0-9]*' "$TMP/serve" | cut -d' ' -f2)
  client() {
    $R bench/e2e/baselines/raw_tcp.ts --connect "127.0.0.1:$PORT" --payload 64 --inflight "$W" \
      --calls "$1" --warmup 0
  }
fi
client 20000 > /dev/null
perf stat -x, -e "$EV" -p "$SP" -o "$TMP/srv" &
PS=$!
sleep 0.3
perf stat -x, -e "$EV" -o "$TMP/cli" -- bash -c "$(declare -f client); R='$R'; PORT=$PORT; W=$W; client $N" \
  | grep -o '"qps":[0-9]*' || true
kill -INT $PS; wait $PS || true
kill $SP; wait $SP 2>/dev/null || true
for side in cli srv; do
  echo "$([ $side = cli ] && echo client || echo server) ($RT $SYS, $N calls, $W in flight):" \
    "$(grep -v '^#' "$TMP/$side" | awk -F, -v n="$N" 'NF>2{sub("syscalls:sys_enter_","",$3); printf "%s %s (%.3f/call) ", $3, $1, $1/n}')"
done
