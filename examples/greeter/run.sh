#!/bin/bash
# `make example`: regenerates gen/ with buf (offline: protoc-gen-es from node_modules as a local
# plugin) and checks it matches what is committed, then runs the server on each runtime and the
# client on each runtime against it (same host: the calls go over shared memory).
set -euo pipefail
cd "$(dirname "$0")"
ROOT=$(cd ../.. && pwd)
DENO=$ROOT/node_modules/.bin/deno BUN=$ROOT/node_modules/.bin/bun
"$ROOT/node_modules/.bin/buf" generate
if [ -n "$(git status --porcelain -- gen)" ]; then
  echo "examples/greeter/gen differs from the committed code after buf generate:" >&2
  git status --short -- gen >&2
  exit 1
fi
echo "buf generate: gen/ is up to date"
run() { if [ "$1" = deno ]; then "$DENO" run -A "${@:2}"; else "$BUN" "${@:2}"; fi; }
for srv in deno bun; do
  log=$(mktemp)
  run "$srv" server.ts 0 >"$log" 2>&1 &
  pid=$!
  for _ in $(seq 100); do grep -q 'listening on' "$log" && break; sleep 0.1; done
  port=$(grep -o 'listening on .*' "$log" | grep -o '[0-9]*$') || { cat "$log"; kill $pid; exit 1; }
  cat "$log"
  for cli in deno bun; do run "$cli" client.ts "$port" "$cli client of a $srv server"; done
  kill -TERM $pid; wait $pid || true
  rm -f "$log"
done
