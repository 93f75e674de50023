#!/bin/bash
# `make example`: regenerates gen/ with buf (offline: protoc-gen-es from node_modules as a local
# plugin) and checks it matches what is committed, then runs the server on each runtime and the
# client on each runtime against it (same host: the calls go over shared memory). Every server
# is stopped (SIGTERM, SIGKILL after 10 s) and waited for on every way out, a failure included:
# nothing it started outlives it. VERBUS_EXAMPLE_NO_GENERATE=1 skips the buf step (the tests).
set -euo pipefail
cd "$(dirname "$0")"
ROOT=$(cd ../.. && pwd)
DENO=$ROOT/node_modules/.bin/deno BUN=$ROOT/node_modules/.bin/bun
if [ "${VERBUS_EXAMPLE_NO_GENERATE:-}" != 1 ]; then
  "$ROOT/node_modules/.bin/buf" generate
  if [ -n "$(git status --porcelain -- gen)" ]; then
    echo "examples/greeter/gen differs from the committed code after buf generate:" >&2
    git status --short -- gen >&2
    exit 1
  fi
  echo "buf generate: gen/ is up to date"
fi
# The runtime's command line, in the array CMD: started as a plain command (not through a shell
# function, whose background job is a subshell), `$!` is the runtime itself.
runtime() { if [ "$1" = deno ]; then CMD=("$DENO" run -A); else CMD=("$BUN"); fi; }
server=""
log=""
# Whether process $1 has ended (gone, or a zombie waiting for `wait`).
ended() { [ ! -e "/proc/$1" ] || [ "$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null)" = Z ]; }
stop_server() {
  [ -n "$server" ] || return 0
  kill -TERM "$server" 2>/dev/null || true
  # A watchdog SIGKILLs a server that ignores SIGTERM for 10 s; `wait` reaps the server either
  # way. Told to stop, the watchdog ends its own sleep too (nothing of it outlives the script).
  (
    trap 'kill "$nap" 2>/dev/null; exit 0' TERM
    sleep 10 &
    nap=$!
    wait "$nap"
    echo "server $server ignored SIGTERM for 10 s: SIGKILL" >&2
    kill -KILL "$server" 2>/dev/null
  ) &
  local dog=$!
  wait "$server" 2>/dev/null || true
  kill -TERM "$dog" 2>/dev/null || true
  wait "$dog" 2>/dev/null || true
  server=""
}
cleanup() { stop_server; [ -z "$log" ] || rm -f "$log"; }
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
for srv in deno bun; do
  log=$(mktemp)
  runtime "$srv"
  "${CMD[@]}" server.ts 0 >"$log" 2>&1 &
  server=$!
  for _ in $(seq 100); do grep -q 'listening on' "$log" && break; ended "$server" && break; sleep 0.1; done
  port=$(grep -o 'listening on [^ ]*' "$log" | grep -o '[0-9]*$') || { cat "$log"; exit 1; }
  cat "$log"
  for cli in deno bun; do
    runtime "$cli"
    "${CMD[@]}" client.ts "$port" "$cli client of a $srv server"
  done
  stop_server
  rm -f "$log"
  log=""
done
