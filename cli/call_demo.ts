/**
 * The demo ops of `verbus call` (ping … brpc-echo) through any client kind — direct, agent or
 * cluster — each reported with the path and fabric its calls took and, through a cluster, the
 * server that answered and the attempts it took. CLI only; the main JS thread.
 * @module
 */
import { readFileSync } from "node:fs";
import { decodeKeyRequest, DemoClient, parseBigKey } from "../examples/demo/mod.ts";
import type { CallPath, ClientCallResult, RpcClient } from "../mod.ts";
import { VerbusError } from "../errors.ts";
import type { OpReport } from "./call.ts";
import { type CallArgs, type CallOp, type CallOptions, DEMO_OPS } from "./call_options.ts";
import { headerOptions } from "./call_headers.ts";

const enc = new TextEncoder(), dec = new TextDecoder();
const round = (x: number) => Math.round(x * 10) / 10;

/** What the demo ops need of a client: any kind (direct, agent, cluster). */
type Caller = RpcClient;

/**
 * The demo methods that change nothing (brpc's `example.EchoService.Echo` too): through a
 * cluster they are called `idempotent`, so a broken connection may redo them elsewhere and
 * `--backup-request-ms` may copy them. KvPut, BigPut and the image chunks are not.
 */
export const READ_ONLY_METHODS: ReadonlySet<string> = new Set([
  "Ping",
  "Echo",
  "KvGet",
  "MGet",
  "Profile",
  "LargeGet",
]);

/** What a call carries besides its path and timeout: `--header`s, and through a cluster its routing. */
export interface Routing extends ReturnType<typeof headerOptions> {
  /** It may run twice (read-only): redone after a broken connection, backed up. */
  idempotent?: boolean;
  /** What the consistent-hashing balancers route by (`--request-code`). */
  requestCode?: bigint;
}

/**
 * The per-call options of a call of `method`: its `--header`s and, with `--ns`, its cluster
 * options (read-only methods idempotent, the `--request-code` if given); undefined when there
 * are none.
 */
export function routing(o: CallOptions): ((method: string) => Routing) | undefined {
  const headers = headerOptions(o.header); // --header: every call carries them
  if (o.ns === undefined) return o.header === undefined ? undefined : () => headers;
  const code = o["request-code"];
  return (method) => ({
    ...headers,
    ...(READ_ONLY_METHODS.has(method) ? { idempotent: true } : {}),
    ...(code !== undefined ? { requestCode: code } : {}),
  });
}

/** What a cluster's result adds (absent from a direct or agent client's). */
interface Routed {
  server?: string;
  attempts?: number;
}

/**
 * Runs `fn` with a demo client whose calls record the path they took (and, through a cluster,
 * the server that answered and the attempts; `route` gives each call its cluster options).
 */
async function runOp(
  client: Caller,
  name: string,
  force: CallPath | undefined,
  timeoutMs: number,
  fn: (d: DemoClient) => Promise<unknown>,
  route?: (method: string) => Routing,
): Promise<OpReport> {
  const paths = new Set<CallPath>();
  let fabric = client.fabric;
  const servers = new Set<string>();
  let attempts = 0;
  const d = new DemoClient(async (s, m, r, o) => {
    const big = m === "LargeGet" ? bigSize(r) : undefined;
    const res: ClientCallResult & Routed = await client.call(s, m, r, {
      ...o,
      forcePath: force,
      expectedResponseBytes: big,
      ...route?.(m),
    });
    paths.add(res.path);
    fabric = res.fabric;
    if (res.server !== undefined) servers.add(res.server);
    attempts = Math.max(attempts, res.attempts ?? 0);
    return res;
  }, { timeoutMs });
  const t0 = performance.now();
  // An op of several calls (image-put) may meet several servers: all are named.
  const routed = (): Routed => servers.size ? { server: [...servers].join(","), attempts } : {};
  try {
    const result = await fn(d);
    return {
      ok: true,
      op: name,
      ...(force ? { forced: force } : {}),
      path: paths.size === 1 ? [...paths][0] : paths.size ? "mixed" : "-",
      fabric,
      latency_us: round((performance.now() - t0) * 1000),
      ...routed(),
      result,
    };
  } catch (e) {
    return {
      ok: false,
      op: name,
      ...(force ? { forced: force } : {}),
      path: paths.size === 1 ? [...paths][0] : "-",
      fabric,
      latency_us: round((performance.now() - t0) * 1000),
      ...routed(),
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

/** One demo op as given. */
export type DemoOp = Extract<CallOp, { name: (typeof DEMO_OPS)[number] }>;

/** True when `op` is a demo op ({@link demoOp} runs it). */
export function isDemoOp(op: CallOp): op is DemoOp {
  return (DEMO_OPS as readonly string[]).includes(op.name);
}

/** What one demo op calls, through the demo client. */
function demoCall(op: DemoOp, o: CallArgs): (d: DemoClient) => Promise<unknown> {
  switch (op.name) {
    case "ping":
      return async (d) => {
        const p = await d.ping();
        return { rtt_us: round(p.rttUs), server_time_us: p.serverTimeUs };
      };
    case "echo":
      return async (d) => dec.decode(await d.echo(enc.encode(op.arg)));
    case "put":
      return (d) => d.put(op.arg[0], enc.encode(op.arg[1]));
    case "get":
      return async (d) => {
        const v = await d.get(op.arg);
        return v === undefined ? null : dec.decode(v);
      };
    case "mget":
      return async (d) =>
        (await d.mget(op.arg.split(","))).map((v) => v === undefined ? null : dec.decode(v));
    case "profile":
      return (d) => d.profile(BigInt(op.arg));
    case "large-get":
      return async (d) => {
        try {
          return { bytes: (await d.largeGet(op.arg)).length };
        } catch (e) {
          // `k:64k` is a KV key with no value: say how a generated object is named.
          if (op.arg.startsWith("big:") || !(e instanceof VerbusError)) throw e;
          const hint = "a generated object's key is big:SIZE, e.g. big:64k";
          throw new VerbusError(e.code, `${e.message} (${hint})`, { cause: e });
        }
      };
    case "bigput":
      return (d) => d.bigPut(op.arg[0], new Uint8Array(op.arg[1]).fill(0x42));
    case "image-put":
      return (d) => d.imagePut(op.arg[0], readFileSync(op.arg[1]), o["image-chunk-size"]);
    case "brpc-echo":
      return (d) => d.brpcEcho(op.arg);
  }
}

/**
 * Runs one demo op (ping … brpc-echo) through `client` and reports it (never throws: a failed
 * call is a report with ok false).
 */
export function demoOp(
  client: Caller,
  op: DemoOp,
  o: CallArgs,
  force: CallPath | undefined,
): Promise<OpReport> {
  return runOp(client, op.name, force, o["timeout-ms"], demoCall(op, o), routing(o));
}
