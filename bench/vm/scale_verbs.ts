/**
 * The scale benchmark over verbs, run INSIDE the Soft-RoCE VM (`make bench-scale-vm`): a server
 * process (same runtime, event mode) on rxe1 and this process opening N idle verbs sessions from
 * rxe0 (10, 100, 500 by default, cumulatively), then timing ECHO on ONE of them while the others
 * stay idle. Per N: that session's ECHO p50/p99, the setup rate of the sessions added, the
 * server's threads, fds and RSS, the CQs on the server's device (`rdma resource show`: one CQ
 * for every session is the point) and the server process's hub (members, CQ entries reserved).
 * Ratios against the 10-session figure of the same run; the VM is emulated (qemu TCG), so only
 * ratios mean anything. Writes bench/results/scale-vm-<runtime>.{json,md}.
 *
 *   deno run -A bench/vm/scale_verbs.ts [--counts 10,100,500] [--iters 400]
 * @module
 */
import { execFileSync } from "node:child_process";
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { RUNTIME } from "../../ffi/runtime.ts";
import { type Client, connect } from "../../rpc/client/client.ts";
import { serve } from "../../rpc/server/server.ts";
import { VerbsHub } from "../../transport/verbs/hub.ts";
import { SMALL_REGION } from "../scale/common.ts";
import { spawnServerRole } from "./vm_common.ts";

// deno-lint-ignore no-explicit-any
const g = globalThis as any;
const args: string[] = RUNTIME === "deno" ? g.Deno.args : g.process.argv.slice(2);
const opt = (n: string, d: string) => (args.includes(n) ? args[args.indexOf(n) + 1] : d);
const SERVER = "10.77.0.2", CLIENT = "10.77.0.1";
const ROOT = resolve(new URL("../..", import.meta.url).pathname);
const SERVICE = { "bench.Scale": { Echo: (r: Uint8Array) => r } };

if (args.includes("--serve")) {
  const server = await serve({
    port: 0,
    host: SERVER,
    services: {
      ...SERVICE,
      "bench.Hub": {
        Stats: () => {
          const h = VerbsHub.all().map((x) => ({
            device: x.ctx.deviceName,
            members: x.members,
            reserved: x.reserved,
            cqDepth: x.cqDepth,
            cqs: x.counters.cqs,
            sleeps: x.counters.sleeps,
          }));
          return new TextEncoder().encode(JSON.stringify(h));
        },
      },
    },
    fabric: {
      fabrics: ["verbs"],
      providerOptions: { verbs: { addr: SERVER, port: 0, mode: "event" } },
      region: SMALL_REGION,
    },
    logger: { warn: (m) => console.error(`scale server: ${m}`) },
  });
  console.log(`listening on ${server.port}`);
} else {
  await main();
}

function spawnServer(): Promise<{ port: number; pid: number; kill(): void }> {
  return spawnServerRole("bench/vm/scale_verbs.ts", ["--serve"]);
}

function procFigures(pid: number): { threads: number; fds: number; rssKiB: number } {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const field = (k: string) => Number(new RegExp(`^${k}:\\s+(\\d+)`, "m").exec(status)?.[1] ?? -1);
  return {
    threads: field("Threads"),
    fds: readdirSync(`/proc/${pid}/fd`).length,
    rssKiB: field("VmRSS"),
  };
}

function cqsOn(device: string): number {
  const out = execFileSync("rdma", ["resource", "show"], { encoding: "utf8" });
  const line = out.split("\n").find((l) => l.includes(` ${device}:`));
  return Number(/\bcq (\d+)/.exec(line ?? "")?.[1] ?? -1);
}

async function echoTimes(c: Client, n: number): Promise<{ p50: number; p99: number }> {
  const msg = new Uint8Array(64).fill(3);
  for (let i = 0; i < 100; i++) await c.call("bench.Scale", "Echo", msg);
  const t = new Float64Array(n);
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    const r = await c.call("bench.Scale", "Echo", msg);
    t[i] = (performance.now() - t0) * 1000;
    if (r.path !== "EAGER") throw new Error(`echo went ${r.path}`);
  }
  t.sort();
  return { p50: t[n >> 1], p99: t[Math.floor(n * 0.99)] };
}

async function main(): Promise<void> {
  const counts = opt("--counts", "10,100,500").split(",").map(Number);
  const iters = Number(opt("--iters", "400"));
  const srv = await spawnServer();
  const clients: Client[] = [];
  const rows: Record<string, number | string>[] = [];
  try {
    for (const n of counts) {
      const t0 = performance.now(), adding = n - clients.length;
      while (clients.length < n) {
        const batch = Array.from(
          { length: Math.min(8, n - clients.length) },
          () =>
            connect({ host: SERVER, port: srv.port }, {
              fabric: "verbs",
              region: SMALL_REGION,
              providerOptions: { verbs: { sourceAddr: CLIENT, mode: "event" } },
              timeoutMs: 30_000,
              logger: { warn: () => {} },
            }),
        );
        for (const c of await Promise.all(batch)) {
          clients.push(c);
          if (c.fabric !== "verbs") {
            throw new Error(`session ${clients.length}: ${c.handshake.reason}`);
          }
        }
      }
      const setupS = (performance.now() - t0) / 1000;
      await new Promise((r) => setTimeout(r, 500)); // let every session go idle
      const active = clients[clients.length >> 1];
      const echo = await echoTimes(active, iters);
      const hub = JSON.parse(new TextDecoder().decode(
        (await active.call("bench.Hub", "Stats", new Uint8Array(0))).response,
      ))[0];
      const proc = procFigures(srv.pid);
      const row = {
        sessions: n,
        echo_p50_us: +echo.p50.toFixed(1),
        echo_p99_us: +echo.p99.toFixed(1),
        setup_per_s: +(adding / setupS).toFixed(1),
        server_threads: proc.threads,
        server_fds: proc.fds,
        server_rss_mib: +(proc.rssKiB / 1024).toFixed(1),
        server_device_cqs: cqsOn("rxe1"),
        server_hub_members: hub?.members ?? -1,
        server_hub_cq_reserved: `${hub?.reserved}/${hub?.cqDepth}`,
        client_hubs: VerbsHub.all().length,
      };
      rows.push(row);
      console.log(JSON.stringify(row));
    }
  } finally {
    await Promise.all(clients.map((c) => c.close().catch(() => {})));
    srv.kill();
  }
  report(rows);
}

function report(rows: Record<string, number | string>[]): void {
  const base = rows[0];
  const md = [
    `# Scale over verbs (Soft-RoCE VM, ${RUNTIME} server and client)`,
    "",
    "qemu TCG emulation: read the ratios (against the first row), not the µs.",
    "One server process on rxe1 (event mode), this process opening the sessions from rxe0;",
    "ECHO 64 B timed on one session while the others stay idle.",
    "CQs on rxe1 counts every CQ on the device (`rdma resource show`): the kernel's own MAD CQ",
    "plus the server process's one hub CQ. Hub members = sessions + the prepared bundles.",
    "fds grow by one per session: its TCP connection (the RDMA context and channel are shared).",
    "",
    "| sessions | ECHO p50 µs | p99 µs | p50 vs first | setup/s | server threads | fds | RSS MiB | CQs on rxe1 | hub members | CQ entries reserved |",
    "|---|---|---|---|---|---|---|---|---|---|---|",
    ...rows.map((r) =>
      `| ${r.sessions} | ${r.echo_p50_us} | ${r.echo_p99_us} | ${
        (Number(r.echo_p50_us) / Number(base.echo_p50_us)).toFixed(2)
      }× | ${r.setup_per_s} | ${r.server_threads} | ${r.server_fds} | ${r.server_rss_mib} | ${r.server_device_cqs} | ${r.server_hub_members} | ${r.server_hub_cq_reserved} |`
    ),
    "",
  ].join("\n");
  const dir = join(ROOT, "bench/results");
  mkdirSync(dir, { recursive: true });
  writeFileSync(
    join(dir, `scale-vm-${RUNTIME}.json`),
    JSON.stringify({ runtime: RUNTIME, rows }, null, 2),
  );
  writeFileSync(join(dir, `scale-vm-${RUNTIME}.md`), md);
  console.log(md);
}
