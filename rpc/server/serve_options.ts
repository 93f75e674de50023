/**
 * The options of `serve()` (one zod schema: types, defaults and error messages) and the types a
 * caller writes them in. Pure; any thread.
 * @module
 */
import { z } from "zod";
import type { DescService } from "@bufbuild/protobuf";
import type { Interceptor } from "@connectrpc/connect";
import type { Handler, Logger, ServiceMap } from "../protocol/dispatch.ts";
import { DEFAULT_MAX_BODY_SIZE } from "../protocol/frame.ts";
import { fabricHostOptionsSchema } from "../session/server/fabric_host.ts";
import {
  protoServices,
  serviceEntriesSchema,
  type ServiceEntry,
  type TypedServiceEntries,
} from "../connect/service.ts";
import { VerbusError } from "../../errors.ts";
import { brpcRdmaOptionSchema } from "../brpc/brpc_rdma.ts";
import { brpcUbringOptionSchema } from "../brpc/brpc_ubring.ts";
import { registerOptionSchema } from "../cluster/etcd_register.ts";

const handlerSchema: z.ZodCustom<Handler, Handler> = z.custom<Handler>(
  (v) => typeof v === "function",
  {
    message:
      "expected a handler function (request: Uint8Array, ctx) => Uint8Array | Promise<Uint8Array>",
  },
);
const interceptorSchema: z.ZodCustom<Interceptor, Interceptor> = z.custom<Interceptor>(
  (v) => typeof v === "function",
  { message: "expected an interceptor function (next) => (req) => Promise<response>" },
);
const loggerSchema: z.ZodCustom<Logger, Logger> = z.custom<Logger>(
  (v) => typeof v === "object" && v !== null && typeof (v as Logger).warn === "function",
  { message: "expected a logger with a warn(message) method" },
);

/** The options of {@link serve}, validated with zod (unknown keys are rejected). */
export const ServeOptionsSchema: z.ZodObject<{
  port: z.ZodNumber;
  host: z.ZodDefault<z.ZodString>;
  services: z.ZodUnion<
    readonly [
      z.ZodRecord<z.ZodString, z.ZodRecord<z.ZodString, z.ZodCustom<Handler, Handler>>>,
      typeof serviceEntriesSchema,
    ]
  >;
  maxBodySize: z.ZodDefault<z.ZodNumber>;
  maxConnections: z.ZodOptional<z.ZodNumber>;
  maxInflightPerConnection: z.ZodDefault<z.ZodNumber>;
  writeHighWaterMark: z.ZodDefault<z.ZodNumber>;
  writeLowWaterMark: z.ZodDefault<z.ZodNumber>;
  headerTimeoutMs: z.ZodDefault<z.ZodNumber>;
  idleTimeoutMs: z.ZodDefault<z.ZodNumber>;
  stallTimeoutMs: z.ZodDefault<z.ZodNumber>;
  logger: z.ZodOptional<z.ZodCustom<Logger, Logger>>;
  drainTimeoutMs: z.ZodDefault<z.ZodNumber>;
  fabric: z.ZodOptional<z.ZodUnion<readonly [z.ZodLiteral<false>, typeof fabricHostOptionsSchema]>>;
  brpcRdma: typeof brpcRdmaOptionSchema;
  brpcUbring: typeof brpcUbringOptionSchema;
  register: typeof registerOptionSchema;
  interceptors: z.ZodOptional<z.ZodArray<z.ZodCustom<Interceptor, Interceptor>>>;
}, z.core.$strict> = z.object({
  /** TCP port; 0 = ephemeral (read `server.port`). */
  port: z.number().int().min(0).max(65535),
  /** Address to bind. */
  host: z.string().min(1).default("127.0.0.1"),
  /**
   * Byte-level, `{ "example.EchoService": { Echo: handler } }`, or from protobuf descriptors,
   * `[[EchoService, { echo(req, ctx) { … } }], …]` (see `rpc/connect/service.ts`).
   */
  services: z.union([
    z.record(
      z.string().regex(
        /^[A-Za-z_][A-Za-z0-9_.]*$/,
        "expected a protobuf service name like pkg.Service",
      ),
      z.record(
        z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, "expected a method name"),
        handlerSchema,
      ),
    ),
    serviceEntriesSchema,
  ]),
  /** Largest accepted request body; a bigger frame closes its connection. */
  maxBodySize: z.number().int().positive().max(0xffffffff).default(DEFAULT_MAX_BODY_SIZE),
  /**
   * Connections open at once; one more is closed at once (the reason logged once). Default:
   * three quarters of the file descriptors free under the soft open-file limit when the server
   * starts (16 to 16,384), so `accept` does not run out of descriptors first; the rest is kept
   * for what connections bring along (fabric sessions).
   */
  maxConnections: z.number().int().positive().optional(),
  /** Calls running at once on one connection; more are answered with ELIMIT without running. */
  maxInflightPerConnection: z.number().int().positive().default(1024),
  /**
   * Answer bytes queued for one connection past which it stops taking requests and stops reading
   * the socket (a peer that does not read its answers).
   */
  writeHighWaterMark: z.number().int().positive().default(8 * 1024 * 1024),
  /** Queued answer bytes at or below which a stopped connection goes on (below the high mark). */
  writeLowWaterMark: z.number().int().nonnegative().default(1024 * 1024),
  /** A frame begun must have arrived whole within this many ms, or the connection is closed (0: never). */
  headerTimeoutMs: z.number().int().nonnegative().default(30_000),
  /**
   * A connection with no call in flight, nothing queued and nothing received for this many ms is
   * closed (0: never). Connections something depends on (a fabric session) are kept. When more
   * than three quarters of `maxConnections` are open, the timeout shrinks (to 3 s at the cap).
   */
  idleTimeoutMs: z.number().int().nonnegative().default(300_000),
  /**
   * A connection whose answers stay over `writeHighWaterMark` this many ms (its peer does not
   * read them) is closed and its queue dropped (0: never).
   */
  stallTimeoutMs: z.number().int().nonnegative().default(30_000),
  /**
   * Where the server logs (`warn`; `info` for events such as a fabric this host cannot offer).
   * Default: util/log.ts's library logger — `warn` and up on stderr, or `VERBUS_LOG_LEVEL`.
   */
  logger: loggerSchema.optional(),
  /** How long `close()` waits for calls in flight and for their answers to be written. */
  drainTimeoutMs: z.number().int().nonnegative().default(5000),
  /** Fast fabrics offered to verbus clients after the handshake (`false`: TCP only). */
  fabric: z.union([z.literal(false), fabricHostOptionsSchema]).optional(),
  /**
   * brpc's RDMA mode: a connection that starts with brpc's RDMA hello ("RDMA") is served over a
   * queue pair (a stock brpc client with `-use_rdma=true`); others stay plain baidu_std.
   */
  brpcRdma: brpcRdmaOptionSchema,
  /**
   * brpc's UBRing mode (same host): a connection that starts with brpc's UBRing hello ("UB") is
   * served over two shared-memory rings (a stock brpc client with `use_ubring`); others stay
   * plain baidu_std. Not together with `brpcRdma`.
   */
  brpcUbring: brpcUbringOptionSchema,
  /**
   * Register this server in etcd once it listens: `etcd://HOST:PORT/PREFIX` (or `{ url,
   * ttlSeconds, tag, address }`), under a lease kept alive and revoked by close(); clients find
   * it with the naming service of the same URL (`rpc/cluster/etcd_register.ts`).
   */
  register: registerOptionSchema,
  /**
   * Server interceptors, Connect's shape (`(next) => async (req) => …`, the first one outermost):
   * they wrap every method of the `[descriptor, implementation]` services, see the decoded
   * request and its headers, and may set response headers and trailers, answer or throw.
   * Byte-level services have no messages to intercept: giving both is refused.
   */
  interceptors: z.array(interceptorSchema).optional(),
}).strict().refine((o) => o.writeLowWaterMark < o.writeHighWaterMark, {
  message: "writeLowWaterMark must be below writeHighWaterMark",
  path: ["writeLowWaterMark"],
});

/** Input type of {@link serve}. */
export type ServeOptions = z.input<typeof ServeOptionsSchema>;

/**
 * What {@link serve} takes: {@link ServeOptions} whose `services` are byte-level handlers or
 * `[descriptor, implementation]` pairs, each implementation type-checked against its own
 * descriptor (a list built at run time goes through `protoServices(list)` first).
 */
export type ServeOptionsOf<T extends readonly DescService[]> =
  & Omit<ServeOptions, "services">
  & { services: ServiceMap | TypedServiceEntries<T> };

/**
 * The services `serve()` runs: the parsed ones, or — with `interceptors` — the
 * `[descriptor, implementation]` entries (`raw`, already checked by the schema) registered again
 * with the interceptors around every method. Throws `VerbusError` INVALID_OPTIONS for
 * interceptors beside byte-level services.
 */
export function servicesOf(
  parsed: ServiceMap,
  raw: unknown,
  interceptors: readonly Interceptor[] | undefined,
): ServiceMap {
  if (interceptors === undefined || interceptors.length === 0) return parsed;
  if (!Array.isArray(raw)) {
    throw new VerbusError(
      "INVALID_OPTIONS",
      "invalid serve() options: interceptors: they wrap services given as [descriptor, " +
        "implementation] pairs; byte-level services have no messages to intercept (pass " +
        "interceptors to protoService() for those you build by hand)",
    );
  }
  return protoServices(raw as ServiceEntry[], interceptors);
}
