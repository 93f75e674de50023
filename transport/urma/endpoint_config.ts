/**
 * Constants of one URMA session side, shared by its control path (port.ts, handshake.ts) and
 * its data path (endpoint.ts and its parts): queue depths, the aux-area layout, the fabric page,
 * the handshake's work requests. A leaf: the shape of a connected side is endpoint_parts.ts.
 *
 * Memory of one side (both registered):
 * ```
 *  region segment (peer: READ | WRITE)             aux segment (local only)
 *  ├── local: the session region ──┤ fabric page ┤  ├ recv buf ┤ handshake ┤ bounce ring ┤
 *  fabric page @0 u32: receives the PEER has posted in total (its credit counter, peer-written)
 * ```
 * @module
 */
/** Bytes of the fabric page that follows each region inside its registered segment. */
export const FABRIC_PAGE = 4096;
/** Offset, in the fabric page, of the u32 the peer writes its receive total into. */
export const CREDIT_WORD = 0;
/** Receives each side keeps posted (notification credits; each may become a JFC record). */
export const RECV_DEPTH = 32;
/** Signaled send requests one endpoint may have in flight (JFC records it may cause). */
export const SIGNALED_PER_JETTY = 16;
/**
 * Error records one endpoint may cause on top (a failed batch completes every request with an
 * error): also the most requests it batches before a post.
 */
export const CQE_ERROR_MARGIN = 16;
/** Depth the hub asks its JFC for (the device's maximum when smaller). */
export const JFC_DEPTH_WANTED = 65536;
/** Readiness tokens of one hub (URMA endpoints of one process). */
export const MAX_TOKENS = 65536;
/** Send queue depth. */
export const SQ_DEPTH = 1024;
/** SGEs per work request. */
export const SGE_PER_WR = 8;
/** Every this many requests one is signaled internally (send queue and bounce ring drain). */
export const SIGNAL_EVERY = 64;
/** Completion records reaped per `urma_poll_jfc`. */
export const REAP_BATCH = 64;
/** Aux area: receive buffer (shared by every receive; only the handshake SEND carries bytes). */
export const AUX_RECV = 0;
/** Aux area: bytes of the receive buffer. */
export const AUX_RECV_LEN = 256;
/** Aux area: the handshake's scratch (source of the segment SEND, target of the stamp READ). */
export const AUX_HANDSHAKE = 256;
/** Aux area: the bounce ring starts here. */
export const AUX_BOUNCE = 4096;
/** Immediate of the client's handshake SEND that carries its region segment ('VBSG'). */
export const SEGMENT_IMM = 0x5642_5347;
