#!/bin/bash
# scripts/demo.sh — the main job: what this host can do, then a verbus server (Deno) and clients
# (Bun, then Deno) talking over the best path the two share, saying which.
set -euo pipefail
cd "$(dirname "$0")/.."
export NO_COLOR=1
DENO=node_modules/.bin/deno BUN=node_modules/.bin/bun
echo "== verbus doctor (bun) =="
$BUN cli/main.ts doctor
BEST=$($BUN cli/main.ts doctor --json | node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>console.log(JSON.parse(s).fabrics[0]))')
echo
echo ">> the best path this host has: $BEST (a server and a client on one host share memory; RDMA/URMA need devices)"
PORT=${VERBUS_DEMO_PORT:-$((20000 + RANDOM % 20000))}
echo
echo "== verbus serve (deno) on 127.0.0.1:$PORT =="
$DENO run -A cli/main.ts serve --port "$PORT" --object-ttl-ms 500 &
SRV=$!
trap 'kill $SRV 2>/dev/null; wait $SRV 2>/dev/null || true' EXIT
for _ in $(seq 100); do
  (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null && break
  sleep 0.1
done
head -c 200000 /dev/urandom > build/demo-image.bin
echo
echo "== verbus call (bun client → deno server) =="
$BUN cli/main.ts call --port "$PORT" --ping --echo "hello verbus" --put color blue --get color \
  --mget color,missing --profile 42 --large-get big:256k --bigput blob 100000 \
  --image-put demo.png build/demo-image.bin --brpc-echo "hello brpc"
echo
echo "== every path, forced (deno client) =="
for p in eager lazy bulk tcp; do
  $DENO run -A cli/main.ts call --port "$PORT" --force-path "$p" --echo "forced $p"
done
echo
echo "== object lifecycle =="
$BUN cli/main.ts call --port "$PORT" --lifecycle 8 --lifecycle-stale --lifecycle-repeat-reclaim
echo
echo "== async bench: 20000 ECHO 64 B, 32 in flight =="
$BUN cli/main.ts call --port "$PORT" --async-bench 20000 --bench-op echo --async-window 32
$BUN cli/main.ts call --port "$PORT" --async-bench 20000 --bench-op echo --async-window 32 --fabric tcp
echo
echo "== verbus agent (deno): three local processes share its one connection to the server =="
$DENO run -A cli/main.ts agent --connect "127.0.0.1:$PORT" --listen "demo-$PORT" &
AGENT=$!
trap 'kill $AGENT $SRV 2>/dev/null; wait $AGENT $SRV 2>/dev/null || true' EXIT
for _ in $(seq 200); do [ -e "${VERBUS_RUNTIME_DIR:-/tmp/verbus-$(id -u)}/agent-demo-$PORT.json" ] && break; sleep 0.1; done
$BUN examples/agent_client.ts "demo-$PORT" 1 &
P1=$!
$DENO run -A examples/agent_client.ts "demo-$PORT" 2 &
P2=$!
$BUN examples/agent_client.ts "demo-$PORT" 3 &
P3=$!
wait $P1 $P2 $P3
kill -TERM $AGENT && wait $AGENT || true
echo
echo "== stats =="
$DENO run -A cli/main.ts call --port "$PORT" --ping --stats
