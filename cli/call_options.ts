/**
 * The command line of `verbus call`: its usage text, its zod schema (fabric choices derive from
 * {@link FABRICS}) and the argv parser. CLI only; the main JS thread.
 * @module
 */
import { z } from "zod";
import { FABRICS } from "../mod.ts";
import { checkOccurrence, parseInOrder } from "./options.ts";
import { headerOptionSchema } from "./call_headers.ts";

/** Usage of `verbus call` (printed with --help; a usage error points to it). */
export const CALL_HELP = `usage: verbus call --host H --port P OPS [options]
       verbus call --agent NAME OPS [options]   (through the same-host agent NAME)
       verbus call --ns URL [--lb NAME] OPS [options]   (the servers a naming service names)

ops (at least one; they run in the order given, each as often as it is given):
  --ping                     a PING (its round trip and the server's clock)
  --echo MSG                 ECHO MSG back
  --put K V                  store V under key K in the demo KV store
  --get K                    the value under K (null: none)
  --mget K1,K2,...           the values of several keys in one call
  --profile ID               the PROFILE record of user ID (a number)
  --large-get big:SIZE|KEY   a large result over the LAZY path: big:SIZE is an object the server
                             generates, SIZE bytes (big:4096, big:64k, big:1m; k = KiB, m = MiB);
                             another KEY reads the value --put stored under it (keys starting
                             big: are reserved for generated objects)
  --bigput KEY BYTES         BYTES bytes under KEY, over the BULK path (a large request)
  --image-put KEY FILE       upload FILE in chunks under KEY [--image-chunk-size N, at most 24576]
  --brpc-echo MSG            brpc's example.EchoService/Echo (a stock brpc echo_server answers it)
  --method SERVICE/METHOD    any baidu_std method [--body-hex HEX] [--attachment-bytes N]: prints
                             the response in hex and the size of its attachment
                             (e.g. test.PerfTestService/Test --body-hex 0801)
  --lifecycle N              N LAZY objects allocated, read and reclaimed
  --lifecycle-stale          a RECLAIM with a stale generation (harmless, counted)
  --lifecycle-repeat-reclaim the same RECLAIM twice (harmless, counted)
  --lifecycle-timeout        an object left unreclaimed until the server's TTL sweep frees it
  --async-bench N            N calls, up to W in flight: --bench-op ping|echo|get|put|large-get
                             (default echo) [--async-window W (32)] [--bench-bytes B (64)]
                             [--async-seconds S] (stop after S s) [--async-warmup N] (calls left out)
                             [--async-sync] (after the warm-up print {"ready":true}, wait for a line on stdin)
  --stream-count N           verbus.Demo/Count streams N messages back on a brpc stream (on the
                             client's fabric session, else TCP): messages received, in order, the
                             stream's fabric and messages/s
  --stats                    local telemetry and the server's control-page snapshot (with --ns:
                             the cluster's servers, answers per server, retries, broken, isolated)
options:
  --agent NAME               call through "verbus agent --listen NAME" (no --port; the agent's
                             connection and fabric; --async-bench measures the agent as it does
                             a direct client; not with --lifecycle*, --stats)
  --ns URL                   every server a naming service names (no --port): list://H:P,H:P,
                             file://PATH, dns://HOST:PORT, dns+srv://_SVC._tcp.NAME,
                             etcd://H:P/PREFIX, consul://NAME; each call goes to the server the
                             balancer picks, over its own connection and fabric; --json lines
                             carry "server" and "attempts", --async-bench counts "servers"
                             (not with --lifecycle*, --brpc-rdma)
  --lb NAME                  the balancer of --ns, in brpc's syntax: rr (default), random, wrr,
                             wr, p2c, pick_first, and c_murmurhash, c_md5, c_ketama (these route
                             by --request-code)
  --request-code N           with --ns: the request code every call carries (an unsigned 64-bit
                             integer; brpc's cntl->set_request_code): the same code, the same
                             server under a c_* balancer
  --max-retry N              with --ns: other servers tried when a call could not have run (a
                             connection refused, a server stopping or over its limit; default 3)
  --backup-request-ms N      with --ns: a read-only call (ping, echo, get, mget, profile,
                             large-get) still unanswered after N ms is sent to another server too;
                             the first answer wins
  --brpc-rdma                brpc's RDMA protocol (a brpc server with -use_rdma=true, or
                             verbus serve --brpc-rdma); only --method and --brpc-echo
  --rdma-device D            the RDMA device of --brpc-rdma (brpc's -rdma_device)
  --brpc-ubring              brpc's UBRing protocol, same host (a brpc server with socket_mode
                             UBRING, or verbus serve --brpc-ubring); only --method and --brpc-echo
  --fabric auto|${FABRICS.join("|")}|tcp   data plane (default auto: the best both hosts share)
  --urma sim|PATH            liburma to use ("sim" = verbus's simulator; never used otherwise)
  --source-addr A            bind the RDMA connection to local address A
  --rdma-mode poll|event     how this client waits for RDMA completions (default event)
  --force-path eager|lazy|bulk|tcp
  --simulate-fabric-down     the session goes down once made (the server is told); calls go TCP
  --simulate-op-fail N       the session's Nth fabric operation (a one-sided write, doorbell or
                             read, the session's own included) fails as a fabric error does:
                             the session ends (the server is told), the call that met it is
                             retried over TCP, and every later call goes TCP until the client
                             negotiates a new session (2 s later)
  --simulate-errors N        --simulate-server-pressure ring|objpool
  --header NAME=VALUE        a request header on every call (repeatable): log-id → log_id,
                             x-request-id → request_id, others → user_fields; they keep the
                             fabric path (a call's metadata block, up to 4 KiB)
  --timeout-ms N (5000)      --json
Every option is also accepted as --name=value (--put=K V).`;

const num = z.coerce.number().int();
const pair = z.tuple([z.string(), z.string()]);
/** The demo ops: call_demo.ts runs them on any client kind (direct, agent, cluster). */
export const DEMO_OPS = [
  "ping",
  "echo",
  "put",
  "get",
  "mget",
  "profile",
  "large-get",
  "bigput",
  "image-put",
  "brpc-echo",
] as const;
/** The ops of `verbus call`: they run in the order given, each as often as it is given. */
export const CALL_OPS = [
  ...DEMO_OPS,
  "method",
  "lifecycle",
  "lifecycle-stale",
  "lifecycle-repeat-reclaim",
  "lifecycle-timeout",
  "async-bench",
  "stream-count",
  "stats",
] as const;
/**
 * The options that need a verbus server (and its Client): not with --brpc-rdma / --brpc-ubring,
 * which run only --method and --brpc-echo.
 */
export const VERBUS_ONLY: readonly ((typeof CALL_OPS)[number] | "force-path" | "ns")[] = [
  ...CALL_OPS.filter((k) => k !== "method" && k !== "brpc-echo"),
  "force-path",
  "ns",
];
const schema = z.object({
  host: z.string().min(1).default("127.0.0.1"),
  port: num.min(1).max(65535).optional(),
  agent: z.string().regex(/^[A-Za-z0-9_.-]{1,64}$/, "expected 1-64 of [A-Za-z0-9_.-]").optional(),
  ns: z.string().regex(
    /^[a-z][a-z0-9+.-]*:\/\/./i,
    "expected a naming-service URL (list://, file://, dns://, dns+srv://, etcd://, consul://)",
  ).optional(),
  lb: z.string().min(1).optional(),
  "max-retry": num.min(0).max(16).optional(),
  "backup-request-ms": num.min(1).max(600_000).optional(),
  "request-code": z.string().regex(/^\d{1,20}$/, "expected an unsigned 64-bit integer")
    .transform((s) => BigInt(s))
    .refine((v) => v < 1n << 64n, "expected an unsigned 64-bit integer").optional(),
  ping: z.boolean().optional(),
  echo: z.array(z.string()).optional(),
  put: pair.optional(),
  get: z.array(z.string()).optional(),
  mget: z.string().optional(),
  profile: z.string().regex(/^\d+$/, "expected a number").optional(),
  "large-get": z.string().optional(),
  bigput: z.tuple([z.string(), num.min(0).max(64 << 20)]).optional(),
  "image-put": pair.optional(),
  "image-chunk-size": num.min(1).max(24 * 1024).optional(),
  "brpc-echo": z.string().optional(),
  method: z.string().min(1).optional(),
  "body-hex": z.string().regex(/^([0-9a-fA-F]{2})*$/, "expected hex bytes").optional(),
  "attachment-bytes": num.min(0).max(64 << 20).optional(),
  "brpc-rdma": z.boolean().optional(),
  "brpc-ubring": z.boolean().optional(),
  "rdma-device": z.string().min(1).optional(),
  lifecycle: num.min(1).max(100_000).optional(),
  "lifecycle-stale": z.boolean().optional(),
  "lifecycle-repeat-reclaim": z.boolean().optional(),
  "lifecycle-timeout": z.boolean().optional(),
  "async-bench": num.min(1).optional(),
  "bench-op": z.enum(["ping", "echo", "get", "put", "large-get"]).default("echo"),
  "async-window": num.min(1).max(65536).default(32),
  "bench-bytes": num.min(0).max(64 << 20).default(64),
  "async-seconds": z.coerce.number().positive().max(86_400).optional(),
  "async-warmup": num.min(0).max(1_000_000).default(0),
  "async-sync": z.boolean().optional(),
  "stream-count": num.min(0).max(100_000_000).optional(),
  stats: z.boolean().optional(),
  fabric: z.enum(["auto", ...FABRICS, "tcp"]).default("auto"),
  urma: z.string().min(1).optional(),
  "source-addr": z.string().min(1).optional(),
  "rdma-mode": z.enum(["poll", "event"]).optional(),
  "force-path": z.enum(["eager", "lazy", "bulk", "tcp"]).optional(),
  "simulate-fabric-down": z.boolean().optional(),
  "simulate-op-fail": num.min(1).optional(),
  "simulate-errors": num.min(0).optional(),
  "simulate-server-pressure": z.enum(["ring", "objpool"]).optional(),
  header: z.array(headerOptionSchema).optional(),
  "timeout-ms": num.min(1).default(5000),
  json: z.boolean().default(false),
}).strict().refine((o) => o.port !== undefined || o.agent !== undefined || o.ns !== undefined, {
  message: "--port is required (or --agent NAME, or --ns URL)",
  path: ["port"],
}).refine((o) => o.method !== undefined || (o["body-hex"] ?? o["attachment-bytes"]) === undefined, {
  message: "--body-hex and --attachment-bytes go with --method",
  path: ["method"],
});
/** The validated options of `verbus call` (each op's last value; {@link CallArgs} has all). */
export type CallOptions = z.output<typeof schema>;

/** The name of an op. */
export type CallOpName = (typeof CALL_OPS)[number];
type OpArg<K extends CallOpName> = K extends "echo" | "get" ? string
  : NonNullable<CallOptions[K]>;
/** One op as given: its name and its (validated) argument. */
export type CallOp = {
  [K in CallOpName]: { readonly name: K; readonly arg: OpArg<K> };
}[CallOpName];

/** The validated options of `verbus call` and its ops, in the order given. */
export type CallArgs = CallOptions & { readonly ops: readonly CallOp[] };

/** Every option `verbus call` takes (tests check each parses in both forms). */
export const CALL_OPTIONS: readonly string[] = Object.keys(schema.shape);

const isOp = (name: string): name is CallOpName => (CALL_OPS as readonly string[]).includes(name);

/**
 * Parses and validates the arguments of `verbus call` (`--name value` or `--name=value`), each
 * op as often and in the order given (a flag op given `=false` is left out); throws naming the
 * bad option.
 */
export function parseCallArgs(args: readonly string[]): CallArgs {
  const { options, order } = parseInOrder(schema, args);
  const ops = order.filter((o) => isOp(o.name) && o.value !== false).map((o) =>
    ({ name: o.name, arg: checkOccurrence(schema, o) }) as CallOp
  );
  return { ...options, ops };
}
