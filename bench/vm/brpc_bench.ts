/**
 * brpc's RDMA mode against verbus's own verbs fabric and TCP, INSIDE the Soft-RoCE VM:
 *
 *   SR_SHARE=$PWD ../shared/softroce/run-in-vm.sh 'bash bench/vm/brpc_bench.sh'
 *
 * One server process (same runtime, demo service) on rxe1 serves all three: the verbs fabric
 * (event mode), brpc's RDMA mode (`brpcRdma`, device rxe1) and plain TCP. The client runs, in
 * alternating rounds (A/B/C, then B/C/A, …), verbus.Demo/Echo of 64 B: serial round trips (median
 * µs) and 32 in flight (calls/s), over a brpc-rdma channel (rxe0), a verbus client on the verbs
 * fabric (bound to rxe0) and a TCP channel. The VM is emulated (qemu TCG): only the ratios mean
 * anything. Writes bench/results/brpc-rdma-vm-<runtime>.{md,json}.
 * @module
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { RUNTIME } from "../../ffi/runtime.ts";
import { prepareBrpcRdma } from "../../rpc/brpc/brpc_rdma.ts";
import { connect as connectChannel } from "../../rpc/tcp/channel.ts";
import { connect } from "../../rpc/client/client.ts";
import { demoService } from "../../examples/demo/service.ts";
import { serve } from "../../rpc/server/server.ts";
import { ROOT, spawnServerRole, VM_BENCH_REGION } from "./vm_common.ts";
import { type Call, flight, median, serial } from "./brpc_bench_calls.ts";

// deno-lint-ignore no-explicit-any
const g = globalThis as any;
const args: string[] = RUNTIME === "deno" ? g.Deno.args : g.process.argv.slice(2);
const SERVER = "10.77.0.2", CLIENT = "10.77.0.1";
const ROUNDS = 5, SERIAL = 400, FLIGHT = 32, BATCH = 3000;

let serverPid = 0;

async function main(): Promise<void> {
  const srv = await spawnServerRole("bench/vm/brpc_bench.ts", ["--serve"]);
  serverPid = srv.pid;
  const addr = `${SERVER}:${srv.port}`;
  // The device opened first (as a client would ahead of its first connection), then the first
  // handshake timed alone: the TCP connect, the hellos, one QP brought up on each side.
  const clientRdma = { device: "rxe0", handshakeTimeoutMs: 30_000 };
  let t0 = performance.now();
  await prepareBrpcRdma(clientRdma, CLIENT);
  const deviceOpenMs = performance.now() - t0;
  t0 = performance.now();
  const brpc = await connectChannel(addr, { brpcRdma: clientRdma, timeoutMs: 30_000 });
  const firstHandshakeMs = performance.now() - t0;
  if (brpc.transport !== "brpc-rdma") throw new Error("the brpc-rdma channel fell back to TCP");
  const verbs = await connect(addr, {
    fabric: "verbs",
    providerOptions: { verbs: { sourceAddr: CLIENT, mode: "event" } },
    timeoutMs: 30_000,
  });
  if (verbs.fabric !== "verbs") throw new Error(`verbus client is on ${verbs.fabric}`);
  const tcp = await connectChannel(addr, { timeoutMs: 30_000 });
  const modes: Record<string, Call> = {
    "brpc-rdma": (r) => brpc.call("verbus.Demo", "Echo", r),
    "verbs fabric": (r) => verbs.call("verbus.Demo", "Echo", r),
    tcp: (r) => tcp.call("verbus.Demo", "Echo", r),
  };
  const names = Object.keys(modes);
  const lat: Record<string, number[]> = {}, rate: Record<string, number[]> = {};
  const cpuC: Record<string, number[]> = {}, cpuS: Record<string, number[]> = {};
  const sleeps: Record<string, number[]> = {};
  for (const n of names) await serial(modes[n], SERIAL); // warm-up
  for (let round = 0; round < ROUNDS; round++) {
    for (let k = 0; k < names.length; k++) {
      const n = names[(round + k) % names.length];
      (lat[n] ??= []).push(await serial(modes[n], SERIAL));
      const f = await flight(modes[n], FLIGHT, BATCH, serverPid);
      (rate[n] ??= []).push(f.callsPerS);
      (cpuC[n] ??= []).push(f.clientCpu);
      (cpuS[n] ??= []).push(f.serverCpu);
      (sleeps[n] ??= []).push(f.sleeps);
    }
  }
  await brpc.close();
  await verbs.close();
  await tcp.close();
  srv.kill();
  const rows = names.map((n) => ({
    mode: n,
    rtt_us: Math.round(median(lat[n])),
    calls_per_s: Math.round(median(rate[n])),
    cpu_us_per_call_client: +median(cpuC[n]).toFixed(1),
    cpu_us_per_call_server: +median(cpuS[n]).toFixed(1),
    client_hub_sleeps_per_call: +median(sleeps[n]).toFixed(3),
  }));
  const t = rows.find((r) => r.mode === "tcp")!;
  const b = rows.find((r) => r.mode === "brpc-rdma")!;
  const v = rows.find((r) => r.mode === "verbs fabric")!;
  const result = {
    runtime: RUNTIME,
    what: "verbus.Demo/Echo 64 B, Soft-RoCE rxe0 -> rxe1 in a qemu TCG VM (emulated: ratios only)",
    rounds: ROUNDS,
    serialCalls: SERIAL,
    inFlight: FLIGHT,
    flightCalls: BATCH,
    rows,
    deviceOpenMs: Math.round(deviceOpenMs),
    firstHandshakeMs: Math.round(firstHandshakeMs),
    ratios: {
      rtt_brpc_over_tcp: +(b.rtt_us / t.rtt_us).toFixed(2),
      rtt_brpc_over_verbs: +(b.rtt_us / v.rtt_us).toFixed(2),
      rate_brpc_over_tcp: +(b.calls_per_s / t.calls_per_s).toFixed(2),
      rate_brpc_over_verbs: +(b.calls_per_s / v.calls_per_s).toFixed(2),
    },
  };
  const md = [
    `# brpc's RDMA mode vs the verbs fabric vs TCP (${RUNTIME}, Soft-RoCE VM)`,
    "",
    `${result.what}; ${ROUNDS} alternating rounds, medians. Serial: ${SERIAL} calls one at a time;`,
    `in flight: ${BATCH} calls, ${FLIGHT} at a time. One server process serves all three modes.`,
    "",
    "| mode | RTT µs (median) | calls/s, 32 in flight | CPU µs/call client | CPU µs/call server | client hub sleeps/call |",
    "|---|---:|---:|---:|---:|---:|",
    ...rows.map((r) =>
      `| ${r.mode} | ${r.rtt_us} | ${r.calls_per_s} | ${r.cpu_us_per_call_client} | ${r.cpu_us_per_call_server} | ${r.client_hub_sleeps_per_call} |`
    ),
    "",
    `brpc-rdma / tcp: RTT ×${result.ratios.rtt_brpc_over_tcp}, calls/s ×${result.ratios.rate_brpc_over_tcp};`,
    `brpc-rdma / verbs fabric: RTT ×${result.ratios.rtt_brpc_over_verbs}, calls/s ×${result.ratios.rate_brpc_over_verbs}.`,
    "",
    `Client device open (libibverbs, rxe0's hub, GID, preparedQps QPs): ${result.deviceOpenMs} ms;`,
    `then the first brpc-rdma connection (TCP connect + handshake, the server's device opened at serve()): ${result.firstHandshakeMs} ms.`,
    "",
    "Made by `bash bench/vm/brpc_bench.sh` in the Soft-RoCE VM. Emulated hardware: compare ratios only.",
    "",
  ].join("\n");
  mkdirSync(join(ROOT, "bench/results"), { recursive: true });
  writeFileSync(
    join(ROOT, `bench/results/brpc-rdma-vm-${RUNTIME}.json`),
    JSON.stringify(result, null, 2) + "\n",
  );
  writeFileSync(join(ROOT, `bench/results/brpc-rdma-vm-${RUNTIME}.md`), md);
  console.log(md);
  g.process.exit(0);
}

if (args.includes("--serve")) {
  const server = await serve({
    port: 0,
    host: SERVER,
    services: demoService({}),
    fabric: {
      fabrics: ["verbs"],
      providerOptions: { verbs: { addr: SERVER, port: 0, mode: "event" } },
      region: VM_BENCH_REGION,
      // VERBUS_BENCH_NO_SPIN=1 (brpc_rdma_ab.ts --no-spin): the engine sleeps as soon as a turn finds nothing.
      progress: g.process.env.VERBUS_BENCH_NO_SPIN === "1" ? { spinUs: 0, idleAfterMs: 0 } : {},
    },
    brpcRdma: { device: "rxe1", handshakeTimeoutMs: 30_000 },
    logger: { warn: (m) => console.error(`bench server: ${m}`) },
  });
  console.log(`listening on ${server.port}`);
} else {
  await main();
}
