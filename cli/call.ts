/**
 * `verbus call`: calls a verbus (or brpc) server — every demo op, the async bench, stats, fault
 * injection and the object-lifecycle demos. Human output by default, `--json` for one JSON
 * object per op (each with at least ok, op, path, fabric, latency_us and the result).
 * @module
 */
import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { z } from "zod";
import { type Client, type ClientCallResult, type ClientOptions, connect } from "../rpc/client.ts";
import { DemoClient } from "../rpc/demo/client.ts";
import { parseBigKey } from "../rpc/demo/large_object.ts";
import { decodeKeyRequest } from "../rpc/demo/codec.ts";
import type { CallPath } from "../rpc/selector.ts";
import { usageError } from "./options.ts";
import { simulatorPath } from "./doctor.ts";
import { runBench, runLifecycle } from "./call_ops.ts";

const HELP = `usage: verbus call --host H --port P [ops] [options]

ops (any number; run in this order):
  --ping                     --echo MSG                 --put K V          --get K
  --mget K1,K2,...           --profile ID               --large-get KEY    --bigput KEY BYTES
  --image-put KEY FILE [--image-chunk-size N]           --brpc-echo MSG
  --lifecycle N              N LAZY objects allocated, read and reclaimed
  --lifecycle-stale          a RECLAIM with a stale generation (harmless, counted)
  --lifecycle-repeat-reclaim the same RECLAIM twice (harmless, counted)
  --lifecycle-timeout        an object left unreclaimed until the server's TTL sweep frees it
  --async-bench N --bench-op ping|echo|get|put|large-get [--async-window W] [--bench-bytes B]
  --stats                    local telemetry and the server's control-page snapshot
options:
  --fabric auto|shm|verbs|urma|tcp   data plane (default auto: the best both hosts share)
  --urma sim|PATH            liburma to use ("sim" = verbus's simulator; never used otherwise)
  --source-addr A            bind the RDMA connection to local address A
  --rdma-mode poll|event     how this client waits for RDMA completions (default event)
  --force-path eager|lazy|bulk|tcp
  --simulate-fabric-down     --simulate-op-fail N      --simulate-errors N
  --simulate-server-pressure ring|objpool
  --timeout-ms N             --json`;

const num = z.coerce.number().int();
const schema = z.object({
  host: z.string().min(1).default("127.0.0.1"),
  port: num.min(1).max(65535),
  ping: z.boolean().optional(),
  echo: z.string().optional(),
  put: z.array(z.string()).optional(),
  get: z.string().optional(),
  mget: z.string().optional(),
  profile: z.string().regex(/^\d+$/, "expected a number").optional(),
  "large-get": z.string().optional(),
  bigput: z.array(z.string()).optional(),
  "image-put": z.array(z.string()).optional(),
  "image-chunk-size": num.min(1).max(24 * 1024).optional(),
  "brpc-echo": z.string().optional(),
  lifecycle: num.min(1).max(100_000).optional(),
  "lifecycle-stale": z.boolean().optional(),
  "lifecycle-repeat-reclaim": z.boolean().optional(),
  "lifecycle-timeout": z.boolean().optional(),
  "async-bench": num.min(1).optional(),
  "bench-op": z.enum(["ping", "echo", "get", "put", "large-get"]).default("echo"),
  "async-window": num.min(1).max(65536).default(32),
  "bench-bytes": num.min(0).max(64 << 20).default(64),
  stats: z.boolean().optional(),
  fabric: z.enum(["auto", "shm", "verbs", "urma", "tcp"]).default("auto"),
  urma: z.string().min(1).optional(),
  "source-addr": z.string().min(1).optional(),
  "rdma-mode": z.enum(["poll", "event"]).optional(),
  "force-path": z.enum(["eager", "lazy", "bulk", "tcp"]).optional(),
  "simulate-fabric-down": z.boolean().optional(),
  "simulate-op-fail": num.min(1).optional(),
  "simulate-errors": num.min(0).optional(),
  "simulate-server-pressure": z.enum(["ring", "objpool"]).optional(),
  "timeout-ms": num.min(1).default(5000),
  json: z.boolean().default(false),
}).strict().refine((o) => !o.put || o.put.length === 2, {
  message: "--put takes K V",
  path: ["put"],
})
  .refine((o) => !o.bigput || o.bigput.length === 2, {
    message: "--bigput takes KEY BYTES",
    path: ["bigput"],
  })
  .refine((o) => !o["image-put"] || o["image-put"].length === 2, {
    message: "--image-put takes KEY FILE",
    path: ["image-put"],
  });
type Opts = z.output<typeof schema>;

const FLAGS = [
  "ping",
  "stats",
  "json",
  "simulate-fabric-down",
  "lifecycle-stale",
  "lifecycle-repeat-reclaim",
  "lifecycle-timeout",
];
const PAIRS = ["put", "bigput", "image-put"];

/** Splits argv: `--put K V` style options take two values. */
function parse(args: string[]): Opts {
  const values: Record<string, unknown> = {};
  for (let i = 0; i < args.length; i++) {
    const a = args[i];
    if (!a.startsWith("--")) throw new Error(`unexpected argument ${JSON.stringify(a)}`);
    const k = a.slice(2);
    if (FLAGS.includes(k)) values[k] = true;
    else if (PAIRS.includes(k)) {
      if (args[i + 2] === undefined) throw new Error(`--${k} takes two values`);
      values[k] = [args[++i], args[++i]];
    } else {
      if (args[i + 1] === undefined) throw new Error(`--${k} needs a value`);
      values[k] = args[++i];
    }
  }
  void parseArgs; // (node:util's parser does not take two-value options)
  return schema.parse(values);
}

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

/** Runs `fn` with a demo client whose calls record the path they took. */
async function op(
  client: Client,
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

/** Entry point of `verbus call`. */
export async function main(args: string[]): Promise<number> {
  if (args.includes("--help") || args.includes("-h")) {
    console.log(HELP);
    return 0;
  }
  let o: Opts;
  try {
    o = parse(args);
  } catch (e) {
    return usageError("call", e, HELP);
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
  let client: Client;
  try {
    client = await connect({ host: o.host, port: o.port }, options);
  } catch (e) {
    console.error(`verbus call: ${(e as Error).message}`);
    return 1;
  }
  if (o["simulate-server-pressure"]) await client.refreshServerSnapshot();
  const reports: OpReport[] = [];
  const t = o["timeout-ms"];
  const emit = (r: OpReport) => {
    reports.push(r);
    if (o.json) {
      console.log(
        JSON.stringify(
          r,
          (_k, x) =>
            typeof x === "bigint" ? x.toString() : x instanceof Uint8Array ? dec.decode(x) : x,
        ),
      );
    } else {console.log(
        `${r.ok ? "ok  " : "FAIL"} ${r.op.padEnd(10)} path=${String(r.path).padEnd(12)} fabric=${
          r.fabric.padEnd(5)
        } ${String(r.latency_us).padStart(9)} µs  ${r.ok ? show(r.result) : r.error}`,
      );}
  };
  try {
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
  return reports.every((r) => r.ok) ? 0 : 1;
}
