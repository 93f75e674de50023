#!/bin/bash
# bench/vm/verbs_bench.sh — runs INSIDE the Soft-RoCE VM:
#   SR_SHARE=$PWD ../shared/softroce/run-in-vm.sh 'bash bench/vm/verbs_bench.sh [deno|bun|both]'
# 1. perftest in this VM session, rxe0 (10.77.0.1) → rxe1 (10.77.0.2), busy-polling both ends:
#    ib_write_lat / ib_send_lat 64 B (one-way: the table doubles them), ib_read_lat 64 KiB
#    (a READ is already a round trip); results in build/bench/perftest.json.
# 2. bench/vm/verbs_bench.ts on each runtime: verbus over verbs (poll and event mode) and over
#    its own TCP path against the same server, then a table of ratios.
# 3. With VERBS_BENCH_BEFORE=/path/to/another/checkout, that checkout's verbs_bench.ts runs too,
#    alternating with this tree's on each runtime (same perftest), for before/after ratios.
# 4. bench/vm/vm_report.ts writes issue 11's VM table: bench/results/vm.md and vm.json.
# The VM is emulated (qemu TCG): only ratios mean anything.
set -u
cd "$(dirname "$0")/../.."
export NO_COLOR=1
mkdir -p build/bench
X="-x ${SR_GID_INDEX:-1}"
perf() { # perf NAME SIZE TOOL → prints "t_typical t_avg" (µs)
  local tool=$1 size=$2
  timeout 60 $tool -d rxe1 $X -s "$size" -n 5000 -F > /tmp/pt-srv.log 2>&1 & local sp=$!
  sleep 0.7
  timeout 60 $tool -d rxe0 $X -s "$size" -n 5000 -F 127.0.0.1 > /tmp/pt-cli.log 2>&1
  wait $sp
  awk '/#bytes/{h=$0; if (getline <= 0) next; if (h ~ /t_typical/) print $5, $6}' /tmp/pt-cli.log | tail -n 1
}
# (no process substitution: the guest has no /dev/fd)
perf ib_write_lat 64 > /tmp/pt.w; read wt wa < /tmp/pt.w
perf ib_send_lat 64 > /tmp/pt.s; read st sa < /tmp/pt.s
perf ib_read_lat 65536 > /tmp/pt.r; read rt ra < /tmp/pt.r
cat > build/bench/perftest.json <<JSON
{"write_lat_64": {"typical": ${wt:-null}, "avg": ${wa:-null}},
 "send_lat_64": {"typical": ${st:-null}, "avg": ${sa:-null}},
 "read_lat_64k": {"typical": ${rt:-null}, "avg": ${ra:-null}}}
JSON
echo "perftest (µs, one-way for write/send, full READ for read):"; cat build/bench/perftest.json
which=${1:-both}
PT=$PWD/build/bench/perftest.json
BEFORE=${VERBS_BENCH_BEFORE:-}
rc=0
run() { # run RUNTIME TREE
  local rt=$1 tree=$2
  if [ "$rt" = deno ]; then
    (cd "$tree" && "$OLDPWD/node_modules/.bin/deno" run -A --config deno.json bench/vm/verbs_bench.ts --perftest "$PT")
  else
    (cd "$tree" && "$OLDPWD/node_modules/.bin/bun" bench/vm/verbs_bench.ts --perftest "$PT")
  fi
}
rm -f build/bench/before-verbs-*.json build/bench/verbs-*.json # (a failed run reports nothing stale)
for rt in deno bun; do
  [ "$which" = "$rt" ] || [ "$which" = both ] || continue
  if [ -n "$BEFORE" ]; then
    echo "=== before ($BEFORE) on $rt ==="
    run "$rt" "$BEFORE" && cp "$BEFORE/build/bench/verbs-$rt.json" "build/bench/before-verbs-$rt.json" || rc=1
  fi
  echo "=== after (this tree) on $rt ==="
  run "$rt" "$PWD" || rc=1
done
node_modules/.bin/deno run -A bench/vm/vm_report.ts || rc=1
exit $rc
