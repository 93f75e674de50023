/**
 * Constants and shapes of the URMA fabric endpoint (endpoint.ts), shared with its control path
 * (setup.ts): depths, the aux-area layout, the fabric page, the proof message.
 * @module
 */
import type { UrmaContext } from "./context.ts";
import type { Jfc, Jfce } from "./jfc.ts";
import type { Jetty } from "./jetty.ts";
import type { Segment } from "./segment.ts";
import type { UrmaLib } from "./urma_lib.ts";

/** Bytes of the fabric page that follows each region inside its registered segment. */
export const FABRIC_PAGE = 4096;
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
/** Aux area: receive buffer (shared by every receive; only the proof SEND carries bytes). */
export const AUX_RECV = 0;
/** Aux area: bytes of the receive buffer. */
export const AUX_RECV_LEN = 256;
/** Aux area: source of the proof SEND. */
export const AUX_PROOF = 256;
/** Aux area: the bounce ring starts here. */
export const AUX_BOUNCE = 4096;
/** Immediate of the handshake proof SEND ('VBPR'). */
export const PROOF_IMM = 0x5642_5052;
/** Bytes of the proof message. */
export const PROOF_BYTES = 64;

/** The objects and memory an endpoint owns (closing `ctx` closes every other object). */
export interface UrmaEndpointParts {
  lib: UrmaLib;
  ctx: UrmaContext;
  jfce: Jfce;
  jfc: Jfc;
  jetty: Jetty;
  /** Region + fabric page, registered as `regionSeg`. */
  mem: Uint8Array;
  regionSize: number;
  regionSeg: Segment;
  /** Receive buffer, proof source and bounce ring, registered as `auxSeg`. */
  aux: Uint8Array;
  auxSeg: Segment;
  /** Size of the peer's region (its fabric page follows it). */
  remoteSize: number;
  /** True in RC mode (the jetty is bound to the peer; no loopback self-wake). */
  rc: boolean;
}

/** What the handshake proof SEND delivered (server side). */
export interface ReceivedProof {
  bytes: Uint8Array;
  length: number;
  uasid: number;
  id: number;
}
