/**
 * The longer `verbus call` operations: the async bench and the object-lifecycle demos.
 * @module
 */
import {
  DEMO_SERVICE,
  encodeKeyRequest,
  encodePingRequest,
  encodePutRequest,
  parseBigKey,
} from "../examples/demo/mod.ts";
import type { CallPath, Client, ClientCallResult, RpcClient, TelemetrySnapshot } from "../mod.ts";
import type { OpReport } from "./call.ts";
import type { Routing } from "./call_demo.ts";
import { cpuUsage } from "node:process";
import { count } from "./plural.ts";

const round = (x: number) => Math.round(x * 10) / 10;

/**
 * `ms` as seconds to 0.1 ms, printed exactly in JSON (0.4391, where dividing a rounded ms count
 * by 1000 gave 0.43910000000000005).
 */
export const secondsOf = (ms: number): number => Math.round(ms * 10) / 10_000;

/** Parameters of `--async-bench`. */
export interface BenchSpec {
  n: number;
  op: "ping" | "echo" | "get" | "put" | "large-get";
  window: number;
  bytes: number;
  force: CallPath | undefined;
  timeoutMs: number;
  /** Stop after this many seconds even if fewer than `n` calls were made (`--async-seconds`). */
  seconds?: number;
  /** Calls made first and left out of the figures (`--async-warmup`; JIT and connection warm-up). */
  warmup?: number;
  /** Awaited after the warm-up, before the measured calls (`--async-sync`: a start barrier). */
  ready?: () => Promise<void>;
  /** Through a cluster (`--ns`): each call's cluster options (see `routing()`, call_demo.ts). */
  route?: (method: string) => Routing;
}

/** The quantiles reported in `result.quantiles` (a latency distribution to plot). */
export const BENCH_QUANTILES: readonly number[] = [
  ...Array.from({ length: 50 }, (_, i) => i / 50),
  0.99,
  0.995,
  0.999,
  1,
];

function request(spec: BenchSpec): { method: string; bytes: Uint8Array; expect?: number } {
  switch (spec.op) {
    case "ping":
      return { method: "Ping", bytes: encodePingRequest(1n) };
    case "echo":
      return { method: "Echo", bytes: new Uint8Array(spec.bytes).fill(0x61) };
    case "get":
      return { method: "KvGet", bytes: encodeKeyRequest("bench") };
    case "put":
      return {
        method: "KvPut",
        bytes: encodePutRequest("bench", new Uint8Array(spec.bytes).fill(0x62)),
      };
    case "large-get": {
      const key = `big:${Math.max(1, spec.bytes)}`;
      return { method: "LargeGet", bytes: encodeKeyRequest(key), expect: parseBigKey(key) };
    }
  }
}

/**
 * `count` calls with up to `window` in flight, their results ignored: the JIT tiers up on the
 * same code the measured calls run (a warm-up one call at a time leaves the 32-in-flight paths —
 * batched completions, many promises at once — cold, and the first measured ones pay for it).
 */
export async function warmUp(
  call: () => Promise<unknown>,
  count: number,
  window: number,
): Promise<void> {
  let left = count;
  const worker = async () => {
    while (left > 0) {
      left--;
      await call().catch(() => {});
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(window, count)) }, worker));
}

/**
 * `performance.now()` read once per burst: every caller in the same microtask run gets the same
 * reading (the next run reads again). With W calls in flight the answers of one read complete in
 * one run and their callers issue the next calls in it, so a call's latency is measured from the
 * burst that issued it to the burst that completed it — the way the raw TCP echo baseline stamps
 * per write and per read (`bench/e2e/baselines/raw_tcp_common.ts`), instead of three clock reads
 * per call (each an op call on Deno). At 1 in flight every reading is fresh.
 */
export class BurstClock {
  #at = -1;
  readonly #reset = (): void => {
    this.#at = -1;
  };

  /** The time (ms) of this burst. */
  now(): number {
    if (this.#at < 0) {
      this.#at = performance.now();
      queueMicrotask(this.#reset);
    }
    return this.#at;
  }
}

/**
 * Runs N calls with W in flight (or as many as fit in `seconds`), after `warmup` calls left out;
 * reports mean/p50/p99/p99.9/qps, this process's CPU time over them (`cpu_us`: µs user and
 * kernel, all threads), the latency quantiles ({@link BENCH_QUANTILES}), per-path counts, through
 * a cluster the calls each server answered (`servers`), and through an agent how the calls went
 * (`via`: "agent", or "agent+direct" when some took the client's fallback).
 */
export async function runBench(client: RpcClient, spec: BenchSpec): Promise<OpReport> {
  const req = request(spec);
  const options = {
    timeoutMs: spec.timeoutMs,
    forcePath: spec.force,
    expectedResponseBytes: req.expect,
    ...spec.route?.(req.method),
  };
  const call = (): Promise<ClientCallResult & { server?: string; via?: string }> =>
    client.call(DEMO_SERVICE, req.method, req.bytes, options);
  await warmUp(call, spec.warmup ?? 0, spec.window);
  await spec.ready?.();
  let lat = new Float64Array(Math.min(spec.n, 1 << 16));
  const paths: Record<string, number> = {};
  const servers: Record<string, number> = {};
  const fabrics = new Set<string>();
  const vias = new Set<string>();
  let next = 0, done = 0, failed = 0, firstError = "";
  const cpu0 = cpuUsage(), t0 = performance.now();
  const timed = spec.seconds !== undefined;
  const until = timed ? t0 + spec.seconds! * 1000 : Infinity;
  const clock = new BurstClock();
  const worker = async () => {
    while (next < spec.n && (!timed || clock.now() < until)) {
      next++;
      const a = clock.now();
      try {
        const r = await call();
        paths[r.path] = (paths[r.path] ?? 0) + 1;
        fabrics.add(r.fabric);
        if (r.via !== undefined) vias.add(r.via);
        if (r.server !== undefined) servers[r.server] = (servers[r.server] ?? 0) + 1;
      } catch (e) {
        failed++;
        firstError ||= (e as Error).message;
      }
      if (done === lat.length) {
        const grown = new Float64Array(Math.min(spec.n, lat.length * 2));
        grown.set(lat);
        lat = grown;
      }
      lat[done++] = clock.now() - a;
    }
  };
  await Promise.all(Array.from({ length: Math.min(spec.window, spec.n) }, worker));
  const secs = (performance.now() - t0) / 1000;
  const cpu = cpuUsage(cpu0);
  const sorted = lat.subarray(0, done).sort();
  const pick = (q: number) =>
    done === 0 ? 0 : round(sorted[Math.min(done - 1, Math.floor(q * done))] * 1000);
  let sum = 0;
  for (let i = 0; i < done; i++) sum += sorted[i];
  const one = onePath(paths);
  const ok = failed === 0 && done > 0;
  return {
    ok,
    // a failed bench says how many failed and the first error (the line a person reads shows it)
    ...(ok ? {} : {
      error: done === 0
        ? "no call completed"
        : `${failed} of ${done} calls failed${firstError ? `; first: ${firstError}` : ""}`,
    }),
    op: `bench:${spec.op}`,
    path: one,
    fabric: [...fabrics].join("+") || client.fabric, // what the calls took ("tcp+shm": both)
    latency_us: pick(0.5),
    result: {
      count: done,
      failed,
      window: spec.window,
      seconds: secondsOf(secs * 1000),
      // the mean beside the quantiles: a bimodal distribution (most calls fast, some slow) shows
      mean_us: done === 0 ? 0 : round((sum / done) * 1000),
      p50_us: pick(0.5),
      p99_us: pick(0.99),
      p999_us: pick(0.999),
      qps: Math.round(done / secs),
      // this process's CPU over the measured calls, all threads (getrusage): µs user and kernel
      cpu_us: { user: cpu.user, system: cpu.system },
      quantiles: BENCH_QUANTILES.map((q) => [q, pick(q)]),
      paths,
      ...(spec.route ? { servers } : {}),
      // through an agent: "agent" (its ring), "direct" (its fallback), or both
      ...(vias.size > 0 ? { via: [...vias].sort().join("+") } : {}),
      ...(firstError ? { first_error: firstError } : {}),
    },
  };
}

async function snapshot(client: Client): Promise<TelemetrySnapshot> {
  const s = await client.refreshServerSnapshot();
  if (!s) throw new Error("no fabric session: the object lifecycle needs the fabric (LAZY path)");
  return s;
}

/** The one path `paths` counted, "mixed" for several, "-" for none. */
function onePath(paths: Record<string, number>): CallPath | "mixed" | "-" {
  const keys = Object.keys(paths);
  return keys.length === 0 ? "-" : keys.length === 1 ? keys[0] as CallPath : "mixed";
}

/** What each lifecycle demo must have made the server count, or why it did not. */
function lifecycleShortfall(
  kind: string,
  n: number,
  c: Record<string, number>,
): string | undefined {
  if (kind === "lifecycle") {
    return c.allocated === n && c.reclaimed === n
      ? undefined
      : `expected ${
        count(n, "object")
      } allocated and reclaimed, the server counted ${c.allocated} and ${c.reclaimed}`;
  }
  if (kind === "lifecycle-timeout") {
    return c.ttl_reclaimed >= 1 ? undefined : "the server's TTL sweep freed no object";
  }
  return c.stale_refs >= 1 ? undefined : "the server counted no stale reference";
}

/**
 * The `--lifecycle*` demos: each reports the server's object counters before and after. `path`
 * and `fabric` are those the calls really took; `ok` says the calls went LAZY over the fabric and
 * the server counted what the demo is about.
 */
export async function runLifecycle(
  client: Client,
  kind: "lifecycle" | "lifecycle-stale" | "lifecycle-repeat-reclaim" | "lifecycle-timeout",
  n: number,
  timeoutMs: number,
): Promise<OpReport> {
  const t0 = performance.now();
  const paths: Record<string, number> = {};
  let fabric = client.fabric;
  const report = (ok: boolean, result: unknown, error?: string): OpReport => ({
    ok,
    op: kind,
    path: onePath(paths),
    fabric,
    latency_us: round((performance.now() - t0) * 1000),
    result,
    ...(error ? { error } : {}),
  });
  try {
    const session = client.session;
    const before = await snapshot(client);
    const lazyGet = async () => {
      const r = await client.call(DEMO_SERVICE, "LargeGet", encodeKeyRequest("big:64k"), {
        timeoutMs,
        forcePath: "LAZY",
      });
      paths[r.path] = (paths[r.path] ?? 0) + 1;
      fabric = r.fabric;
    };
    if (kind === "lifecycle") {
      for (let i = 0; i < n; i++) await lazyGet();
      await client.drain();
    } else if (kind === "lifecycle-timeout") {
      session!.lifecycle.skipReclaim = true;
      await lazyGet();
      session!.lifecycle.skipReclaim = false;
      const deadline = performance.now() + Math.max(timeoutMs, 40_000);
      for (;;) {
        const s = await snapshot(client);
        if (s.objTtlReclaims > before.objTtlReclaims) break;
        if (performance.now() > deadline) {
          throw new Error("the server's TTL sweep did not free the object in time");
        }
        await new Promise((r) => setTimeout(r, 200));
      }
    } else {
      await lazyGet();
      await client.drain();
      const { lastObject, lastGeneration } = session!.lifecycle;
      session!.reclaim(
        lastObject,
        kind === "lifecycle-stale" ? (lastGeneration ^ 0x5a5a) || 1 : lastGeneration,
      );
      await client.drain();
    }
    const after = await snapshot(client);
    const d = (k: keyof TelemetrySnapshot) => Number(after[k]) - Number(before[k]);
    const counts = {
      allocated: d("objAllocs"),
      reclaimed: d("objReclaims"),
      ttl_reclaimed: d("objTtlReclaims"),
      stale_refs: d("objStaleRefs"),
      bad_refs: d("objBadRefs"),
    };
    const notLazy = Object.keys(paths).filter((p) => p !== "LAZY");
    const why = notLazy.length
      ? `calls went ${notLazy.join(", ")}, not LAZY`
      : lifecycleShortfall(kind, n, counts);
    return report(why === undefined, { ...counts, pool_used_slabs: after.objectPoolUsed }, why);
  } catch (e) {
    return report(false, null, (e as Error).message);
  }
}
