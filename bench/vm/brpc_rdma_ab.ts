/**
 * A/B(/C…) of brpc's RDMA mode between checkouts in ONE client process, INSIDE the Soft-RoCE VM:
 *
 *   SR_SHARE=/work ../shared/softroce/run-in-vm.sh 'cd /work/main && \
 *     node_modules/.bin/deno run -A bench/vm/brpc_rdma_ab.ts --side A=/work/base --side B=/work/main'
 *
 * The client loads each side's `channel.ts` (at its path then or now); each side's server is its
 * own tree's `bench/vm/brpc_bench.ts --serve` (rxe1) run through `brpc_ab_serve.ts`, which
 * counts its native calls. Modes, in rotating order each round: every side's brpc-rdma channel
 * to its own server, and the last side's TCP channel to its server (the yardstick). verbus.Demo/Echo
 * 64 B; serial RTT (median µs), calls/s at 32 in flight, and per call on both processes: CPU
 * (user, kernel), context switches, CQ polls (empty), completions, post_send / post_recv calls,
 * CQ arms and channel waits, sched_yields, engine turns (`brpc_ab_measure.ts`). The VM is
 * emulated and shared: the ratios of one round are what count, so each round's ratios are kept
 * and their medians reported. Writes bench/results/brpc-rdma-ab-vm-<runtime><--tag>.{md,json}.
 * Without --side: A=/work/w4_base, B=this tree (as before). `--no-spin`: the last side's engines
 * (client and server) sleep as soon as a turn finds nothing.
 * @module
 */
import { spawn } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { RUNTIME } from "../../ffi/runtime.ts";
import { type Call, median, serial } from "./brpc_bench_calls.ts";
import { type Measured, measuredFlight, type PerCall } from "./brpc_ab_measure.ts";
import { instrument, type NativeCounts } from "./ffi_counts.ts";
import { ROOT } from "./vm_common.ts";

// deno-lint-ignore no-explicit-any
const g = globalThis as any;
const args: string[] = RUNTIME === "deno" ? g.Deno.args : g.process.argv.slice(2);
const argOf = (name: string, dflt: string) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? args[i + 1] : dflt;
};
const sideArgs = args.flatMap((a, i) => (a === "--side" ? [args[i + 1]] : []));
const SIDES = (sideArgs.length > 0 ? sideArgs : ["A=/work/w4_base", `B=${ROOT}`]).map((s) => {
  const [name, dir] = s.split("=");
  return { name, dir: resolve(dir) };
});
const ROUNDS = Number(argOf("rounds", "5")), SERIAL = Number(argOf("serial", "200"));
const FLIGHT = 32, BATCH = Number(argOf("calls", "3000"));
const TAG = argOf("tag", "");
const NO_SPIN = args.includes("--no-spin");
const SERVER = "10.77.0.2", CLIENT = "10.77.0.1";

type Server = { port: number; pid: number; kill(): void };

/** A side's server role through brpc_ab_serve.ts (counts its native calls). */
function spawnServer(dir: string, env: Record<string, string>): Promise<Server> {
  const bin: string = RUNTIME === "deno" ? g.Deno.execPath() : g.process.execPath;
  const path = join(ROOT, "bench/vm/brpc_ab_serve.ts");
  const argv = RUNTIME === "deno"
    ? ["run", "-A", "--config", join(ROOT, "deno.json"), path]
    : [path];
  const p = spawn(bin, [...argv, "--root", dir, "--serve"], {
    cwd: dir,
    stdio: ["ignore", "pipe", "inherit"],
    env: { ...g.process.env, ...env },
  });
  let out = "";
  return new Promise((res, rej) => {
    const timer = setTimeout(
      () => rej(new Error(`${dir}'s server did not start: ${out}`)),
      300_000,
    );
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

/** The first of `paths` (relative to `dir`) that imports. */
async function importFirst(dir: string, paths: string[]) {
  for (const p of paths) {
    try {
      return await import(join(dir, p));
    } catch (e) {
      if (p === paths[paths.length - 1]) throw e;
    }
  }
}

interface Mode {
  call: Call;
  serverPid: number;
  counts: NativeCounts | null;
  loop: (() => Record<string, number>) | null;
}

async function main(): Promise<void> {
  const rdma = { device: "rxe0", handshakeTimeoutMs: 60_000 };
  const modes: Record<string, Mode> = {};
  const first: Record<string, number> = {};
  const closers: (() => Promise<unknown> | void)[] = [];
  let tcpMode: Mode | null = null;
  for (let i = 0; i < SIDES.length; i++) {
    const { name, dir } = SIDES[i];
    const last = i === SIDES.length - 1;
    const counts = await instrument(dir);
    const chMod = await importFirst(dir, ["rpc/tcp/channel.ts", "rpc/channel.ts"]);
    const engMod = await importFirst(dir, [
      "rpc/session/engine/engine.ts",
      "rpc/session/engine.ts",
    ]);
    const engine = await engMod.ProgressEngine.forThread();
    if (last && NO_SPIN) engine.configure({ spinUs: 0, idleAfterMs: 0 });
    const srv = await spawnServer(dir, last && NO_SPIN ? { VERBUS_BENCH_NO_SPIN: "1" } : {});
    closers.push(() => srv.kill());
    const prep = await importFirst(dir, ["rpc/brpc/brpc_rdma.ts", "rpc/brpc_rdma.ts"]);
    if (typeof prep.prepareBrpcRdma === "function") {
      const t0 = performance.now();
      await prep.prepareBrpcRdma(rdma, CLIENT);
      first[`${name} device open ms`] = Math.round(performance.now() - t0);
    }
    const t0 = performance.now();
    const ch = await chMod.connect(`${SERVER}:${srv.port}`, { brpcRdma: rdma, timeoutMs: 60_000 });
    first[`${name} first connection ms`] = Math.round(performance.now() - t0);
    if (ch.transport !== "brpc-rdma") throw new Error(`${name}'s brpc-rdma channel fell back`);
    closers.unshift(() => ch.close());
    // A second connection (its code warm, a prepared QP taken) and a plain TCP channel's connect:
    // what the first one paid for being first, and what any connect costs here.
    let t1 = performance.now();
    const ch2 = await chMod.connect(`${SERVER}:${srv.port}`, { brpcRdma: rdma, timeoutMs: 60_000 });
    first[`${name} second connection ms`] = Math.round(performance.now() - t1);
    await ch2.close();
    t1 = performance.now();
    const tcp1 = await chMod.connect(`${SERVER}:${srv.port}`, { timeoutMs: 60_000 });
    first[`${name} tcp channel connect ms`] = Math.round(performance.now() - t1);
    await tcp1.call("verbus.Demo", "Echo", new Uint8Array(8)); // a baidu_std peer, not a silent one
    await tcp1.close();
    const loop = () => engine.loopCounters as Record<string, number>;
    modes[`${name} brpc-rdma`] = {
      call: (r) => ch.call("verbus.Demo", "Echo", r),
      serverPid: srv.pid,
      counts,
      loop,
    };
    if (last) {
      const tcp = await chMod.connect(`${SERVER}:${srv.port}`, { timeoutMs: 60_000 });
      closers.unshift(() => tcp.close());
      tcpMode = {
        call: (r) => tcp.call("verbus.Demo", "Echo", r),
        serverPid: srv.pid,
        counts: null,
        loop: null,
      };
    }
  }
  modes[`${SIDES[SIDES.length - 1].name} tcp`] = tcpMode!;
  const names = Object.keys(modes);
  const tcpName = names[names.length - 1];
  for (const n of names) await serial(modes[n].call, SERIAL); // warm-up
  const lat: Record<string, number[]> = {}, fl: Record<string, Measured[]> = {};
  const ratios: Record<string, number[]> = {};
  for (let round = 0; round < ROUNDS; round++) {
    const rate: Record<string, number> = {};
    for (let k = 0; k < names.length; k++) {
      const n = names[(round + k) % names.length];
      (lat[n] ??= []).push(await serial(modes[n].call, SERIAL));
      const m = await measuredFlight(modes[n].call, FLIGHT, BATCH, {
        ...modes[n],
        serverPid: modes[n].serverPid,
      });
      (fl[n] ??= []).push(m);
      rate[n] = m.callsPerS;
    }
    for (const n of names.slice(0, -1)) (ratios[`${n} / tcp`] ??= []).push(rate[n] / rate[tcpName]);
    if (names.length > 2) {
      (ratios[`${names[names.length - 2]} / ${names[0]}`] ??= []).push(
        rate[names[names.length - 2]] / rate[names[0]],
      );
    }
    console.error(
      `round ${round + 1}: ${names.map((n) => `${n} ${Math.round(rate[n])}/s`).join(", ")}`,
    );
  }
  for (const c of closers) await c();
  report(names, lat, fl, ratios, first);
  g.process.exit(0);
}

const r1 = (x: number) => Math.round(x * 10) / 10;
const r2 = (x: number) => +x.toFixed(2);

/** Field-wise medians over rounds of one process's work per call. */
function medianPerCall(xs: PerCall[]): Record<string, number> {
  const out: Record<string, number> = {
    userUs: r1(median(xs.map((x) => x.userUs))),
    sysUs: r1(median(xs.map((x) => x.sysUs))),
    ctxVol: r2(median(xs.map((x) => x.ctxVol))),
    ctxInvol: r2(median(xs.map((x) => x.ctxInvol))),
    turns: r2(median(xs.map((x) => x.turns))),
  };
  for (const k of Object.keys(xs[0].native) as (keyof NativeCounts)[]) {
    out[k] = r2(median(xs.map((x) => x.native[k])));
  }
  return out;
}

function report(
  names: string[],
  lat: Record<string, number[]>,
  fl: Record<string, Measured[]>,
  ratios: Record<string, number[]>,
  first: Record<string, number>,
): void {
  const rows = names.map((n) => ({
    mode: n,
    rtt_us: Math.round(median(lat[n])),
    calls_per_s: Math.round(median(fl[n].map((f) => f.callsPerS))),
    client: medianPerCall(fl[n].map((f) => f.client)),
    server: medianPerCall(fl[n].map((f) => f.server)),
  }));
  const result = {
    runtime: RUNTIME,
    sides: SIDES,
    noSpinLast: NO_SPIN,
    rounds: ROUNDS,
    rows,
    per_round: Object.fromEntries(Object.entries(ratios).map(([k, v]) => [k, v.map(r2)])),
    medians: Object.fromEntries(Object.entries(ratios).map(([k, v]) => [k, r2(median(v))])),
    per_round_calls_per_s: Object.fromEntries(
      names.map((n) => [n, fl[n].map((f) => Math.round(f.callsPerS))]),
    ),
    first,
  };
  const keys = Object.keys(rows[0].client);
  const md = [
    `# brpc's RDMA mode, A/B in one client process (${RUNTIME}, Soft-RoCE VM${
      NO_SPIN ? ", last side's engines without spin" : ""
    })`,
    "",
    `Sides: ${
      SIDES.map((s) => `${s.name} = ${s.dir}`).join("; ")
    }. verbus.Demo/Echo 64 B, rxe0 -> rxe1, qemu TCG`,
    `(emulated, shared host: only the ratios of one round mean anything). ${ROUNDS} rounds, modes rotating;`,
    `serial ${SERIAL} calls, in flight ${BATCH} calls ${FLIGHT} at a time. Each side's own server process.`,
    "",
    "| mode | RTT µs | calls/s, 32 in flight | per round |",
    "|---|---:|---:|---|",
    ...rows.map((r) =>
      `| ${r.mode} | ${r.rtt_us} | ${r.calls_per_s} | ${
        result.per_round_calls_per_s[r.mode].join(", ")
      } |`
    ),
    "",
    "Ratios of calls/s per round (median):",
    "",
    ...Object.entries(result.per_round).map(([k, v]) =>
      `- ${k}: ${v.join(", ")} (median ×${result.medians[k]})`
    ),
    "",
    "Work per call at 32 in flight (medians of the rounds; CPU µs user/kernel, context switches of all",
    "threads, native calls counted in each process, engine turns):",
    "",
    `| mode | side | ${keys.join(" | ")} |`,
    `|---|---|${keys.map(() => "---:").join("|")}|`,
    ...rows.flatMap((r) => [
      `| ${r.mode} | client | ${keys.map((k) => r.client[k]).join(" | ")} |`,
      `| ${r.mode} | server | ${keys.map((k) => r.server[k]).join(" | ")} |`,
    ]),
    "",
    `First connection: ${Object.entries(first).map(([k, v]) => `${k} ${v}`).join(", ")}.`,
    "",
  ].join("\n");
  mkdirSync(join(ROOT, "bench/results"), { recursive: true });
  const tag = `${NO_SPIN ? "-nospin" : ""}${TAG ? `-${TAG}` : ""}`;
  writeFileSync(
    join(ROOT, `bench/results/brpc-rdma-ab-vm-${RUNTIME}${tag}.json`),
    JSON.stringify(result, null, 2) + "\n",
  );
  writeFileSync(join(ROOT, `bench/results/brpc-rdma-ab-vm-${RUNTIME}${tag}.md`), md);
  console.log(md);
}

await main();
