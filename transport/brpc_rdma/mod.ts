/**
 * brpc's RDMA mode (apache/brpc `src/brpc/rdma/`, handshake v2): the entry points `rpc/` uses.
 * The handshake codec and state machines, the flow control and the stream connection are
 * device-independent; the device side (`transport/verbs/brpc_qp.ts`) is loaded only when a
 * connection asks for a QP, so a host without RDMA never loads verbs code and falls back to TCP
 * with the reason.
 *
 * ```ts
 * const tcpConn = await tcp.connect({ host, port });
 * const out = await clientHandshake(tcpConn, options, openBrpcQp, log);
 * // out.conn: an RDMA stream (ESTABLISHED) or the TCP connection (FALLBACK_TCP): same interface
 * ```
 * @module
 */
import type { NetAddress } from "../tcp/tcp.ts";
import type { BrpcRdmaOptions } from "./options.ts";
import type { BrpcQp, BrpcQpFactory } from "./qp_port.ts";

export {
  type BrpcClientState,
  type BrpcServerState,
  clientHandshake,
  type HandshakeOutcome,
  serverHandshake,
} from "./handshake.ts";
export {
  type BrpcRdmaOptions,
  type BrpcRdmaOptionsInput,
  brpcRdmaOptionsSchema,
} from "./options.ts";
export { BrpcRdmaConn, type BrpcRdmaDriver, setBrpcRdmaDriver } from "./stream_conn.ts";
export type { BrpcRdmaCounters } from "./counters.ts";
export type { BrpcQp, BrpcQpFactory } from "./qp_port.ts";

let override: BrpcQpFactory | null = null;

/**
 * @internal Tests only: QPs come from `factory` (an in-memory pair) instead of the verbs fabric;
 * `null` restores the verbs fabric.
 */
export function _setBrpcQpFactory(factory: BrpcQpFactory | null): void {
  override = factory;
}

/**
 * Opens the RDMA device of `options` now, off any connection's path (libibverbs loaded, the
 * device's hub open, the GID for `host` picked) and prepares `options.preparedQps` QPs (later
 * handshakes take them and the pool refills after each). Resolves with the device name once both
 * are done; rejects (NoRdmaError) when this host cannot. With a test factory set, resolves "" at once.
 */
export async function prepareBrpcRdma(options: BrpcRdmaOptions, host: string): Promise<string> {
  if (override !== null) return "";
  const m = await import("../verbs/brpc_qp.ts");
  return m.prepareBrpcQps(options, host);
}

/** The verbs QP factory, loaded on first use (a load failure rejects: the caller falls back). */
export async function openBrpcQp(options: BrpcRdmaOptions, local: NetAddress): Promise<BrpcQp> {
  if (override !== null) return override(options, local);
  const m = await import("../verbs/brpc_qp.ts");
  return m.openBrpcQp(options, local);
}
