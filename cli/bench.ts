/**
 * `verbus bench`: the standard matrix — the fabrics available here (each next to TCP) × the
 * EAGER / LAZY / BULK workloads × 1 and 32 in flight × 1 and 4 clients — against a server it
 * starts (this runtime, `verbus serve --port 0`) or one named with `--connect HOST:PORT`.
 * Progress on stderr; a table on stdout (`--json`: one JSON object); `--plot FILE.svg` draws
 * throughput and latency distributions with vega-lite. CLI only; the main JS thread.
 * @module
 */
import { writeFileSync } from "node:fs";
import { stderr } from "node:process";
import { isatty } from "node:tty";
import { z } from "zod";
import { FABRIC_DESCRIPTORS, FABRICS, probeHost, RUNTIME, runtimeVersion } from "../mod.ts";
import { simulatorPath } from "./doctor.ts";
import { EXIT_FAILED, parseCommandLine, usageError } from "./options.ts";
import { plainIssue } from "./plain_issue.ts";
import { count } from "./plural.ts";
import {
  callError,
  type Cell,
  type CellResult,
  matrix,
  runCell,
  type Target,
  targetArgs,
  type Workload,
  WORKLOADS,
} from "./bench_run.ts";
import { benchSpec, loadVega, renderSvg } from "./bench_plot.ts";
import { selfCommand, type ServerProcess, startServe } from "./self.ts";
import { paint, reportError, wantsJson } from "./style.ts";
import { VERSION } from "./version.ts";

const HELP = `usage: verbus bench [--connect HOST:PORT | --ns URL [--lb NAME]] [--fabrics LIST]
                    [--paths LIST] [--inflight LIST] [--clients LIST] [--duration S]
                    [--warmup N] [--host H] [--source-addr A] [--urma sim|PATH]
                    [--json] [--plot FILE.svg] [--markdown FILE.md]

  --connect HOST:PORT  bench this server (default: start 'verbus serve' on this runtime)
  --ns URL             bench the servers a naming service names (list://H:P,H:P, file://PATH,
                       dns://…, etcd://H:P/PREFIX, consul://NAME), each client balancing its
                       calls over them; every cell counts the calls each server answered
                       ("servers" in --json)
  --lb NAME            the balancer of --ns (rr, random, wrr, wr, p2c, c_murmurhash, c_md5,
                       c_ketama, pick_first; default rr)
  --max-retry N        with --ns: other servers tried when a call could not have run (default 3)
  --backup-request-ms N  with --ns: a copy of a read-only call unanswered after N ms goes to
                       another server
  --host H             the address the started server binds (and its RDMA address; default
                       127.0.0.1 — RDMA needs a real interface's address)
  --source-addr A      the clients bind their RDMA connections to local address A
  --fabrics LIST       fabrics to bench, each next to TCP, from ${FABRICS.join(", ")}
                       (default: those this host can use; --urma adds urma)
  --paths LIST         from eager (ECHO 64 B), lazy (LARGE_GET 64 KiB), bulk (BIGPUT 16 KiB),
                       tcp (the same workloads over TCP) (default: eager,lazy,bulk,tcp)
  --inflight LIST      calls in flight per client (default 1,32)
  --clients LIST       client processes at once (default 1,4)
  --duration S         measured seconds per cell (default 1; 24 cells with shm alone: ~40 s)
  --warmup N           calls per client before the measurement (default 200)
  --urma sim|PATH      liburma for the server and the clients ("sim" = verbus's simulator)
  --json               one JSON object on stdout instead of the table
  --plot FILE.svg      also draw throughput and latency distributions (vega-lite, SVG)
  --markdown FILE.md   also write the table as Markdown (with the run's runtime, date, load)

Each client is a 'verbus call --async-bench' process of this runtime; a cell's clients start
together after their warm-up. Progress goes to stderr. Exit 1 if a cell failed.`;

/** A comma-separated list of `item`s; a bad item is named with what was wrong with it. */
const list = <T extends z.ZodType>(item: T) =>
  z.string().transform((s, ctx) => {
    const out = s.split(",").map((x) => item.safeParse(x.trim(), { error: plainIssue }));
    const bad = out.findIndex((r) => !r.success);
    if (bad >= 0) {
      const why = out[bad].error?.issues[0]?.message ?? "invalid";
      ctx.addIssue({ code: "custom", message: `${JSON.stringify(s.split(",")[bad])}: ${why}` });
      return z.NEVER;
    }
    return out.map((r) => r.data as z.output<T>);
  });

const schema = z.object({
  connect: z.string().regex(/^[^:\s]+:\d{1,5}$/, "expected HOST:PORT").optional(),
  ns: z.string().regex(/^[a-z][a-z0-9+.-]*:\/\/./i, "expected a naming-service URL").optional(),
  lb: z.string().min(1).optional(),
  "max-retry": z.coerce.number().int().min(0).max(16).optional(),
  "backup-request-ms": z.coerce.number().int().min(1).max(600_000).optional(),
  host: z.string().min(1).default("127.0.0.1"),
  "source-addr": z.string().min(1).optional(),
  fabrics: list(z.enum(FABRICS)).optional(),
  paths: list(z.enum(["eager", "lazy", "bulk", "tcp"])).default(["eager", "lazy", "bulk", "tcp"]),
  inflight: list(z.coerce.number().int().min(1).max(4096)).default([1, 32]),
  clients: list(z.coerce.number().int().min(1).max(64)).default([1, 4]),
  duration: z.coerce.number().positive().max(3600).default(1),
  warmup: z.coerce.number().int().min(0).max(1_000_000).default(200),
  urma: z.string().min(1).optional(),
  json: z.boolean().default(false),
  plot: z.string().regex(/\.svg$/i, "expected a file name ending in .svg").optional(),
  markdown: z.string().regex(/\.md$/i, "expected a file name ending in .md").optional(),
}).strict().refine((o) => o.ns === undefined || o.connect === undefined, {
  message: "--ns names the servers: not with --connect",
  path: ["ns"],
}).refine(
  (o) => o.ns !== undefined || (o.lb ?? o["max-retry"] ?? o["backup-request-ms"]) === undefined,
  { message: "--lb, --max-retry and --backup-request-ms go with --ns", path: ["ns"] },
);

/** The validated options of `verbus bench`. */
export type BenchArgs = z.output<typeof schema>;

/** Parses `verbus bench`'s argv (`--name value` or `--name=value`); throws naming the bad option. */
export function parseBenchArgs(args: string[]): BenchArgs {
  return parseCommandLine(schema, args);
}

/** The whole run, as `--json` prints it. */
export interface BenchReport {
  verbus: string;
  runtime: string;
  server: {
    host: string;
    port: number;
    started: boolean;
    fabrics: string;
    /** With --ns: the naming service and balancer the clients used (host "" and port 0). */
    ns?: string;
    lb?: string;
  };
  seconds_per_cell: number;
  transports: string[];
  skipped: { transport: string; reason: string }[];
  cells: CellResult[];
}

/** One progress line per cell on stderr (on a terminal, the running cell is shown first). */
function progress(i: number, n: number, c: Cell, r?: CellResult): void {
  const w = WORKLOADS[c.workload];
  const head = `[${String(i + 1).padStart(String(n).length)}/${n}] ${c.transport.padEnd(5)} ${
    w.label.padEnd(16)
  } ${String(c.inflight).padStart(3)} in flight × ${c.clients}`;
  const tty = isatty(2);
  if (!r) {
    if (tty) stderr.write(`${head} …`);
    return;
  }
  stderr.write(
    `${tty ? "\r\x1b[K" : ""}${head}  ${
      r.error
        ? `${paint("stderr", "red", "FAILED")}: ${r.error}`
        : `${r.qps} calls/s, mean ${r.mean_us} µs, p50 ${r.p50_us} µs, p99 ${r.p99_us} µs, p99.9 ${r.p999_us} µs (${r.path})`
    }\n`,
  );
}

/** The results as an aligned table for a person, or as a Markdown table (`--markdown`). */
function table(cells: readonly CellResult[], markdown = false): string {
  const head = [
    "fabric",
    "path",
    "workload",
    "in flight",
    "clients",
    "calls/s",
    "mean µs",
    "p50 µs",
    "p99 µs",
    "p99.9 µs",
    "calls",
    "failed",
  ];
  const rows = cells.map((c) => [
    c.fabric,
    c.path,
    c.label,
    String(c.inflight),
    String(c.clients),
    c.error ? "FAILED" : String(c.qps),
    String(c.mean_us),
    String(c.p50_us),
    String(c.p99_us),
    String(c.p999_us),
    String(c.calls),
    String(c.failed),
  ]);
  if (markdown) {
    const md = (r: string[]) => `| ${r.join(" | ")} |`;
    return [md(head), md(head.map(() => "---")), ...rows.map(md)].join("\n");
  }
  const w = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
  const line = (r: string[]) =>
    r.map((x, i) => (i < 3 ? x.padEnd(w[i]) : x.padStart(w[i]))).join("  ");
  return [paint("stdout", "bold", line(head)), ...rows.map(line)].join("\n");
}

/** Which of `transports` answer a ping over themselves; the others with the reason. */
async function reachable(target: Target, transports: string[]) {
  const { spawnSync } = await import("node:child_process");
  const ok: string[] = [], skipped: { transport: string; reason: string }[] = [];
  for (const t of transports) {
    const [bin, argv] = selfCommand(["call", ...targetArgs(target, t), "--json", "--ping"]);
    const r = spawnSync(bin, [...argv], { encoding: "utf8", timeout: 60_000 });
    const line = (r.stdout ?? "").split("\n").find((l) => l.startsWith('{"ok"'));
    const got = line ? JSON.parse(line) : undefined;
    // the simulated liburma reports itself as "urma (simulated)"
    if (got?.ok && String(got.fabric).split(" ")[0] === t) ok.push(t);
    else {
      const reason = got?.fabric && got.fabric !== t
        ? `the calls went over ${got.fabric}`
        : (got?.error ?? callError(r.stderr ?? ""));
      skipped.push({ transport: t, reason });
    }
  }
  return { ok, skipped };
}

/** Entry point of `verbus bench`. */
export async function main(args: string[]): Promise<number> {
  if (args.includes("--help") || args.includes("-h")) {
    console.log(HELP);
    return 0;
  }
  let o: BenchArgs;
  try {
    o = parseBenchArgs(args);
  } catch (e) {
    return usageError("bench", e, wantsJson(args));
  }
  if (o.plot) {
    // Before the matrix: a missing vega fails now, not after minutes of measuring.
    try {
      await loadVega();
    } catch (e) {
      return reportError("bench", (e as Error).message, EXIT_FAILED, o.json);
    }
  }
  const urma = o.urma === "sim" ? simulatorPath() : o.urma;
  // without --fabrics: the usable fabrics that serve offers by default, and those whose library
  // was named (as verbus serve chooses)
  const named: Partial<Record<string, string>> = urma ? { urma } : {};
  const offered = new Set(
    FABRIC_DESCRIPTORS.filter((d) => d.servedByDefault || named[d.kind]).map((d) => d.kind),
  );
  const fabrics = o.fabrics ??
    (await probeHost(urma)).fabrics.filter((f): f is (typeof FABRICS)[number] =>
      offered.has(f as (typeof FABRICS)[number])
    );
  const workloads = o.paths.filter((p): p is Workload => p !== "tcp");
  // --paths tcp alone: the ECHO workload over TCP only
  const onFabrics = workloads.length ? fabrics : [];
  if (workloads.length === 0) workloads.push("eager");
  const wanted = [...onFabrics, ...(o.paths.includes("tcp") ? ["tcp"] : [])];
  if (wanted.length === 0) {
    const why = "nothing to bench: no fabric here and tcp not in --paths";
    return usageError("bench", new Error(why), o.json);
  }
  let server: ServerProcess | undefined;
  let host = o.host, port = 0;
  if (o.ns !== undefined) host = "";
  else if (o.connect) {
    const at = o.connect.lastIndexOf(":");
    [host, port] = [o.connect.slice(0, at), Number(o.connect.slice(at + 1))];
  } else {
    server = await startServe(selfCommand([
      "serve",
      "--port",
      "0",
      "--json",
      "--exit-with-stdin",
      "--host",
      host,
      "--fabric",
      fabrics.length ? fabrics.join(",") : "none",
      ...(urma ? ["--urma", urma] : []),
    ]));
    port = server.port;
    console.error(
      `verbus bench: started verbus serve (${RUNTIME}) on ${host}:${port} (${server.listening.fabrics})`,
    );
  }
  try {
    const target: Target = {
      host,
      port,
      urma,
      sourceAddr: o["source-addr"],
      timeoutMs: 30_000,
      ...(o.ns !== undefined
        ? {
          ns: o.ns,
          lb: o.lb ?? "rr",
          maxRetry: o["max-retry"],
          backupRequestMs: o["backup-request-ms"],
        }
        : {}),
    };
    const where = o.ns ?? `${host}:${port}`;
    const { ok: transports, skipped } = await reachable(target, wanted);
    for (const s of skipped) console.error(`verbus bench: skipping ${s.transport}: ${s.reason}`);
    if (transports.length === 0) {
      const why = skipped.map((s) => `${s.transport}: ${s.reason}`).join("; ");
      return reportError(
        "bench",
        `nothing answered at ${where} (${why})`,
        EXIT_FAILED,
        o.json,
      );
    }
    const cells = matrix(transports, workloads, o.inflight, o.clients);
    console.error(
      `verbus bench: ${count(cells.length, "cell")} × ${o.duration} s (${
        transports.join(", ")
      }; ${RUNTIME} ${runtimeVersion()})`,
    );
    const results: CellResult[] = [];
    for (const [i, c] of cells.entries()) {
      progress(i, cells.length, c);
      const r = await runCell(c, target, o.duration, o.warmup);
      progress(i, cells.length, c, r);
      results.push(r);
    }
    const report: BenchReport = {
      verbus: VERSION,
      runtime: `${RUNTIME} ${runtimeVersion()}`,
      server: {
        host,
        port,
        started: server !== undefined,
        fabrics: String(server?.listening.fabrics ?? "unknown"),
        ...(o.ns !== undefined ? { ns: o.ns, lb: o.lb ?? "rr" } : {}),
      },
      seconds_per_cell: o.duration,
      transports,
      skipped,
      cells: results,
    };
    if (o.plot) {
      const svg = await renderSvg(benchSpec(results, {
        runtime: report.runtime,
        server: server ? `started here (${report.server.fabrics})` : where,
        secondsPerCell: o.duration,
        date: new Date().toISOString().slice(0, 16).replace("T", " ") + " UTC",
      }));
      writeFileSync(o.plot, svg);
      console.error(`verbus bench: wrote ${o.plot}`);
    }
    if (o.markdown) {
      const { loadavg } = await import("node:os");
      writeFileSync(
        o.markdown,
        `verbus bench ${VERSION} on ${report.runtime}, server ${
          server ? `started here (${report.server.fabrics})` : where
        }, ${o.duration} s per cell, ${new Date().toISOString()}; load average ${
          loadavg().map((x) => x.toFixed(2)).join(" ")
        }. Calls/s are all clients summed; the mean is over every call of every client; p50 is the median client's, p99 and p99.9 the worst client's.` +
          (skipped.length
            ? ` Skipped: ${skipped.map((s) => `${s.transport} (${s.reason})`).join(", ")}.`
            : "") +
          `\n\n${table(results, true)}\n`,
      );
      console.error(`verbus bench: wrote ${o.markdown}`);
    }
    console.log(o.json ? JSON.stringify(report) : table(results));
    return results.every((r) => !r.error) && results.length > 0 ? 0 : EXIT_FAILED;
  } finally {
    await server?.stop();
  }
}
