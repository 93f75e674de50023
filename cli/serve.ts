/**
 * `verbus serve`: a verbus server with the demo service (verbus.Demo and brpc's
 * example.EchoService) on TCP, offering the shm fabric to same-host clients.
 * @module
 */
import { type StopSignal, withStopSignal } from "./stop_signal.ts";
import { z } from "zod";
import { demoService, ImageUploadStore, KvStore } from "../examples/demo/mod.ts";
import { FABRIC_DESCRIPTORS, type FabricKind, FABRICS, RUNTIME, serve } from "../mod.ts";
import { parseCommandLine, usageError } from "./options.ts";
import { wantsJson } from "./style.ts";
import { simulatorPath } from "./doctor.ts";
import { cliLogger } from "../util/log.ts";

const HELP = `usage: verbus serve --port P [--host H] [--image-dir D] [--fabric LIST|none]
                    [--urma sim|PATH] [--rdma-addr A] [--rdma-port N] [--rdma-mode poll|event]
                    [--object-ttl-ms N] [--batch-budget N] [--kv-max-bytes N]
                    [--brpc-rdma [--rdma-device D] | --brpc-ubring]
                    [--register URL [--register-ttl S] [--register-tag T]]
                    [--exit-with-stdin] [--json]

  --fabric LIST   fabrics to offer, best first, from ${FABRICS.join(", ")} (default: shm,verbs; urma
                  is offered only with --urma, which names liburma: "sim" = verbus's simulator)
  --kv-max-bytes N  most bytes the demo KV store holds (keys, value buffers, free buffers kept
                  for reuse; default 1 GiB); a put past it is refused with ELIMIT

  --brpc-rdma     also speak brpc's RDMA protocol: a brpc client with -use_rdma=true (or verbus
                  call --brpc-rdma) is served over a queue pair; others stay on TCP
  --rdma-device D the RDMA device of --brpc-rdma (brpc's -rdma_device; default: the one that
                  holds the listening address)
  --brpc-ubring   also speak brpc's UBRing protocol (same host, shared memory): a brpc client
                  with socket_mode UBRING (ubring_performance_client --use_ubring, or verbus call
                  --brpc-ubring) is served over two shm rings; others stay on TCP
  --register URL  register this server in etcd (etcd://HOST:PORT/PREFIX) under a lease kept
                  alive every S/3 s and revoked at a clean stop; a killed server's key goes when
                  its lease ends (--register-ttl S, default 10); clients use the same URL;
                  --register-tag T is brpc's tag of this server (wrr and wr read it as the
                  weight); the ready line names the key (--json: "registered")
  --exit-with-stdin  also stop gracefully when standard input ends (a supervisor holding a pipe
                  to it stops the server by exiting, however it exits)

Serves verbus.Demo (PING, ECHO, KV_PUT, KV_GET, MGET, PROFILE, LARGE_GET, BIGPUT, IMAGE_PUT),
example.EchoService/Echo (brpc's echo) and test.PerfTestService/Test (brpc's rdma_performance)
over TCP (baidu_std), and offers the shared-memory fabric to clients on this host. Stops
gracefully on SIGINT / SIGTERM. Logs each client's handshake outcome (a fallback once per cause).`;

const schema = z.object({
  port: z.coerce.number().int().min(0).max(65535),
  host: z.string().min(1).default("127.0.0.1"),
  "image-dir": z.string().min(1).optional(),
  fabric: z.string().refine(
    (v) => v === "none" || v.split(",").every((f) => (FABRICS as readonly string[]).includes(f)),
    `expected none or a list of ${FABRICS.join(", ")}`,
  ).optional(),
  urma: z.string().min(1).optional(),
  "rdma-addr": z.string().min(1).optional(),
  "rdma-port": z.coerce.number().int().min(0).max(65535).optional(),
  "rdma-mode": z.enum(["poll", "event"]).optional(),
  "object-ttl-ms": z.coerce.number().int().min(1).default(30_000),
  "batch-budget": z.coerce.number().int().min(1).max(4096).default(16),
  "kv-max-bytes": z.coerce.number().int().min(1).max(Number.MAX_SAFE_INTEGER).optional(),
  "brpc-rdma": z.boolean().default(false),
  "rdma-device": z.string().min(1).optional(),
  "brpc-ubring": z.boolean().default(false),
  register: z.string().regex(/^etcd:\/\//i, "expected etcd://HOST:PORT/PREFIX").optional(),
  "register-ttl": z.coerce.number().int().min(1).max(3600).optional(),
  "register-tag": z.string().regex(/^\S+$/, "expected a tag without spaces").optional(),
  "exit-with-stdin": z.boolean().default(false),
  json: z.boolean().default(false),
}).strict().refine(
  (o) => o.register !== undefined || (o["register-ttl"] === undefined && !o["register-tag"]),
  { message: "--register-ttl and --register-tag need --register", path: ["register"] },
);

/** The validated options of `verbus serve`. */
export type ServeArgs = z.output<typeof schema>;
/** Every option `verbus serve` takes. */
export const SERVE_OPTIONS: readonly string[] = Object.keys(schema.shape);

/** Parses `verbus serve`'s argv (`--name value` or `--name=value`); throws naming the bad option. */
export function parseServeArgs(args: string[]): ServeArgs {
  return parseCommandLine(schema, args);
}

/** Entry point of `verbus serve`. */
export async function main(args: string[]): Promise<number> {
  if (args.includes("--help") || args.includes("-h")) {
    console.log(HELP);
    return 0;
  }
  let o: ServeArgs;
  try {
    o = parseServeArgs(args);
  } catch (e) {
    return usageError("serve", e, wantsJson(args));
  }
  // The stop listeners before the work: a SIGTERM right after the ready line stops it cleanly.
  return await withStopSignal((stop) => run(o, stop), { exitWithStdin: o["exit-with-stdin"] });
}

async function run(o: ServeArgs, stop: StopSignal): Promise<number> {
  // Without --image-dir: a private temp directory made at the first upload, removed by close()
  // on every way out (a failed listen, a stop) — and at process exit if something throws past.
  const uploads = new ImageUploadStore({ imageDir: o["image-dir"] });
  try {
    return await serveUntilStopped(o, stop, uploads);
  } finally {
    uploads.close();
  }
}

async function serveUntilStopped(
  o: ServeArgs,
  stop: StopSignal,
  uploads: ImageUploadStore,
): Promise<number> {
  const imageDir = o["image-dir"] ?? null;
  const urmaLib = o.urma === "sim" ? simulatorPath() : o.urma;
  // without --fabric: the fabrics served by default, and those whose library was named
  const named: Partial<Record<string, string>> = urmaLib ? { urma: urmaLib } : {};
  const list = (o.fabric?.split(",") as FabricKind[] | undefined) ??
    FABRIC_DESCRIPTORS.filter((d) => d.servedByDefault || named[d.kind]).map((d) => d.kind);
  const server = await serve({
    port: o.port,
    host: o.host,
    services: demoService({
      uploads,
      ...(o["kv-max-bytes"] ? { kv: new KvStore({ maxTotalBytes: o["kv-max-bytes"] }) } : {}),
    }),
    fabric: o.fabric === "none" ? false : {
      fabrics: list,
      objectTtlMs: o["object-ttl-ms"],
      batchBudget: o["batch-budget"],
      providerOptions: {
        verbs: {
          ...(o["rdma-addr"] ? { addr: o["rdma-addr"] } : { addr: o.host }),
          ...(o["rdma-port"] !== undefined ? { port: o["rdma-port"] } : {}),
          ...(o["rdma-mode"] ? { mode: o["rdma-mode"] } : {}),
        },
        ...(urmaLib ? { urma: { library: urmaLib } } : {}),
      },
    },
    brpcRdma: o["brpc-rdma"] ? (o["rdma-device"] ? { device: o["rdma-device"] } : {}) : false,
    brpcUbring: o["brpc-ubring"] ? {} : false,
    ...(o.register
      ? {
        register: {
          url: o.register,
          ttlSeconds: o["register-ttl"] ?? 10,
          ...(o["register-tag"] ? { tag: o["register-tag"] } : {}),
        },
      }
      : {}),
    // info and up on stderr (VERBUS_LOG_LEVEL changes it), one JSON object a line under --json
    logger: cliLogger("verbus serve", o.json),
  });
  const offered =
    server.fabric?.fabrics.map((f) => f === "urma" && o.urma === "sim" ? "urma (simulated)" : f) ??
      [];
  const fabrics = (o.fabric === "none" ? "tcp only" : [...offered, "tcp"].join(" + ")) +
    (o["brpc-rdma"] ? " + brpc-rdma" : "") + (o["brpc-ubring"] ? " + brpc-ubring" : "");
  const reg = server.registration;
  const registered = reg && {
    url: o.register!,
    key: reg.key,
    address: reg.address,
    tag: o["register-tag"] ?? "",
    lease: reg.lease,
    ttlSeconds: o["register-ttl"] ?? 10,
  };
  console.log(
    o.json
      ? JSON.stringify({
        listening: true,
        host: server.host,
        port: server.port,
        runtime: RUNTIME,
        fabrics,
        imageDir,
        ...(registered ? { registered } : {}),
      })
      : `verbus serve (${RUNTIME}): listening on ${server.host}:${server.port} (${fabrics}); images in ${
        imageDir ?? "a temp directory (made at the first upload, removed at exit)"
      }${
        registered ? `; registered in etcd as ${registered.key} (lease ${registered.lease})` : ""
      }`,
  );
  await stop.stopped;
  await server.close();
  if (!o.json) console.log("verbus serve: stopped");
  return 0;
}
