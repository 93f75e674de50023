#!/bin/bash
# bench/vm/brpc_interop.sh — runs INSIDE the Soft-RoCE VM against a real brpc built with RDMA:
#   BRPC_PERF=/path/to/example/rdma_performance/bld [VERBUS_RT=bun] \
#   SR_SHARE=$PWD ../shared/softroce/run-in-vm.sh 'bash bench/vm/brpc_interop.sh'
# 1. brpc's rdma_performance server (-use_rdma=true, rxe1) called by `verbus call --brpc-rdma`
#    (rxe0): test.PerfTestService/Test with an echoed attachment, and a plain TCP call.
# 2. `verbus serve --brpc-rdma` (rxe1) measured by brpc's rdma_performance client (rxe0).
# brpc's memory pool and prepared QPs are shrunk for the small VM. Exit 0 only if all worked.
set -u
cd "$(dirname "$0")/../.."
export NO_COLOR=1
B=${BRPC_PERF:?set BRPC_PERF to the rdma_performance build directory}
# VERBUS_RT=bun runs verbus on Bun (default Deno).
if [ "${VERBUS_RT:-deno}" = bun ]; then V="node_modules/.bin/bun cli/main.ts"
else V="node_modules/.bin/deno run -A cli/main.ts"; fi
SMALL="-rdma_memory_pool_initial_size_mb=64 -rdma_memory_pool_increase_size_mb=64 -rdma_prepared_qp_cnt=4"
rc=0
part=${BRPC_INTEROP_PART:-all}
if [ "$part" != 2 ]; then
echo "=== 1. brpc server, verbus client ==="
"$B/server" -port=8002 -use_rdma=true -rdma_device=rxe1 $SMALL -rdma_trace_verbose=true \
  > /tmp/brpc-server.log 2>&1 &
sp=$!
sleep 3
$V call --host 10.77.0.2 --port 8002 --brpc-rdma --rdma-device rxe0 \
  --method test.PerfTestService/Test --body-hex 0801 --attachment-bytes 20000 --json || rc=1
$V call --host 10.77.0.2 --port 8002 --brpc-rdma --rdma-device rxe0 \
  --method test.PerfTestService/Test --body-hex 0800 --json || rc=1
kill $sp; wait $sp 2>/dev/null
grep -i "rdma\|handshake" /tmp/brpc-server.log | head -20
fi
echo "=== 2. verbus server, brpc client ==="
$V serve --host 10.77.0.2 --port 8003 --brpc-rdma --rdma-device rxe1 --fabric none > /tmp/verbus-serve.log 2>&1 &
vp=$!
for _ in $(seq 1 240); do grep -q "listening on" /tmp/verbus-serve.log 2>/dev/null && break; sleep 1; done
timeout 60 "$B/client" -servers=10.77.0.2:8003 -use_rdma=true -rdma_device=rxe0 $SMALL \
  -attachment_size=4096 -echo_attachment=true -queue_depth=4 -test_seconds=4 -thread_num=1 \
  -dummy_port=8011 -rpc_timeout_ms=20000 -rdma_trace_verbose=true > /tmp/brpc-client.log 2>&1 || rc=1
tail -25 /tmp/brpc-client.log
kill $vp; wait $vp 2>/dev/null
cat /tmp/verbus-serve.log
exit $rc
