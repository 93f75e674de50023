/**
 * The options of a {@link ./channel.ts Channel}: the zod schema of `connect()`'s options and the
 * address parser. Pure functions; any thread.
 * @module
 */
import { z } from "zod";
import { brpcRdmaOptionsSchema } from "../../transport/brpc_rdma/options.ts";
import { brpcUbringOptionsSchema } from "../../transport/brpc_ubring/options.ts";
import { parseOptions } from "../../util/options.ts";
import type { Logger } from "../protocol/dispatch.ts";
import { DEFAULT_MAX_BODY_SIZE } from "../protocol/frame.ts";

const loggerSchema: z.ZodCustom<Logger, Logger> = z.custom<Logger>(
  (v) => typeof v === "object" && v !== null && typeof (v as Logger).warn === "function",
  { message: "expected a logger with a warn(message) method" },
);

/** The fields of {@link ChannelOptionsSchema} (written out: the published API has explicit types). */
export type ChannelOptionsShape = {
  timeoutMs: z.ZodDefault<z.ZodNumber>;
  connectTimeoutMs: z.ZodDefault<z.ZodNumber>;
  maxBodySize: z.ZodDefault<z.ZodNumber>;
  logger: z.ZodOptional<z.ZodCustom<Logger, Logger>>;
  brpcRdma: z.ZodDefault<z.ZodUnion<readonly [z.ZodLiteral<false>, typeof brpcRdmaOptionsSchema]>>;
  brpcUbring: z.ZodDefault<
    z.ZodUnion<readonly [z.ZodLiteral<false>, typeof brpcUbringOptionsSchema]>
  >;
};

/** Largest timer delay (ms) a runtime accepts. */
export const MAX_TIMER = 0x7fffffff;

/** The options of {@link connect}, validated with zod (unknown keys are rejected). */
export const ChannelOptionsSchema: z.ZodObject<ChannelOptionsShape, z.core.$strict> = z.object({
  /** Default per-call timeout (sent to the server as `timeout_ms`). */
  timeoutMs: z.number().int().positive().max(MAX_TIMER).default(5000),
  /** How long one connection attempt may take. */
  connectTimeoutMs: z.number().int().positive().max(MAX_TIMER).default(3000),
  /** Largest accepted response body; a bigger frame breaks the connection. */
  maxBodySize: z.number().int().positive().max(0xffffffff).default(DEFAULT_MAX_BODY_SIZE),
  /** Where connection problems are logged; default: nothing is logged (errors reach callers). */
  logger: loggerSchema.optional(),
  /**
   * brpc's RDMA mode (a stock brpc server started with `-use_rdma=true`, or a verbus server with
   * `brpcRdma`): each connection starts with brpc's RDMA handshake and carries baidu_std over a
   * queue pair; it stays on TCP (logged once, with the reason) when either side cannot.
   * Default `false`: plain TCP.
   */
  brpcRdma: z.union([z.literal(false), brpcRdmaOptionsSchema]).default(false),
  /**
   * brpc's UBRing mode, same host only (a stock brpc server built `-DWITH_UBRING=ON` with
   * `use_ubring`, or a verbus server with `brpcUbring`): each connection starts with brpc's
   * UBRing handshake and carries baidu_std over two shared-memory rings; it stays on TCP
   * (logged once, with the reason) when either side cannot. Default `false`: plain TCP.
   */
  brpcUbring: z.union([z.literal(false), brpcUbringOptionsSchema]).default(false),
}).strict();

/** Input type of {@link connect}'s options. */
export type ChannelOptions = z.input<typeof ChannelOptionsSchema>;

const AddressSchema = z.object({
  host: z.string().min(1),
  port: z.number().int().min(1).max(65535),
});

/** Parses `"host:port"`, `"[v6]:port"` or `{ host, port }`. */
export function parseAddress(
  address: string | { host: string; port: number },
): { host: string; port: number } {
  let a: unknown = address;
  if (typeof address === "string") {
    const m = /^\[([^\]]+)\]:(\d+)$/.exec(address) ?? /^([^:]+):(\d+)$/.exec(address);
    a = m ? { host: m[1], port: Number(m[2]) } : { host: address, port: NaN };
  }
  return parseOptions(AddressSchema, a, `address ${JSON.stringify(address)} (want "host:port")`);
}
