/**
 * The cluster bench's client (run by `run.ts`, one process per runtime and mode; Deno or Bun):
 * 64-byte `verbus.Demo/Echo` calls, `--window` in flight, through the public `connect()`.
 *
 *   rows:     client.ts --mode rows --ports P1,P2,P3 [--window 32] [--seconds 3] [--warmup-ms 1000]
 *             [--rounds 3]
 *     Each round measures, in turn: one direct connection to P1, then `list://` clusters (rr) of
 *     the first 1, 2 and 3 ports. One JSON line per measurement:
 *     `{"row":"direct"|"cluster-N","round":R,"calls":…,"seconds":…,"callsPerSec":…,
 *     "p50Us":…,"p99Us":…,"errors":…,"fabric":…}`.
 *
 *   failover: client.ts --mode failover --ports P1,P2,P3 --kill-pid PID [--kill-after-ms 1500]
 *             [--after-ms 3000] [--window 32]
 *     A 3-server cluster (rr, idempotent calls); after `--kill-after-ms` of load it SIGKILLs PID
 *     (the server on P3) itself, so the kill and the calls share one clock, and keeps calling for
 *     `--after-ms`. One JSON line `{"failover":{…}}`: calls/s before and after, errors, retries,
 *     `lastDisturbedMs` (the last call after the kill that failed or needed a second server),
 *     `recoveredMs` (from the kill until the first 100 ms window with every call answered on its
 *     first attempt and at least 90 % of the after-kill steady rate, from which on no call is
 *     disturbed), and calls per 50 ms bucket around the kill.
 * @module
 */
import process from "node:process";
import { connect } from "../../rpc/client/client.ts";
import type { RpcClient } from "../../rpc/client/rpc_client.ts";
import { arg, exit, numArg } from "../common/args.ts";
import { median } from "../common/median.ts";

const MODE = arg("mode", "rows");
const PORTS = arg("ports", "").split(",").filter(Boolean).map(Number);
const WINDOW = numArg("window", 32);
const SECONDS = numArg("seconds", 3);
const WARMUP_MS = numArg("warmup-ms", 1000);
const ROUNDS = numArg("rounds", 3);
const payload = new Uint8Array(64).fill(7);
const emit = (o: unknown) => console.log(JSON.stringify(o));
const addr = (p: number) => `127.0.0.1:${p}`;

interface Done {
  /** performance.now() at completion. */
  at: number;
  us: number;
  ok: boolean;
  attempts: number;
}

/**
 * Calls with `WINDOW` in flight until `until()` is true; `record` sees each completion. Latencies
 * of the measured part go into `lat` (µs).
 */
async function drive(
  c: RpcClient,
  until: () => boolean,
  record: (d: Done) => void,
  idempotent = false,
): Promise<void> {
  const options = idempotent ? { idempotent: true } : {};
  await Promise.all(Array.from({ length: WINDOW }, async () => {
    while (!until()) {
      const t0 = performance.now();
      try {
        // deno-lint-ignore no-explicit-any
        const r: any = await c.call("verbus.Demo", "Echo", payload, options as any);
        const at = performance.now();
        record({ at, us: (at - t0) * 1000, ok: true, attempts: r.attempts ?? 1 });
      } catch {
        const at = performance.now();
        record({ at, us: (at - t0) * 1000, ok: false, attempts: 0 });
      }
    }
  }));
}

/** One measurement: warm-up, then `SECONDS` of calls. */
async function measure(c: RpcClient, row: string, round: number): Promise<void> {
  const lat: number[] = [];
  let calls = 0, errors = 0, measuring = false;
  const warmEnd = performance.now() + WARMUP_MS;
  let start = 0, end = Infinity;
  await drive(c, () => performance.now() >= end, (d) => {
    if (!measuring) {
      if (d.at < warmEnd) return;
      measuring = true;
      start = d.at;
      end = start + SECONDS * 1000;
    }
    if (d.at > end) return;
    calls++;
    if (!d.ok) errors++;
    else if (lat.length < 2_000_000) lat.push(d.us);
  });
  lat.sort((a, b) => a - b);
  const seconds = (end - start) / 1000;
  emit({
    row,
    round,
    calls,
    seconds,
    callsPerSec: Math.round(calls / seconds),
    p50Us: Math.round(median(lat)),
    p99Us: Math.round(lat[Math.floor(lat.length * 0.99)] ?? NaN),
    errors,
    // deno-lint-ignore no-explicit-any
    fabric: (c as any).fabric,
  });
}

async function rows(): Promise<void> {
  for (let round = 1; round <= ROUNDS; round++) {
    const direct = await connect(addr(PORTS[0]));
    await measure(direct, "direct", round);
    await direct.close();
    for (let n = 1; n <= PORTS.length; n++) {
      const url = `list://${PORTS.slice(0, n).map(addr).join(",")}` as const;
      const c = await connect(url, { lb: "rr", log: () => {} });
      await measure(c, `cluster-${n}`, round);
      await c.close();
    }
  }
}

async function failover(): Promise<void> {
  const killPid = numArg("kill-pid", 0);
  const killAfter = numArg("kill-after-ms", 1500);
  const afterMs = numArg("after-ms", 3000);
  if (!killPid) throw new Error("--kill-pid is required");
  const url = `list://${PORTS.map(addr).join(",")}` as const;
  const c = await connect(url, { lb: "rr", log: () => {} });
  const done: Done[] = [];
  const t0 = performance.now();
  let killedAt = Infinity;
  const killer = setTimeout(() => {
    process.kill(killPid, "SIGKILL");
    killedAt = performance.now();
  }, killAfter);
  await drive(c, () => performance.now() > killedAt + afterMs, (d) => done.push(d), true);
  clearTimeout(killer);
  await c.close();

  // Completions are pushed in time order: count a span by two binary searches.
  const firstAt = (t: number) => {
    let lo = 0, hi = done.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (done[mid].at < t) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  };
  const inSpan = (from: number, to: number) => firstAt(to) - firstAt(from);
  const rate = (from: number, to: number) => inSpan(from, to) / ((to - from) / 1000);
  const before = rate(Math.max(t0 + 500, killedAt - 1000), killedAt);
  const steady = rate(killedAt + afterMs - 1000, killedAt + afterMs);
  const disturbed = done.filter((d) => d.at >= killedAt && (!d.ok || d.attempts > 1));
  const lastDisturbed = disturbed.length ? Math.max(...disturbed.map((d) => d.at)) : killedAt;
  // The first 100 ms window from which on every call is a first-attempt success and the rate
  // is back to 90 % of the after-kill steady state.
  let recovered = NaN;
  for (let t = killedAt; t + 100 <= killedAt + afterMs; t += 5) {
    if (t < lastDisturbed) continue;
    if (rate(t, t + 100) >= 0.9 * steady) {
      recovered = t - killedAt;
      break;
    }
  }
  const buckets: number[] = [];
  for (let t = killedAt - 250; t < killedAt + 500; t += 50) {
    buckets.push(inSpan(t, t + 50));
  }
  emit({
    failover: {
      servers: PORTS.length,
      window: WINDOW,
      callsPerSecBefore: Math.round(before),
      callsPerSecAfter: Math.round(steady),
      calls: done.length,
      errors: done.filter((d) => !d.ok).length,
      retried: done.filter((d) => d.attempts > 1).length,
      lastDisturbedMs: Math.round((lastDisturbed - killedAt) * 10) / 10,
      recoveredMs: Math.round(recovered * 10) / 10,
      bucketsMs: 50,
      bucketsFromMs: -250,
      buckets,
    },
  });
}

try {
  if (PORTS.length === 0) throw new Error("--ports P1,P2,… is required");
  if (MODE === "rows") await rows();
  else if (MODE === "failover") await failover();
  else throw new Error(`--mode expects rows or failover, not ${MODE}`);
  exit(0);
} catch (e) {
  console.error(`bench/cluster/client: ${(e as Error).stack ?? e}`);
  exit(1);
}
