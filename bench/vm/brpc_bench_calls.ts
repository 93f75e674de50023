/**
 * The measurements of the brpc RDMA VM benches (`brpc_bench.ts`, `brpc_rdma_ab.ts`): serial round
 * trips and calls/s at a number in flight, with CPU µs per call of the client (this process) and
 * of a server process (/proc), and the client's verbs-hub sleeps per call. Linux only (/proc).
 * @module
 */
import { readFileSync } from "node:fs";
import { VerbsHub } from "../../transport/verbs/hub.ts";

/** One call of a mode (64-byte Echo). */
export type Call = (req: Uint8Array) => Promise<unknown>;

/** The median of `xs` (upper middle). */
export const median = (xs: number[]): number =>
  [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

/** Median µs of `n` calls made one at a time. */
export async function serial(call: Call, n: number): Promise<number> {
  const req = new Uint8Array(64).fill(7);
  const t: number[] = [];
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    await call(req);
    t.push((performance.now() - t0) * 1000);
  }
  return median(t);
}

/** CPU time (user + system) of process `pid` so far, µs (clock ticks of 10 ms). */
export function cpuUs(pid: number | "self"): number {
  const st = readFileSync(`/proc/${pid}/stat`, "utf8");
  const f = st.slice(st.lastIndexOf(")") + 2).split(" ");
  return (Number(f[11]) + Number(f[12])) * 10_000;
}

/** Completion-channel sleeps of this process's verbs hubs so far. */
function hubSleeps(): number {
  return VerbsHub.all().reduce((n, h) => n + h.counters.sleeps, 0);
}

/** What one {@link flight} measured. */
export interface FlightResult {
  callsPerS: number;
  /** CPU µs per call: this process, and the server process. */
  clientCpu: number;
  serverCpu: number;
  /** This process's hub sleeps per call. */
  sleeps: number;
}

/** `total` calls, `inFlight` at a time, against the server process `serverPid`. */
export async function flight(
  call: Call,
  inFlight: number,
  total: number,
  serverPid: number,
): Promise<FlightResult> {
  const req = new Uint8Array(64).fill(7);
  let next = 0;
  const c0 = cpuUs("self"), s0 = cpuUs(serverPid), h0 = hubSleeps();
  const t0 = performance.now();
  await Promise.all(Array.from({ length: inFlight }, async () => {
    while (next++ < total) await call(req);
  }));
  return {
    callsPerS: total / ((performance.now() - t0) / 1000),
    clientCpu: (cpuUs("self") - c0) / total,
    serverCpu: (cpuUs(serverPid) - s0) / total,
    sleeps: (hubSleeps() - h0) / total,
  };
}
