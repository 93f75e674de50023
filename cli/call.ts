/**
 * `verbus call`: calls a verbus (or brpc) server — every demo op, the async bench, stats, fault
 * injection and the object-lifecycle demos. Human output by default, `--json` for one JSON
 * object per op (each with at least ok, op, path, fabric, latency_us and the result).
 * @module
 */
import {
  type CallPath,
  type Client,
  type ClientOptions,
  type ClusterOptions,
  connect,
  type RpcClient,
} from "../mod.ts";
import { VerbusError } from "../errors.ts";
import { demoOp, isDemoOp, routing } from "./call_demo.ts";
import { headerOptions } from "./call_headers.ts";
import { EXIT_FAILED, usageError } from "./options.ts";
import { paint, reportError, wantsJson } from "./style.ts";
import {
  CALL_HELP,
  type CallArgs,
  type CallOp,
  parseCallArgs,
  VERBUS_ONLY,
} from "./call_options.ts";
import { simulatorPath } from "./doctor.ts";
import { runBench, runLifecycle } from "./call_ops.ts";
import { runBrpcMode, runMethod } from "./call_method.ts";
import { runStreamCount } from "./call_stream.ts";
import { cliLogger } from "../util/log.ts";

/** One line of output. */
export interface OpReport {
  ok: boolean;
  op: string;
  /** The path the call(s) really ran (a forced LAZY answered small comes back EAGER). */
  path: CallPath | "mixed" | "STREAM" | "-";
  /** With --force-path: the path asked for (`path` says what ran). */
  forced?: CallPath;
  fabric: string;
  latency_us: number;
  /** With --ns: the server that answered (`HOST:PORT`; an op of several calls: all, by ","). */
  server?: string;
  /** With --ns: servers asked (1: the first answered; the most any of the op's calls asked). */
  attempts?: number;
  result?: unknown;
  error?: string;
}

const PATH: Record<string, CallPath> = {
  eager: "EAGER",
  lazy: "LAZY",
  bulk: "BULK",
  tcp: "TCP_FALLBACK",
};
const dec = new TextDecoder();

function show(v: unknown): string {
  if (v instanceof Uint8Array) {
    return v.length <= 64 ? JSON.stringify(dec.decode(v)) : `${v.length} bytes`;
  }
  return JSON.stringify(
    v,
    (_k, x) =>
      typeof x === "bigint"
        ? x.toString()
        : x instanceof Uint8Array
        ? (x.length <= 64 ? dec.decode(x) : `${x.length} bytes`)
        : x,
  );
}

/** `--async-sync`: says it is ready (a JSON line on stdout), then waits for a line on stdin. */
async function startBarrier(): Promise<void> {
  const { stdin } = await import("node:process");
  console.log(JSON.stringify({ ready: true }));
  await new Promise<void>((resolve) => {
    const done = () => {
      stdin.off("data", done);
      stdin.off("end", done);
      stdin.pause();
      resolve();
    };
    stdin.on("data", done);
    stdin.on("end", done);
  });
}

/** `(forced LAZY) ` when the op was forced to a path, so the line says what ran and what was asked. */
function forcedNote(r: OpReport): string {
  return r.forced ? `(forced ${r.forced}${r.path === r.forced ? "" : `, ran ${r.path}`}) ` : "";
}

/** Prints one report: a line a person reads, or one JSON object (`json`). */
export function printReport(r: OpReport, json: boolean): void {
  if (json) {
    console.log(
      JSON.stringify(
        r,
        (_k, x) =>
          typeof x === "bigint" ? x.toString() : x instanceof Uint8Array ? dec.decode(x) : x,
      ),
    );
  } else {
    console.log(
      `${r.ok ? paint("stdout", "green", "ok  ") : paint("stdout", "red", "FAIL")} ${
        r.op.padEnd(10)
      } path=${String(r.path).padEnd(12)} ${forcedNote(r)}fabric=${r.fabric.padEnd(5)} ${
        r.server ? `server=${r.server} ` : ""
      }${String(r.latency_us).padStart(9)} µs  ${r.ok ? show(r.result) : r.error}`,
    );
  }
}

/** Output of the ops: each report kept and printed ({@link printReport}). */
function reporter(json: boolean): { reports: OpReport[]; emit: (r: OpReport) => void } {
  const reports: OpReport[] = [];
  const emit = (r: OpReport) => {
    reports.push(r);
    printReport(r, json);
  };
  return { reports, emit };
}

/** What a client of any kind needs besides the options to run the ops. */
interface Run {
  client: RpcClient;
  /** The direct client (one server): the lifecycle demos and the server snapshot need it. */
  direct?: Client;
  force: CallPath | undefined;
  emit: (r: OpReport) => void;
}

/** Runs one op of any kind (the command line checked which ops this client kind takes). */
async function runOp(o: CallArgs, op: CallOp, run: Run): Promise<void> {
  const { client, direct, force, emit } = run;
  const t = o["timeout-ms"];
  if (isDemoOp(op)) return emit(await demoOp(client, op, o, force));
  switch (op.name) {
    case "method":
      return emit(
        await runMethod(
          (s, m, body, attachment) =>
            client.call(s, m, body, {
              ...headerOptions(o.header),
              attachment,
              forcePath: force,
              timeoutMs: t,
              ...(o.ns !== undefined && o["request-code"] !== undefined
                ? { requestCode: o["request-code"] }
                : {}),
            }),
          { ...o, method: op.arg },
        ),
      );
    case "lifecycle":
    case "lifecycle-stale":
    case "lifecycle-repeat-reclaim":
    case "lifecycle-timeout":
      if (direct) {
        emit(await runLifecycle(direct, op.name, op.name === "lifecycle" ? op.arg : 1, t));
      }
      return;
    case "async-bench":
      return emit(
        await runBench(client, {
          n: op.arg,
          op: o["bench-op"],
          window: o["async-window"],
          bytes: o["bench-bytes"],
          force,
          timeoutMs: t,
          seconds: o["async-seconds"],
          warmup: o["async-warmup"],
          ready: o["async-sync"] ? startBarrier : undefined,
          route: routing(o),
        }),
      );
    case "stream-count":
      if (direct) emit(await runStreamCount(direct, op.arg, t));
      return;
    case "stats": {
      await direct?.refreshServerSnapshot();
      if (!o.json) return console.log(client.formatStats());
      const result = client.stats();
      const line = {
        ok: true,
        op: "stats",
        path: "-",
        fabric: client.fabric,
        latency_us: 0,
        result,
      };
      return console.log(JSON.stringify(line));
    }
  }
}

/**
 * What the command line asks that cannot go together (checked here, not by the schema, so that
 * every option still parses next to every other); undefined when it can run.
 */
function conflict(o: CallArgs): string | undefined {
  if (o.ops.length === 0) {
    return "no op given: say what to call (--ping, --echo MSG, --get K, … see the ops)";
  }
  if (o["brpc-rdma"] && o["brpc-ubring"]) return "--brpc-rdma or --brpc-ubring: one of them";
  if (o["brpc-rdma"] || o["brpc-ubring"]) {
    const mode = o["brpc-rdma"] ? "--brpc-rdma" : "--brpc-ubring";
    const other = VERBUS_ONLY.filter((k) => o[k] !== undefined);
    if (other.length > 0) {
      return `${mode} runs only --method and --brpc-echo, not --${other.join(", --")}`;
    }
    return undefined;
  }
  const lifecycle = o.ops.some((op) => op.name.startsWith("lifecycle"));
  if (o.agent && (lifecycle || o.stats)) {
    return "--agent: --lifecycle* and --stats need a direct connection";
  }
  if ((o.agent ?? o.ns) !== undefined && o["stream-count"] !== undefined) {
    return "--stream-count: a stream needs a direct connection to one server (--port)";
  }
  if (o.ns !== undefined && (o.port !== undefined || o.agent !== undefined)) {
    return "--ns names the servers: not with --port or --agent";
  }
  const nsOnly = o.lb ?? o["max-retry"] ?? o["backup-request-ms"] ?? o["request-code"];
  if (o.ns === undefined && nsOnly !== undefined) {
    return "--lb, --max-retry, --backup-request-ms and --request-code go with --ns";
  }
  if (o.ns !== undefined && lifecycle) {
    return "--ns: --lifecycle* need one server's fabric session (--port)";
  }
  return undefined;
}

/** Entry point of `verbus call`. */
export async function main(args: string[]): Promise<number> {
  if (args.includes("--help") || args.includes("-h")) {
    console.log(CALL_HELP);
    return 0;
  }
  let o: CallArgs;
  try {
    o = parseCallArgs(args);
  } catch (e) {
    return usageError("call", e, wantsJson(args));
  }
  const why = conflict(o);
  if (why !== undefined) return usageError("call", new Error(why), o.json);
  if (o["brpc-rdma"] || o["brpc-ubring"]) {
    return await runBrpcMode(o, (r) => printReport(r, o.json));
  }
  const force = o["force-path"] ? PATH[o["force-path"]] : undefined;
  // One path for every client kind: the ops run on any; only the lifecycle demos and the server
  // snapshot need the direct client.
  let client: RpcClient, direct: Client | undefined;
  try {
    if (o.agent !== undefined) {
      client = await connect(`agent:${o.agent}`, { timeoutMs: o["timeout-ms"] });
    } else if (o.ns !== undefined) {
      client = await connect(o.ns as `${string}://${string}`, clusterOptions(o, clientOptions(o)));
    } else client = direct = await connect({ host: o.host, port: o.port! }, clientOptions(o));
  } catch (e) {
    // A balancer no one has, a scheme no naming service has, a list entry that is no address:
    // what the command line said is wrong, before anything was asked of the network.
    const bad = e instanceof VerbusError &&
      (e.code === "INVALID_ARGUMENT" || e.code === "INVALID_OPTIONS");
    if (o.ns !== undefined && bad) return usageError("call", e, o.json);
    return reportError("call", (e as Error).message, EXIT_FAILED, o.json);
  }
  if (o["simulate-server-pressure"]) await direct?.refreshServerSnapshot();
  const { reports, emit } = reporter(o.json);
  try {
    for (const op of o.ops) await runOp(o, op, { client, direct, force, emit });
  } finally {
    await client.close();
  }
  return reports.every((r) => r.ok) ? 0 : EXIT_FAILED;
}

/** The options of a direct client (one server; each server of `--ns`). */
function clientOptions(o: CallArgs): ClientOptions {
  return {
    timeoutMs: o["timeout-ms"],
    fabric: o.fabric,
    faults: {
      fabricDown: o["simulate-fabric-down"] ?? false,
      opFail: o["simulate-op-fail"] ?? 0,
      errors: o["simulate-errors"] ?? 0,
      ...(o["simulate-server-pressure"] ? { serverPressure: o["simulate-server-pressure"] } : {}),
    },
    refreshEvery: o["simulate-server-pressure"] ? 1 : 64,
    providerOptions: {
      ...(o.urma ? { urma: { library: o.urma === "sim" ? simulatorPath() : o.urma } } : {}),
      ...(o["source-addr"] || o["rdma-mode"]
        ? {
          verbs: {
            ...(o["source-addr"] ? { sourceAddr: o["source-addr"] } : {}),
            ...(o["rdma-mode"] ? { mode: o["rdma-mode"] } : {}),
          },
        }
        : {}),
    },
    logger: cliLogger("verbus call", o.json),
  };
}

/** The cluster options of `--ns`: the balancer, retries, and each server's `connect()` options. */
function clusterOptions(o: CallArgs, server: ClientOptions): ClusterOptions {
  return {
    lb: o.lb ?? "rr",
    timeoutMs: o["timeout-ms"],
    server,
    ...(o["max-retry"] !== undefined ? { maxRetry: o["max-retry"] } : {}),
    ...(o["backup-request-ms"] !== undefined ? { backupRequestMs: o["backup-request-ms"] } : {}),
  };
}
