/**
 * brpc's RDMA mode for the baidu_std {@link ../tcp/channel.ts Channel} and {@link ../server/server.ts Server}:
 * the connection under them starts with brpc's RDMA handshake and, once ESTABLISHED, carries the
 * baidu_std byte stream over a queue pair (transport/brpc_rdma/). Chosen explicitly with the
 * `brpcRdma` option, never guessed.
 *
 * Client: FALLBACK_TCP (no RDMA here, the server answered zeroed versions, bring-up failed) keeps
 * the same connection on TCP; a server not in RDMA mode (it closed on the hello, or answered with
 * something else) is dialled again over plain TCP; both are logged once per cause (per logger). Any other
 * FAILED ending rejects the connect with `ConnectFailedError`.
 * Server: a connection whose first four bytes are not "RDMA" is a plain baidu_std peer (as brpc
 * serves TCP clients on an RDMA server); each other ending is logged once per cause.
 *
 * Threading: the channel's / server's JS thread.
 * @module
 */
import { z } from "zod";
import { ConnectFailedError } from "../../errors.ts";
import {
  BrpcRdmaConn,
  brpcRdmaOptionsSchema,
  clientHandshake,
  openBrpcQp,
  prepareBrpcRdma as prepareDevice,
  serverHandshake,
  setBrpcRdmaDriver,
} from "../../transport/brpc_rdma/mod.ts";
import type { BrpcRdmaOptions, BrpcRdmaOptionsInput } from "../../transport/brpc_rdma/mod.ts";
import { parseOptions } from "../../util/options.ts";
import { tcp } from "../../transport/tcp/mod.ts";
import type { TcpConn } from "../../transport/tcp/tcp.ts";
import type { Logger } from "../protocol/dispatch.ts";
import { HandshakeAcceptor, logOnce } from "../server/handshake_acceptor.ts";
import { driveOnEngine } from "./brpc_rdma_driver.ts";
import { type BrpcUbringOptions, isUbringConn, ubringDial } from "./brpc_ubring.ts";

// Connections on the verbs hub's shared CQ are driven by this thread's progress engine.
setBrpcRdmaDriver(driveOnEngine);

/**
 * Opens the RDMA device of brpc's RDMA mode ahead of a client's first connection (libibverbs
 * loaded, the device's hub open, the GID for `localIp` picked, `preparedQps` QPs prepared), so
 * that connection only brings a QP up. `options`: as the channel's `brpcRdma`; `localIp`: the
 * address the channel's TCP connections leave from (picks the device and GID when `device` is
 * not named). Resolves with the device's name; rejects with INVALID_OPTIONS for bad options and
 * with NoRdmaError (code NO_DEVICE…) when this host cannot. `serve()` does this by itself.
 */
export function prepareBrpcRdma(
  options: BrpcRdmaOptionsInput = {},
  localIp = "0.0.0.0",
): Promise<string> {
  const o = parseOptions(brpcRdmaOptionsSchema, options, "invalid brpcRdma options");
  return prepareDevice(o, localIp);
}

/**
 * `serve()` with `brpcRdma`: opens the device and prepares QPs before the server listens, so the
 * first handshake does not pay for it. A host that cannot is logged (connections then fall back
 * to TCP with the reason, as before); never rejects.
 */
export async function prepareBrpcRdmaServer(
  options: BrpcRdmaOptions,
  host: string,
  logger: Logger,
): Promise<void> {
  try {
    await prepareDevice(options, host);
  } catch (e) {
    logger.warn(
      `brpc-rdma server: the RDMA device could not be opened ahead (${
        e instanceof Error ? e.message : String(e)
      }); each connection tries again`,
    );
  }
}

/** The `brpcRdma` option of `serve()` and `connectChannel()`: off (default) or its options. */
export const brpcRdmaOptionSchema: z.ZodOptional<
  z.ZodUnion<readonly [z.ZodLiteral<false>, typeof brpcRdmaOptionsSchema]>
> = z.union([z.literal(false), brpcRdmaOptionsSchema]).optional();
export { brpcRdmaOptionsSchema };
export type { BrpcRdmaOptions };

/** The kind of an established connection: brpc RDMA, brpc UBRing, or TCP. */
export function connKind(conn: TcpConn | null): "brpc-rdma" | "brpc-ubring" | "tcp" {
  return conn instanceof BrpcRdmaConn ? "brpc-rdma" : isUbringConn(conn) ? "brpc-ubring" : "tcp";
}

/** What the channel passes. */
export interface DialOptions {
  connectTimeoutMs: number;
  brpcRdma?: false | BrpcRdmaOptions;
  brpcUbring?: false | BrpcUbringOptions;
  logger?: Logger;
}

/**
 * Opens the channel's connection: plain TCP, or TCP then brpc's RDMA handshake (`brpcRdma`) or
 * UBRing handshake (`brpcUbring`). Rejects with `ConnectFailedError` when the server cannot be
 * reached or the handshake FAILED for another reason than "not a server of that mode".
 */
export async function dialChannel(host: string, port: number, o: DialOptions): Promise<TcpConn> {
  const to = { host, port, timeoutMs: o.connectTimeoutMs };
  const conn = await tcp.connect(to);
  const log = (l: string) => logOnce(o.logger, l);
  let out: { conn: TcpConn | null; notServer: boolean; reason?: string; history: unknown };
  let mode: string;
  if (o.brpcUbring) {
    mode = "UBRing";
    out = await ubringDial(conn, o.brpcUbring, log);
  } else if (o.brpcRdma) {
    mode = "RDMA";
    const r = await clientHandshake(conn, o.brpcRdma, openBrpcQp, log);
    out = { ...r, notServer: r.notRdmaServer === true };
  } else return conn;
  if (out.conn !== null) return out.conn;
  if (out.notServer) {
    log(`brpc-${mode.toLowerCase()} client to ${host}:${port}: using plain TCP (${out.reason})`);
    return await tcp.connect(to);
  }
  throw new ConnectFailedError(
    `brpc ${mode} handshake with ${host}:${port} failed: ${out.reason}`,
    {
      context: { history: out.history },
    },
  );
}

/** brpc's RDMA handshake on each accepted connection (see {@link HandshakeAcceptor}). */
export class BrpcRdmaAcceptor extends HandshakeAcceptor {
  constructor(
    readonly options: BrpcRdmaOptions,
    sniffTimeoutMs: number,
    logger: Logger,
    maxPending?: number,
    openConnections?: () => number,
  ) {
    super("brpc-rdma", "NOT_RDMA", sniffTimeoutMs, logger, maxPending, openConnections);
  }

  protected handshake(
    conn: TcpConn,
    log: (line: string) => void,
    onFirstBytes: () => void,
  ): Promise<{ state: string; conn: TcpConn | null }> {
    return serverHandshake(conn, this.options, openBrpcQp, this.sniffTimeoutMs, log, onFirstBytes);
  }
}
