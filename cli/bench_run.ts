/**
 * The matrix of `verbus bench` and how one cell runs: each client is a `verbus call
 * --async-bench` child process of this runtime (the measurement `bench/e2e` makes), all of a
 * cell's clients connected and warmed up before a common start (`--async-sync`), stopped after
 * the cell's seconds. CLI only; the main JS thread.
 * @module
 */
import { spawn } from "node:child_process";
import { selfCommand } from "./self.ts";

/** The workloads, one per fabric path: what `verbus call --async-bench` runs for it. */
export const WORKLOADS = {
  eager: { path: "EAGER", label: "ECHO 64 B", op: "echo", bytes: 64 },
  lazy: { path: "LAZY", label: "LARGE_GET 64 KiB", op: "large-get", bytes: 65536 },
  bulk: { path: "BULK", label: "BIGPUT 16 KiB", op: "put", bytes: 16384 },
} as const;

/** A workload name (`--paths` takes these and `tcp`). */
export type Workload = keyof typeof WORKLOADS;

/** One cell of the matrix. */
export interface Cell {
  /** A fabric (`shm`, `verbs`, `urma`) or `tcp`. */
  readonly transport: string;
  readonly workload: Workload;
  readonly inflight: number;
  readonly clients: number;
}

/** What one cell measured (clients summed: calls/s added, per quantile the median client). */
export interface CellResult extends Cell {
  /** The path the calls took (`EAGER`, `LAZY`, `BULK`, `TCP_FALLBACK`, or `mixed`). */
  path: string;
  /** What `verbus call` reports as the fabric of the calls. */
  fabric: string;
  label: string;
  bytes: number;
  calls: number;
  failed: number;
  seconds: number;
  qps: number;
  /** Mean latency over every call of every client (weighted by each client's calls). */
  mean_us: number;
  /** The median client's p50. */
  p50_us: number;
  /** The worst client's p99. */
  p99_us: number;
  /** The worst client's p99.9. */
  p999_us: number;
  /** The latency distribution: [quantile, µs]. */
  quantiles: [number, number][];
  /** With --ns: the calls each server answered, all clients summed. */
  servers?: Record<string, number>;
  /** Set when the cell could not run. */
  error?: string;
}

/** The cells of `transports × workloads × inflight × clients`, each fabric next to TCP. */
export function matrix(
  transports: readonly string[],
  workloads: readonly Workload[],
  inflight: readonly number[],
  clients: readonly number[],
): Cell[] {
  const cells: Cell[] = [];
  for (const workload of workloads) {
    for (const w of inflight) {
      for (const c of clients) {
        for (const transport of transports) {
          cells.push({ transport, workload, inflight: w, clients: c });
        }
      }
    }
  }
  return cells;
}

/** Where and how the clients connect. */
export interface Target {
  host: string;
  port: number;
  /** `--urma` of the clients (sim or a liburma path), if any. */
  urma?: string;
  /** `--source-addr` of the clients (the local address of their RDMA connections), if any. */
  sourceAddr?: string;
  timeoutMs: number;
  /** A naming-service URL: the clients balance over its servers (host and port unused). */
  ns?: string;
  /** The balancer, `--max-retry` and `--backup-request-ms` of `ns`. */
  lb?: string;
  maxRetry?: number;
  backupRequestMs?: number;
}

/** The `verbus call` options that reach `target` over `transport` (a fabric or `tcp`). */
export function targetArgs(target: Target, transport: string): string[] {
  const where = target.ns === undefined ? ["--host", target.host, "--port", String(target.port)] : [
    "--ns",
    target.ns,
    "--lb",
    target.lb ?? "rr",
    ...(target.maxRetry !== undefined ? ["--max-retry", String(target.maxRetry)] : []),
    ...(target.backupRequestMs !== undefined
      ? ["--backup-request-ms", String(target.backupRequestMs)]
      : []),
  ];
  return [
    ...where,
    "--fabric",
    transport,
    "--timeout-ms",
    String(target.timeoutMs),
    ...(target.urma ? ["--urma", target.urma] : []),
    ...(target.sourceAddr ? ["--source-addr", target.sourceAddr] : []),
  ];
}

/** The error a failed `verbus call --json` reported on stderr (its last JSON line), or its first line. */
export function callError(stderr: string): string {
  const last = stderr.trim().split("\n").pop() ?? "";
  try {
    return String(JSON.parse(last).error);
  } catch {
    return stderr.trim().split("\n")[0] || "no answer";
  }
}

/** One client child: resolves with its last JSON line once it exits. */
interface ClientChild {
  ready: Promise<void>;
  go(): void;
  result: Promise<Record<string, unknown>>;
  kill(): void;
}

function startClient(args: string[]): ClientChild {
  const [bin, argv] = selfCommand(args);
  const p = spawn(bin, [...argv], { stdio: ["pipe", "pipe", "pipe"] });
  let out = "", err = "";
  let onReady: () => void = () => {};
  const ready = new Promise<void>((r) => (onReady = r));
  p.stdout!.on("data", (d) => {
    out += d;
    if (out.includes('{"ready":true}')) onReady();
  });
  p.stderr!.on("data", (d) => (err += d));
  p.stdin!.on("error", () => {}); // it exited before the start line: its exit reports why
  const result = new Promise<Record<string, unknown>>((res, rej) => {
    p.on("exit", (code) => {
      onReady();
      const line = out.trim().split("\n").filter((l) => l.startsWith('{"ok"')).pop();
      if (line) res(JSON.parse(line));
      else rej(new Error(`verbus call exited ${code}: ${callError(err || out)}`));
    });
  });
  return {
    ready,
    go: () => p.stdin!.end("go\n"),
    result,
    kill: () => p.kill("SIGKILL"),
  };
}

/**
 * Why a cell's figures are not what it is labelled (a forced fabric path that went another way,
 * e.g. fell back to TCP), or undefined when the calls took the cell's path.
 */
export function wrongPath(cell: Cell, path: string): string | undefined {
  const expected = cell.transport === "tcp" ? "TCP_FALLBACK" : WORKLOADS[cell.workload].path;
  return path === expected ? undefined : `the calls went ${path}, not ${expected}`;
}

/** The clients' `servers` maps (calls answered per server), added up. */
function sumServers(results: readonly Record<string, unknown>[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const r of results) {
    for (const [a, n] of Object.entries((r.servers ?? {}) as Record<string, number>)) {
      out[a] = (out[a] ?? 0) + Number(n);
    }
  }
  return out;
}

const median = (xs: number[]) => xs.slice().sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? 0;
/** The mean over every call of the clients' results (each client's mean weighted by its calls). */
function weightedMean(res: readonly Record<string, unknown>[]): number {
  const n = res.reduce((x, r) => x + Number(r.count ?? 0), 0);
  const sum = res.reduce((x, r) => x + Number(r.mean_us ?? 0) * Number(r.count ?? 0), 0);
  return n === 0 ? 0 : Math.round((sum / n) * 10) / 10;
}

/** Runs one cell for `seconds` (after `warmup` calls per client); never throws. */
export async function runCell(
  cell: Cell,
  target: Target,
  seconds: number,
  warmup: number,
): Promise<CellResult> {
  const w = WORKLOADS[cell.workload];
  const base: CellResult = {
    ...cell,
    path: "-",
    fabric: cell.transport,
    label: w.label,
    bytes: w.bytes,
    calls: 0,
    failed: 0,
    seconds: 0,
    qps: 0,
    mean_us: 0,
    p50_us: 0,
    p99_us: 0,
    p999_us: 0,
    quantiles: [],
  };
  const args = [
    "call",
    ...targetArgs(target, cell.transport),
    "--json",
    ...(cell.transport === "tcp" ? [] : ["--force-path", cell.workload]),
    "--async-bench",
    "1000000000",
    "--async-seconds",
    String(seconds),
    "--async-warmup",
    String(warmup),
    "--async-sync",
    "--async-window",
    String(cell.inflight),
    "--bench-op",
    w.op,
    "--bench-bytes",
    String(w.bytes),
  ];
  const kids = Array.from({ length: cell.clients }, () => startClient(args));
  // a client that never finishes (a server gone silent) is killed: its exit fails the cell
  const limit = setTimeout(() => kids.forEach((k) => k.kill()), seconds * 1000 + 120_000);
  try {
    await Promise.all(kids.map((k) => k.ready));
    for (const k of kids) k.go();
    const rs = await Promise.all(kids.map((k) => k.result));
    const res = rs.map((r) => r.result as Record<string, unknown>);
    const paths = new Set(rs.map((r) => String(r.path)));
    const qs = res.map((r) => (r.quantiles ?? []) as [number, number][]);
    const bad = rs.find((r) => !r.ok);
    const path = paths.size === 1 ? [...paths][0] : "mixed";
    const error = bad
      ? String((bad.result as Record<string, unknown>)?.first_error ?? bad.error)
      : wrongPath(cell, path);
    return {
      ...base,
      path,
      fabric: [...new Set(rs.map((r) => String(r.fabric)))].join("+"),
      calls: res.reduce((x, r) => x + Number(r.count), 0),
      failed: res.reduce((x, r) => x + Number(r.failed), 0),
      seconds: Math.max(...res.map((r) => Number(r.seconds))),
      qps: res.reduce((x, r) => x + Number(r.qps), 0),
      mean_us: weightedMean(res),
      p50_us: median(res.map((r) => Number(r.p50_us))),
      p99_us: Math.max(...res.map((r) => Number(r.p99_us))),
      p999_us: Math.max(...res.map((r) => Number(r.p999_us))),
      quantiles: qs[0].map(([q], i) => [q, median(qs.map((x) => x[i]?.[1] ?? 0))]),
      ...(target.ns !== undefined ? { servers: sumServers(res) } : {}),
      ...(error ? { error } : {}),
    };
  } catch (e) {
    for (const k of kids) k.kill();
    return { ...base, error: (e as Error).message };
  } finally {
    clearTimeout(limit);
  }
}
