/**
 * brpc's UBRing mode for the baidu_std {@link ../tcp/channel.ts Channel} and {@link ../server/server.ts Server}:
 * the connection under them starts with brpc's UBRing handshake and, once ESTABLISHED, carries
 * the baidu_std byte stream over two shared-memory rings (transport/brpc_ubring/). Chosen
 * explicitly with the `brpcUbring` option, never guessed; same host only.
 *
 * Client: FALLBACK_TCP (no object could be made or mapped, the server answered zeroed versions)
 * keeps the same connection on TCP; a server not in UBRing mode (it closed on the hello, or
 * answered something else) is dialled again over plain TCP (`dialChannel`); both are logged once
 * per cause. Any other FAILED ending rejects the connect with `ConnectFailedError`.
 * Server: a connection whose first two bytes are not "UB" is a plain baidu_std peer (as brpc
 * serves TCP clients on a UBRing server); each other ending is logged once per cause.
 *
 * Threading: the channel's / server's JS thread.
 * @module
 */
import { z } from "zod";
import {
  BrpcUbringConn,
  type BrpcUbringOptions,
  brpcUbringOptionsSchema,
  ubringClientHandshake,
  ubringServerHandshake,
} from "../../transport/brpc_ubring/mod.ts";
import type { TcpConn } from "../../transport/tcp/tcp.ts";
import { HandshakeAcceptor } from "../server/handshake_acceptor.ts";
import type { Logger } from "../protocol/dispatch.ts";

/** The `brpcUbring` option of `serve()` and `connect()`: off (default) or its options. */
export const brpcUbringOptionSchema: z.ZodOptional<
  z.ZodUnion<readonly [z.ZodLiteral<false>, typeof brpcUbringOptionsSchema]>
> = z.union([z.literal(false), brpcUbringOptionsSchema]).optional();
export { brpcUbringOptionsSchema };
export type { BrpcUbringOptions };

/** Whether `conn` is an established brpc UBRing connection. */
export function isUbringConn(conn: TcpConn | null): boolean {
  return conn instanceof BrpcUbringConn;
}

/**
 * The client's handshake on a TCP connection just opened (resolves, never rejects): the
 * connection to use, or null with the reason, and whether the server is not in UBRing mode.
 */
export async function ubringDial(
  conn: TcpConn,
  options: BrpcUbringOptions,
  log: (line: string) => void,
): Promise<{ conn: TcpConn | null; notServer: boolean; reason?: string; history: unknown }> {
  const out = await ubringClientHandshake(conn, options, log);
  return {
    conn: out.conn,
    notServer: out.notUbringServer === true,
    reason: out.reason,
    history: out.history,
  };
}

/** brpc's UBRing handshake on each accepted connection (see {@link HandshakeAcceptor}). */
export class BrpcUbringAcceptor extends HandshakeAcceptor {
  constructor(
    readonly options: BrpcUbringOptions,
    sniffTimeoutMs: number,
    logger: Logger,
    maxPending?: number,
    openConnections?: () => number,
  ) {
    super("brpc-ubring", "NOT_UBRING", sniffTimeoutMs, logger, maxPending, openConnections);
  }

  protected handshake(
    conn: TcpConn,
    log: (line: string) => void,
    onFirstBytes: () => void,
  ): Promise<{ state: string; conn: TcpConn | null }> {
    return ubringServerHandshake(conn, this.options, this.sniffTimeoutMs, log, onFirstBytes);
  }
}
