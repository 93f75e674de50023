/**
 * `verbus call`: calls a verbus (or brpc) server — every demo op, the async bench, stats, fault
 * injection and the object-lifecycle demos. Human output by default, `--json` for one JSON
 * object per op (each with at least ok, op, path, fabric, latency_us and the result).
 * @module
 */
import { readFileSync } from "node:fs";
import { decodeKeyRequest, DemoClient, parseBigKey } from "../examples/demo/mod.ts";
import {
  type AgentClient,
  type CallPath,
  type Client,
  type ClientCallResult,
  type ClientOptions,
  connect,
  type RpcClient,
} from "../mod.ts";
import { EXIT_FAILED, usageError } from "./options.ts";
import { paint, reportError, wantsJson } from "./style.ts";
import { CALL_HELP, type CallArgs, parseCallArgs, VERBUS_ONLY } from "./call_options.ts";
import { simulatorPath } from "./doctor.ts";
import { runBench, runLifecycle } from "./call_ops.ts";
import { runBrpcRdma, runMethod } from "./call_method.ts";

/** One line of output. */
export interface OpReport {
  ok: boolean;
  op: string;
  path: CallPath | "mixed" | "-";
  fabric: string;
  latency_us: number;
  result?: unknown;
  error?: string;
}

const PATH: Record<string, CallPath> = {
  eager: "EAGER",
  lazy: "LAZY",
  bulk: "BULK",
  tcp: "TCP_FALLBACK",
};
const enc = new TextEncoder(), dec = new TextDecoder();

/** What the demo ops need of a client: any kind (direct, agent). */
type Caller = RpcClient;

/** Runs `fn` with a demo client whose calls record the path they took. */
async function op(
  client: Caller,
  name: string,
  force: CallPath | undefined,
  timeoutMs: number,
  fn: (d: DemoClient) => Promise<unknown>,
): Promise<OpReport> {
  const paths = new Set<CallPath>();
  let fabric = client.fabric;
  const d = new DemoClient(async (s, m, r, o) => {
    const big = m === "LargeGet" ? bigSize(r) : undefined;
    const res: ClientCallResult = await client.call(s, m, r, {
      ...o,
      forcePath: force,
      expectedResponseBytes: big,
    });
    paths.add(res.path);
    fabric = res.fabric;
    return res;
  }, { timeoutMs });
  const t0 = performance.now();
  try {
    const result = await fn(d);
    return {
      ok: true,
      op: name,
      path: paths.size === 1 ? [...paths][0] : paths.size ? "mixed" : "-",
      fabric,
      latency_us: round((performance.now() - t0) * 1000),
      result,
    };
  } catch (e) {
    return {
      ok: false,
      op: name,
      path: paths.size === 1 ? [...paths][0] : "-",
      fabric,
      latency_us: round((performance.now() - t0) * 1000),
      error: (e as Error).message,
    };
  }
}

function bigSize(keyRequest: Uint8Array): number | undefined {
  try {
    const key = dec.decode(decodeKeyRequest(keyRequest));
    return key.startsWith("big:") ? parseBigKey(key) : undefined;
  } catch {
    return undefined;
  }
}

const round = (x: number) => Math.round(x * 10) / 10;

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
      } path=${String(r.path).padEnd(12)} fabric=${r.fabric.padEnd(5)} ${
        String(r.latency_us).padStart(9)
      } µs  ${r.ok ? show(r.result) : r.error}`,
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

/** The demo ops (ping … brpc-echo) the arguments ask for, in order, through `client`. */
async function demoOps(
  client: Caller,
  o: CallArgs,
  force: CallPath | undefined,
  emit: (r: OpReport) => void,
): Promise<void> {
  const t = o["timeout-ms"];
  if (o.ping) {
    emit(
      await op(client, "ping", force, t, async (d) => {
        const p = await d.ping();
        return { rtt_us: round(p.rttUs), server_time_us: p.serverTimeUs };
      }),
    );
  }
  if (o.echo !== undefined) {
    emit(
      await op(
        client,
        "echo",
        force,
        t,
        async (d) => dec.decode(await d.echo(enc.encode(o.echo!))),
      ),
    );
  }
  if (o.put) {
    emit(await op(client, "put", force, t, (d) => d.put(o.put![0], enc.encode(o.put![1]))));
  }
  if (o.get !== undefined) {
    emit(
      await op(client, "get", force, t, async (d) => {
        const v = await d.get(o.get!);
        return v === undefined ? null : dec.decode(v);
      }),
    );
  }
  if (o.mget !== undefined) {
    emit(
      await op(
        client,
        "mget",
        force,
        t,
        async (d) =>
          (await d.mget(o.mget!.split(","))).map((v) => v === undefined ? null : dec.decode(v)),
      ),
    );
  }
  if (o.profile !== undefined) {
    emit(await op(client, "profile", force, t, (d) => d.profile(BigInt(o.profile!))));
  }
  if (o["large-get"] !== undefined) {
    emit(
      await op(
        client,
        "large-get",
        force,
        t,
        async (d) => ({ bytes: (await d.largeGet(o["large-get"]!)).length }),
      ),
    );
  }
  if (o.bigput) {
    emit(
      await op(
        client,
        "bigput",
        force,
        t,
        (d) => d.bigPut(o.bigput![0], new Uint8Array(Number(o.bigput![1])).fill(0x42)),
      ),
    );
  }
  if (o["image-put"]) {
    const [key, file] = o["image-put"];
    emit(
      await op(
        client,
        "image-put",
        force,
        t,
        (d) => d.imagePut(key, readFileSync(file), o["image-chunk-size"]),
      ),
    );
  }
  if (o["brpc-echo"] !== undefined) {
    emit(await op(client, "brpc-echo", force, t, (d) => d.brpcEcho(o["brpc-echo"]!)));
  }
}

/** `verbus call --agent NAME`: the demo ops through the same-host agent NAME. */
async function callThroughAgent(o: CallArgs, force: CallPath | undefined): Promise<number> {
  let client: AgentClient;
  try {
    client = await connect(`agent:${o.agent}`, { timeoutMs: o["timeout-ms"] });
  } catch (e) {
    return reportError("call", (e as Error).message, EXIT_FAILED, o.json);
  }
  const { reports, emit } = reporter(o.json);
  try {
    await demoOps(client, o, force, emit);
  } finally {
    await client.close();
  }
  return reports.every((r) => r.ok) ? 0 : EXIT_FAILED;
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
    return usageError("call", e, CALL_HELP, wantsJson(args));
  }
  if (o["brpc-rdma"]) {
    const other = VERBUS_ONLY.filter((k) => o[k] !== undefined);
    if (other.length > 0) {
      const why = `--brpc-rdma runs only --method and --brpc-echo, not --${other.join(", --")}`;
      return usageError("call", new Error(why), CALL_HELP, o.json);
    }
    return await runBrpcRdma(o, (r) => printReport(r, o.json));
  }
  const force = o["force-path"] ? PATH[o["force-path"]] : undefined;
  const options: ClientOptions = {
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
    logger: { warn: (m) => console.error(`verbus: ${m}`) },
  };
  if (
    o.agent && (o.lifecycle || o["lifecycle-stale"] || o["lifecycle-repeat-reclaim"] ||
      o["lifecycle-timeout"] || o["async-bench"] || o.stats)
  ) {
    return usageError(
      "call",
      new Error("--agent: --lifecycle*, --async-bench and --stats need a direct connection"),
      CALL_HELP,
      o.json,
    );
  }
  if (o.agent) return await callThroughAgent(o, force);
  let client: Client;
  try {
    client = await connect({ host: o.host, port: o.port! }, options);
  } catch (e) {
    return reportError("call", (e as Error).message, EXIT_FAILED, o.json);
  }
  if (o["simulate-server-pressure"]) await client.refreshServerSnapshot();
  const t = o["timeout-ms"];
  const { reports, emit } = reporter(o.json);
  try {
    await demoOps(client, o, force, emit);
    if (o.method !== undefined) {
      emit(
        await runMethod(
          (s, m, body, attachment) =>
            client.call(s, m, body, { attachment, forcePath: force, timeoutMs: t }),
          o,
        ),
      );
    }
    for (
      const kind of [
        "lifecycle",
        "lifecycle-stale",
        "lifecycle-repeat-reclaim",
        "lifecycle-timeout",
      ] as const
    ) {
      if (o[kind] !== undefined && o[kind] !== false) {
        emit(await runLifecycle(client, kind, kind === "lifecycle" ? o.lifecycle! : 1, t));
      }
    }
    if (o["async-bench"] !== undefined) {
      emit(
        await runBench(client, {
          n: o["async-bench"],
          op: o["bench-op"],
          window: o["async-window"],
          bytes: o["bench-bytes"],
          force,
          timeoutMs: t,
          seconds: o["async-seconds"],
          warmup: o["async-warmup"],
          ready: o["async-sync"] ? startBarrier : undefined,
        }),
      );
    }
    if (o.stats) {
      await client.refreshServerSnapshot();
      const st = client.stats();
      if (o.json) {
        console.log(
          JSON.stringify({
            ok: true,
            op: "stats",
            path: "-",
            fabric: client.fabric,
            latency_us: 0,
            result: st,
          }),
        );
      } else console.log(client.formatStats());
    }
  } finally {
    await client.close();
  }
  return reports.every((r) => r.ok) ? 0 : EXIT_FAILED;
}
