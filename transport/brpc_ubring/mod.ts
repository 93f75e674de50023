/**
 * brpc's UBRing mode (apache/brpc `src/brpc/ubshm/`, POSIX shm backend): the entry points
 * `rpc/` uses. layout.ts describes the protocol; the handshake (handshake.ts, hello.ts,
 * objects.ts) is the control path, the rings, the poller and the stream connection (ring.ts,
 * poller.ts, stream_conn.ts) the data path.
 *
 * ```ts
 * const tcpConn = await tcp.connect({ host, port });
 * const out = await ubringClientHandshake(tcpConn, options, log);
 * // out.conn: a UBRing stream (ESTABLISHED) or the TCP connection (FALLBACK_TCP): same interface
 * ```
 * @module
 */
export {
  ubringClientHandshake,
  type UbringClientState,
  type UbringOutcome,
  ubringServerHandshake,
  type UbringServerState,
} from "./handshake.ts";
export {
  type BrpcUbringOptions,
  type BrpcUbringOptionsInput,
  brpcUbringOptionsSchema,
} from "./options.ts";
export { BrpcUbringConn, type BrpcUbringCounters } from "./stream_conn.ts";
