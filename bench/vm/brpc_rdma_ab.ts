/**
 * A/B of brpc's RDMA mode between two checkouts in ONE client process, INSIDE the Soft-RoCE VM:
 *
 *   SR_SHARE=/work ../shared/softroce/run-in-vm.sh \
 *     'cd /work/main && node_modules/.bin/deno run -A bench/vm/brpc_rdma_ab.ts --a /work/base'
 *
 * The client loads checkout A's `rpc/tcp/channel.ts` beside this tree's; each side's server is its own
 * tree's `bench/vm/brpc_bench.ts --serve` (rxe1). Modes, in alternating order each round: A's
 * brpc-rdma channel to A's server, this tree's (B) to B's server, and B's TCP channel to B's
 * server (the yardstick). verbus.Demo/Echo 64 B; serial RTT (median µs), calls/s at 32 in flight,
 * CPU µs per call of the client process and of the server process. The VM is emulated and shared:
 * the ratios of one round are what count, so each round's B ÷ A and B ÷ TCP are kept and their
 * medians reported. Writes bench/results/brpc-rdma-ab-vm-<runtime>.{md,json}.
 * @module
 */
import { spawn } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { RUNTIME } from "../../ffi/runtime.ts";
import { prepareBrpcRdma } from "../../rpc/brpc/brpc_rdma.ts";
import { connect as connectChannel } from "../../rpc/tcp/channel.ts";
import { ProgressEngine } from "../../rpc/session/engine/engine.ts";
import { type Call, flight, type FlightResult, median, serial } from "./brpc_bench_calls.ts";
import { ROOT, spawnServerRole } from "./vm_common.ts";

// deno-lint-ignore no-explicit-any
const g = globalThis as any;
const args: string[] = RUNTIME === "deno" ? g.Deno.args : g.process.argv.slice(2);
const argOf = (name: string, dflt: string) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? args[i + 1] : dflt;
};
const A = resolve(argOf("a", "/work/w4_base"));
const ROUNDS = Number(argOf("rounds", "5")), SERIAL = 200, FLIGHT = 32, BATCH = 3000;
const SERVER = "10.77.0.2", CLIENT = "10.77.0.1";

type Server = { port: number; pid: number; kill(): void };

/** Checkout A's server role (its own brpc_bench.ts --serve), as vm_common's for this tree. */
function spawnA(): Promise<Server> {
  const bin: string = RUNTIME === "deno" ? g.Deno.execPath() : g.process.execPath;
  const path = join(A, "bench/vm/brpc_bench.ts");
  const argv = RUNTIME === "deno" ? ["run", "-A", "--config", join(A, "deno.json"), path] : [path];
  const p = spawn(bin, [...argv, "--serve"], { cwd: A, stdio: ["ignore", "pipe", "inherit"] });
  let out = "";
  return new Promise((res, rej) => {
    const timer = setTimeout(() => rej(new Error(`A's server did not start: ${out}`)), 300_000);
    p.stdout!.on("data", (b: Uint8Array) => {
      out += new TextDecoder().decode(b);
      const m = /listening on (\d+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        res({ port: Number(m[1]), pid: p.pid!, kill: () => p.kill("SIGKILL") });
      }
    });
  });
}

/** `--no-spin`: B's engines (this client's and B's server's) sleep as soon as a turn finds nothing. */
const NO_SPIN = args.includes("--no-spin");

async function main(): Promise<void> {
  if (NO_SPIN) {
    g.process.env.VERBUS_BENCH_NO_SPIN = "1";
    (await ProgressEngine.forThread()).configure({ spinUs: 0, idleAfterMs: 0 });
  }
  const aMod = await import(join(A, "rpc/tcp/channel.ts"));
  const [srvA, srvB] = [
    await spawnA(),
    await spawnServerRole("bench/vm/brpc_bench.ts", ["--serve"]),
  ];
  const rdma = { device: "rxe0", handshakeTimeoutMs: 60_000 };
  let t0 = performance.now();
  const chA = await aMod.connect(`${SERVER}:${srvA.port}`, { brpcRdma: rdma, timeoutMs: 60_000 });
  const aFirstMs = performance.now() - t0;
  t0 = performance.now();
  await prepareBrpcRdma(rdma, CLIENT);
  const bOpenMs = performance.now() - t0;
  t0 = performance.now();
  const chB = await connectChannel(`${SERVER}:${srvB.port}`, { brpcRdma: rdma, timeoutMs: 60_000 });
  const bFirstMs = performance.now() - t0;
  const tcp = await connectChannel(`${SERVER}:${srvB.port}`, { timeoutMs: 60_000 });
  if (chA.transport !== "brpc-rdma" || chB.transport !== "brpc-rdma") {
    throw new Error(`a brpc-rdma channel fell back: A ${chA.transport}, B ${chB.transport}`);
  }
  const modes: Record<string, { call: Call; pid: number }> = {
    "A brpc-rdma": { call: (r) => chA.call("verbus.Demo", "Echo", r), pid: srvA.pid },
    "B brpc-rdma": { call: (r) => chB.call("verbus.Demo", "Echo", r), pid: srvB.pid },
    "B tcp": { call: (r) => tcp.call("verbus.Demo", "Echo", r), pid: srvB.pid },
  };
  const names = Object.keys(modes);
  for (const n of names) await serial(modes[n].call, SERIAL); // warm-up
  const lat: Record<string, number[]> = {}, fl: Record<string, FlightResult[]> = {};
  const bOverA: number[] = [], bOverTcp: number[] = [], aOverTcp: number[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    const rate: Record<string, number> = {};
    for (let k = 0; k < names.length; k++) {
      const n = names[(round + k) % names.length];
      (lat[n] ??= []).push(await serial(modes[n].call, SERIAL));
      const f = await flight(modes[n].call, FLIGHT, BATCH, modes[n].pid);
      (fl[n] ??= []).push(f);
      rate[n] = f.callsPerS;
    }
    bOverA.push(rate["B brpc-rdma"] / rate["A brpc-rdma"]);
    bOverTcp.push(rate["B brpc-rdma"] / rate["B tcp"]);
    aOverTcp.push(rate["A brpc-rdma"] / rate["B tcp"]);
    console.error(
      `round ${round + 1}: ${names.map((n) => `${n} ${Math.round(rate[n])}/s`).join(", ")}`,
    );
  }
  await chA.close();
  await chB.close();
  await tcp.close();
  srvA.kill();
  srvB.kill();
  const r1 = (x: number) => Math.round(x * 10) / 10;
  const rows = names.map((n) => ({
    mode: n,
    rtt_us: Math.round(median(lat[n])),
    calls_per_s: Math.round(median(fl[n].map((f) => f.callsPerS))),
    cpu_us_per_call_client: r1(median(fl[n].map((f) => f.clientCpu))),
    cpu_us_per_call_server: r1(median(fl[n].map((f) => f.serverCpu))),
    client_hub_sleeps_per_call: +median(fl[n].map((f) => f.sleeps)).toFixed(3),
  }));
  const r2 = (x: number) => +x.toFixed(2);
  const result = {
    runtime: RUNTIME,
    a: A,
    b: ROOT,
    rounds: ROUNDS,
    rows,
    per_round: {
      b_over_a: bOverA.map(r2),
      b_over_tcp: bOverTcp.map(r2),
      a_over_tcp: aOverTcp.map(r2),
    },
    medians: {
      b_over_a: r2(median(bOverA)),
      b_over_tcp: r2(median(bOverTcp)),
      a_over_tcp: r2(median(aOverTcp)),
    },
    firstConnection: {
      aMs: Math.round(aFirstMs),
      bDeviceOpenMs: Math.round(bOpenMs),
      bMs: Math.round(bFirstMs),
    },
  };
  const md = [
    `# brpc's RDMA mode, A/B in one client process (${RUNTIME}, Soft-RoCE VM${
      NO_SPIN ? ", B's engines without spin" : ""
    })`,
    "",
    `A: ${A} (before); B: ${ROOT} (after). verbus.Demo/Echo 64 B, rxe0 -> rxe1, qemu TCG (emulated,`,
    `shared host: only the ratios of one round mean anything). ${ROUNDS} rounds, modes alternating;`,
    `serial ${SERIAL} calls, in flight ${BATCH} calls ${FLIGHT} at a time. Each side's own server process.`,
    "",
    "| mode | RTT µs | calls/s, 32 in flight | CPU µs/call client | CPU µs/call server | client hub sleeps/call |",
    "|---|---:|---:|---:|---:|---:|",
    ...rows.map((r) =>
      `| ${r.mode} | ${r.rtt_us} | ${r.calls_per_s} | ${r.cpu_us_per_call_client} | ${r.cpu_us_per_call_server} | ${r.client_hub_sleeps_per_call} |`
    ),
    "",
    `Per round, calls/s at 32 in flight: B/A ${
      bOverA.map(r2).join(", ")
    } (median ×${result.medians.b_over_a});`,
    `B/TCP ${bOverTcp.map(r2).join(", ")} (median ×${result.medians.b_over_tcp}); A/TCP ${
      aOverTcp.map(r2).join(", ")
    } (median ×${result.medians.a_over_tcp}).`,
    "",
    `First connection: A ${result.firstConnection.aMs} ms (both sides open the device on it); B: device`,
    `opened ahead by prepareBrpcRdma in ${result.firstConnection.bDeviceOpenMs} ms (QPs prepared), then the first`,
    `connection ${result.firstConnection.bMs} ms (TCP connect + handshake; B's server opened its device at serve()).`,
    "",
  ].join("\n");
  mkdirSync(join(ROOT, "bench/results"), { recursive: true });
  const tag = NO_SPIN ? "-nospin" : "";
  writeFileSync(
    join(ROOT, `bench/results/brpc-rdma-ab-vm-${RUNTIME}${tag}.json`),
    JSON.stringify(result, null, 2) + "\n",
  );
  writeFileSync(join(ROOT, `bench/results/brpc-rdma-ab-vm-${RUNTIME}${tag}.md`), md);
  console.log(md);
  g.process.exit(0);
}

await main();
