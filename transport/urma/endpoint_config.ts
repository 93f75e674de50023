/**
 * Constants and shapes of one URMA session side, shared by its control path (port.ts,
 * handshake.ts) and its data path (endpoint.ts and its parts): queue depths, the aux-area
 * layout, the fabric page, the handshake's work requests.
 *
 * Memory of one side (both registered):
 * ```
 *  region segment (peer: READ | WRITE)             aux segment (local only)
 *  ├── local: the session region ──┤ fabric page ┤  ├ recv buf ┤ handshake ┤ bounce ring ┤
 *  fabric page @0 u32: receives the PEER has posted in total (its credit counter, peer-written)
 * ```
 * @module
 */
import type { UrmaContext } from "./context.ts";
import type { CrReader } from "./data_path.ts";
import type { Jfc, Jfce } from "./jfc.ts";
import type { EndpointHealth } from "./health.ts";
import type { Jetty, TargetJetty } from "./jetty.ts";
import type { ReceiveCredits } from "./receive_credits.ts";
import type { ImportedSegment, Segment } from "./segment.ts";
import type { UrmaLib } from "./urma_lib.ts";

/** Bytes of the fabric page that follows each region inside its registered segment. */
export const FABRIC_PAGE = 4096;
/** Offset, in the fabric page, of the u32 the peer writes its receive total into. */
export const CREDIT_WORD = 0;
/** Receives each side keeps posted (notification credits). */
export const RECV_DEPTH = 256;
/** Completion records of the JFC (sends and receives). */
export const JFC_DEPTH = 1024;
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

/** The objects and memory a connected endpoint owns (closing `ctx` closes every other object). */
export interface UrmaEndpointParts {
  readonly lib: UrmaLib;
  readonly ctx: UrmaContext;
  readonly jfce: Jfce;
  readonly jfc: Jfc;
  readonly jetty: Jetty;
  /** Region + fabric page, registered as `regionSeg`. */
  readonly mem: Uint8Array;
  readonly regionSize: number;
  readonly regionSeg: Segment;
  /** Receive buffer, handshake scratch and bounce ring, registered as `auxSeg`. */
  readonly aux: Uint8Array;
  readonly auxSeg: Segment;
  /** Size of the peer's region (its fabric page follows it). */
  readonly remoteSize: number;
  /** True in RC mode (the jetty is bound to the peer; no loopback self-wake). */
  readonly rc: boolean;
  /** The peer's region segment, imported (before its jetty). */
  readonly peerSegment: ImportedSegment;
  /** The peer's jetty, imported (and bound in RC mode). */
  readonly peerJetty: TargetJetty;
  /** The failure state the side's parts share (created with the prepared side). */
  readonly health: EndpointHealth;
  /** This side's posted receives (posted while the side was prepared). */
  readonly receives: ReceiveCredits;
  /** The completion records the handshake polled with (reused). */
  readonly completions: CrReader;
  /** Receives of the peer this side consumed during the handshake (its SEND). */
  readonly notificationsUsed: number;
}
