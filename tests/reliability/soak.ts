/**
 * The soak (`make soak`; not in CI): a `verbus serve` child on this runtime, S sessions (default
 * 64) each with W calls in flight (default 32), mixed ops — Ping, Echo, KvPut + KvGet
 * read-back, LargeGet (LAZY), BigPut (BULK) — for D seconds (default 600). Every worker owns one
 * key and writes it a rising sequence number; the read-back after each acknowledged put must
 * see exactly that number: an older one is a lost write, a put whose number was already seen is
 * applied twice (a newer one than written cannot happen). Reports calls, failures, lost and
 * duplicated KV writes, the paths taken, and the server's RSS over time (start, peak, end), as
 * JSON in `--out` (default build/soak/soak-<runtime>.json) and a line per interval.
 *
 *   deno run -A tests/reliability/soak.ts [--seconds 600] [--sessions 64] [--window 32]
 *   bun tests/reliability/soak.ts          [same]
 * `--server=deno|bun` runs the server on the other runtime (default: this one).
 * `--only=bigput` runs BigPut alone (the BULK memory check of issue 12; bench/results/soak.md).
 * @module
 */
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import process from "node:process";
import { RUNTIME } from "../../ffi/runtime.ts";
import { type Client, connect } from "../../rpc/client/client.ts";
import {
  decodeGetResponse,
  DEMO_SERVICE,
  encodeKeyRequest,
  encodePingRequest,
  encodePutRequest,
} from "../../examples/demo/mod.ts";
import { REPO_ROOT, spawnScript } from "../util/proc.ts";

// deno-lint-ignore no-explicit-any
const g = globalThis as any;
const argv: string[] = RUNTIME === "deno" ? g.Deno.args : g.process.argv.slice(2);
function arg(name: string, dflt: number): number {
  const eq = argv.find((a) => a.startsWith(`--${name}=`));
  const i = argv.indexOf(`--${name}`);
  const v = eq ? eq.slice(name.length + 3) : i >= 0 ? argv[i + 1] : undefined;
  const n = v === undefined ? dflt : Number(v);
  if (!Number.isFinite(n) || n <= 0) {
    throw new Error(`--${name}: expected a positive number, got ${v}`);
  }
  return n;
}
const SECONDS = arg("seconds", 600), SESSIONS = arg("sessions", 64), WINDOW = arg("window", 32);
const INTERVAL_S = Math.min(30, Math.max(5, Math.round(SECONDS / 20)));
const outArg = argv.find((a) => a.startsWith("--out="))?.slice(6) ??
  (argv.includes("--out") ? argv[argv.indexOf("--out") + 1] : undefined);
const OUT = outArg ?? join(REPO_ROOT, "build", "soak", `soak-${RUNTIME}.json`);

/** A `/proc/<pid>/status` field in MiB (VmRSS = RssAnon + RssFile + RssShmem). */
const statusMiB = (pid: number, field: string): number => {
  const m = new RegExp(`${field}:\\s+(\\d+) kB`).exec(readFileSync(`/proc/${pid}/status`, "utf8"));
  return m ? Math.round(Number(m[1]) / 102.4) / 10 : NaN;
};
const rssMiB = (pid: number) => statusMiB(pid, "VmRSS");

/** The server's session memfds still mapped (each session's region is one). */
const serverRegions = (pid: number): number =>
  new Set(readFileSync(`/proc/${pid}/maps`, "utf8").match(/memfd:verbus-\d+-\d+/g) ?? []).size;

const totals = {
  calls: 0,
  failures: 0,
  lostWrites: 0,
  duplicatedWrites: 0,
  kvChecks: 0,
  paths: {} as Record<string, number>,
};
const errors = new Map<string, number>();

function fail(e: unknown): void {
  totals.failures++;
  const m = ((e as Error).message ?? String(e)).slice(0, 120);
  if (errors.size < 20 || errors.has(m)) errors.set(m, (errors.get(m) ?? 0) + 1);
}

async function call(c: Client, method: string, req: Uint8Array, expect?: number) {
  const r = await c.call(DEMO_SERVICE, method, req, {
    timeoutMs: 30_000,
    ...(expect ? { expectedResponseBytes: expect } : {}),
  });
  totals.calls++;
  totals.paths[r.path] = (totals.paths[r.path] ?? 0) + 1;
  return r;
}

const echoBytes = new Uint8Array(512).fill(0x65);
const bigBytes = new Uint8Array(20_000).fill(0x42);
const seqBytes = (n: number) => new TextEncoder().encode(String(n));

const ONLY = argv.find((a) => a.startsWith("--only="))?.slice(7);
if (ONLY !== undefined && ONLY !== "bigput") {
  throw new Error(`--only: expected bigput, got ${ONLY}`);
}

/** One worker: its own key, a rising sequence, a mixed op per turn (or BigPut only). */
async function worker(c: Client, id: string, until: number): Promise<void> {
  const key = `soak/${id}`;
  let acked = 0; // the newest sequence number whose put was acknowledged
  for (let seq = 1, turn = 0; performance.now() < until; turn++) {
    try {
      switch (ONLY === "bigput" ? 3 : turn % 8) {
        case 0:
          await call(c, "Ping", encodePingRequest(BigInt(turn)));
          break;
        case 1:
        case 5:
          await call(c, "Echo", echoBytes);
          break;
        case 2:
          await call(c, "LargeGet", encodeKeyRequest("big:64k"), 65536);
          break;
        case 3:
          await call(c, "BigPut", encodePutRequest(`${key}/big`, bigBytes));
          break;
        default: { // KvPut of the next number, then read it back
          const n = seq++;
          await call(c, "KvPut", encodePutRequest(key, seqBytes(n)));
          acked = n;
          const got = decodeGetResponse((await call(c, "KvGet", encodeKeyRequest(key))).response);
          const v = got ? Number(new TextDecoder().decode(got)) : 0;
          totals.kvChecks++;
          if (v < acked) totals.lostWrites++;
          else if (v > acked) totals.duplicatedWrites++; // cannot be written by anyone else
        }
      }
    } catch (e) {
      fail(e);
    }
  }
}

const serverArg = argv.find((a) => a.startsWith("--server="))?.slice(9);
const SERVER_RUNTIME = (serverArg ?? RUNTIME) as "deno" | "bun";
const server = await spawnScript(SERVER_RUNTIME, "cli/main.ts", {
  args: ["serve", "--port", "0", "--object-ttl-ms", "5000"],
});
const rss: {
  t_s: number;
  rss_mib: number;
  anon_mib: number;
  shmem_mib: number;
  regions: number;
  calls: number;
  failures: number;
}[] = [];
const t0 = performance.now();
const sample = () =>
  rss.push({
    t_s: Math.round((performance.now() - t0) / 1000),
    rss_mib: rssMiB(server.pid),
    anon_mib: statusMiB(server.pid, "RssAnon"),
    shmem_mib: statusMiB(server.pid, "RssShmem"),
    regions: serverRegions(server.pid),
    calls: totals.calls,
    failures: totals.failures,
  });
try {
  const clients: Client[] = [];
  for (let i = 0; i < SESSIONS; i++) {
    clients.push(await connect({ host: "127.0.0.1", port: server.port }, { timeoutMs: 30_000 }));
  }
  const fabrics = [...new Set(clients.map((c) => c.fabric))];
  sample();
  console.log(
    `soak (${RUNTIME} → ${SERVER_RUNTIME} server): ${SESSIONS} sessions (${
      fabrics.join(", ")
    }) × ${WINDOW} in flight, ` +
      `${SECONDS} s; server pid ${server.pid}, RSS ${rss[0].rss_mib} MiB`,
  );
  const end = performance.now() + SECONDS * 1000;
  const timer = setInterval(() => {
    sample();
    const s = rss[rss.length - 1];
    console.log(
      `  ${s.t_s} s: ${s.calls} calls, ${s.failures} failures, lost ${totals.lostWrites}, ` +
        `duplicated ${totals.duplicatedWrites}, server RSS ${s.rss_mib} MiB (anon ${s.anon_mib}, shared ${s.shmem_mib}; ${s.regions} regions)`,
    );
  }, INTERVAL_S * 1000);
  await Promise.all(
    clients.flatMap((c, i) =>
      Array.from({ length: WINDOW }, (_, w) => worker(c, `${process.pid}/${i}/${w}`, end))
    ),
  );
  clearInterval(timer);
  const handshakes = clients.map((c) => c.handshake.state);
  for (const c of clients) await c.close();
  // The server releases the sessions (their regions unmapped), then its RSS is read once more.
  const released = performance.now() + 20_000;
  while (serverRegions(server.pid) > 0 && performance.now() < released) {
    await new Promise((r) => setTimeout(r, 100));
  }
  await new Promise((r) => setTimeout(r, 1000));
  sample();
  const rssValues = rss.map((s) => s.rss_mib);
  const report = {
    runtime: RUNTIME,
    only: ONLY ?? "mixed",
    server_runtime: SERVER_RUNTIME,
    seconds: SECONDS,
    sessions: SESSIONS,
    window: WINDOW,
    fabrics,
    established: handshakes.filter((h) => h === "ESTABLISHED").length,
    ...totals,
    calls_per_s: Math.round(totals.calls / SECONDS),
    rss_mib: { start: rssValues[0], peak: Math.max(...rssValues), end: rssValues.at(-1) },
    anon_mib: {
      start: rss[0].anon_mib,
      peak: Math.max(...rss.map((x) => x.anon_mib)),
      end: rss.at(-1)!.anon_mib,
    },
    regions_left_mapped: rss.at(-1)!.regions,
    rss_over_time: rss,
    errors: Object.fromEntries(errors),
    server_alive: server.output().includes("listening") && (await Promise.race([
      server.exited.then(() => false),
      new Promise<boolean>((r) => setTimeout(() => r(true), 100)),
    ])),
  };
  mkdirSync(dirname(OUT), { recursive: true });
  writeFileSync(OUT, JSON.stringify(report, null, 2) + "\n");
  console.log(
    `soak (${RUNTIME}) done: ${report.calls} calls (${report.calls_per_s}/s), ` +
      `${report.failures} failures, ${report.lostWrites} lost and ${report.duplicatedWrites} ` +
      `duplicated KV writes of ${report.kvChecks} checked; paths ${
        JSON.stringify(report.paths)
      }; ` +
      `server RSS start ${report.rss_mib.start} / peak ${report.rss_mib.peak} / end ` +
      `${report.rss_mib.end} MiB (anon ${
        JSON.stringify(report.anon_mib)
      }) with ${report.regions_left_mapped} session regions left mapped; server alive: ${report.server_alive} → ${OUT}`,
  );
  if (
    report.failures || report.lostWrites || report.duplicatedWrites || !report.server_alive ||
    report.regions_left_mapped > 0
  ) {
    process.exitCode = 1;
  }
} finally {
  await server.kill("SIGTERM");
}
