/**
 * CPU per call of the e2e rows with many in flight: the bench clients (`verbus call --async-bench
 * --async-sync`) warm up, say they are ready, and start their measured calls together; the
 * server's CPU (`/proc/PID/stat`, user + kernel, all threads) is read when the last client is
 * ready and again when the last one printed its figures, and each client reports its own CPU over
 * its measured calls (`result.cpu_us`, getrusage). CPU per call = CPU ÷ the calls the clients
 * counted, per side. Unlike calls/s it hardly changes when other work shares the cores (a call's
 * work costs what it costs; waiting costs little), so it is the figure of a loaded host.
 * Main JS thread of the bench harness.
 * @module
 */
import { spawn } from "node:child_process";
import type { ChildCommand } from "../common/child_json.ts";
import { type CpuMicros, microsPerCall, procUsage, type Usage } from "../common/proc_cpu.ts";

/** A bench client's result line (`verbus call --json --async-bench`), the fields used here. */
export interface BenchLine {
  ok?: boolean;
  path?: unknown;
  result?: { count?: number; qps?: number; cpu_us?: CpuMicros } & Record<string, unknown>;
  [k: string]: unknown;
}

/** What {@link runSynced} returns: each client's result line and the server's CPU over the window. */
export interface SyncedRun {
  results: BenchLine[];
  /** The server's CPU (µs) from the last client ready to the last client's figures. */
  server: CpuMicros;
}

/** How {@link runSynced} reads the server's CPU (tests pass a fake process table). */
export type UsageReader = (pid: number) => Usage;

/**
 * Runs `cmds` (bench clients with `--async-sync`) at once in `cwd`, releases them together once
 * all printed `{"ready":true}`, and reads the server's CPU (`serverPid`, through `read`) at the
 * release and when the last result line arrived. Rejects naming the client when one ends without
 * a result (the others are killed). Killed after `timeoutMs`.
 */
export function runSynced(
  cmds: readonly ChildCommand[],
  serverPid: number,
  cwd: string,
  read: UsageReader = (pid) => procUsage(pid, { switches: false }),
  timeoutMs = 300_000,
): Promise<SyncedRun> {
  return new Promise((resolve, reject) => {
    const results: (BenchLine | undefined)[] = cmds.map(() => undefined);
    let ready = 0, got = 0, closed = 0, failed = false;
    let s0: Usage | undefined, s1: Usage | undefined;
    const fail = (e: Error) => {
      if (failed) return;
      failed = true;
      for (const k of kids) k.kill("SIGTERM");
      reject(e);
    };
    const timer = setTimeout(
      () => fail(new Error(`bench clients ran past ${timeoutMs} ms`)),
      timeoutMs,
    );
    const kids = cmds.map((cmd, i) => {
      const p = spawn(cmd[0], [...cmd[1]], { cwd, stdio: ["pipe", "pipe", "pipe"] });
      let buf = "", err = "";
      p.stderr!.on("data", (d) => (err += d));
      p.stdout!.on("data", (d) => {
        buf += d;
        for (let nl = buf.indexOf("\n"); nl >= 0; nl = buf.indexOf("\n")) {
          const line = buf.slice(0, nl).trim();
          buf = buf.slice(nl + 1);
          if (!line.startsWith("{")) continue;
          const j = JSON.parse(line) as BenchLine;
          if (j.ready === true) {
            if (++ready === cmds.length) {
              s0 = read(serverPid);
              for (const k of kids) k.stdin!.end("go\n");
            }
          } else if (results[i] === undefined) {
            results[i] = j;
            if (++got === cmds.length) s1 = read(serverPid);
          }
        }
      });
      p.on("close", (code) => {
        if (results[i] === undefined) {
          return fail(
            new Error(`${cmd[1].join(" ")} ended (exit ${code}) with no figures: ${err}`),
          );
        }
        if (++closed < cmds.length || failed) return;
        clearTimeout(timer);
        resolve({
          results: results as BenchLine[],
          server: { user: (s1!.user - s0!.user) * 1000, system: (s1!.sys - s0!.sys) * 1000 },
        });
      });
      return p;
    });
  });
}

/** CPU per call of one row: µs (user + kernel) per call of the clients and of the server, and the kernel's part of each. */
export interface CpuPerCall {
  cpu_client_us: number | null;
  cpu_server_us: number | null;
  cpu_client_kernel_us: number | null;
  cpu_server_kernel_us: number | null;
}

/**
 * The CPU per call of a row from its clients' result lines and the server's CPU over the window:
 * the clients' CPU summed over their calls, the server's over the same calls. A client that
 * reported no `cpu_us` leaves the client side unknown (null), never counted as 0.
 */
export function cpuPerCall(results: readonly BenchLine[], server: CpuMicros): CpuPerCall {
  const calls = results.reduce((a, r) => a + Number(r.result?.count ?? 0), 0);
  const cpus = results.map((r) => r.result?.cpu_us);
  const all = cpus.every((c): c is CpuMicros => c !== undefined);
  return {
    cpu_client_us: all ? microsPerCall(cpus, calls) : null,
    cpu_server_us: microsPerCall([server], calls),
    cpu_client_kernel_us: all ? microsPerCall(cpus, calls, "system") : null,
    cpu_server_kernel_us: microsPerCall([server], calls, "system"),
  };
}

/** The CPU per call of baseline runs (the shm ring: each run reports both of its sides). */
export function baselineCpuPerCall(runs: readonly Record<string, unknown>[]): CpuPerCall {
  const calls = runs.reduce((a, r) => a + Number(r.calls ?? 0), 0);
  const side = (k: string, part: "all" | "system" = "all") => {
    const cpus = runs.map((r) => r[k] as CpuMicros | undefined);
    return cpus.every((c): c is CpuMicros => c !== undefined)
      ? microsPerCall(cpus, calls, part)
      : null;
  };
  return {
    cpu_client_us: side("cpu_us"),
    cpu_server_us: side("server_cpu_us"),
    cpu_client_kernel_us: side("cpu_us", "system"),
    cpu_server_kernel_us: side("server_cpu_us", "system"),
  };
}

/** One client's figures, as `verbus call --async-bench` and the ring baseline report them. */
export interface ClientFigures {
  count: number;
  mean_us: number;
  p50_us: number;
  p99_us: number;
  p999_us: number;
  qps: number;
}

/**
 * The figures of clients run at once as one row: calls/s summed, the mean over every call (each
 * client's weighted by its calls), the median client's p50, the worst p99 and p99.9.
 */
export function combined(parts: readonly ClientFigures[]): Omit<ClientFigures, "count"> {
  const calls = parts.reduce((x, r) => x + r.count, 0);
  const p50s = parts.map((r) => r.p50_us).sort((x, y) => x - y);
  return {
    mean_us: calls > 0
      ? +(parts.reduce((x, r) => x + r.mean_us * r.count, 0) / calls).toFixed(1)
      : 0,
    p50_us: p50s[Math.floor(p50s.length / 2)],
    p99_us: Math.max(...parts.map((r) => r.p99_us)),
    p999_us: Math.max(...parts.map((r) => r.p999_us)),
    qps: parts.reduce((x, r) => x + r.qps, 0),
  };
}
