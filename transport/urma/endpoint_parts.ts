/**
 * What a connected URMA endpoint owns (the handshake hands it over, endpoint.ts and its parts use
 * it): its jetty, segments, imports and shared failure state. Types only.
 * @module
 */
import type { EndpointHealth } from "./health.ts";
import type { UrmaHub } from "./hub.ts";
import type { HubBinding } from "./hub_binding.ts";
import type { TargetJetty } from "./jetty.ts";
import type { PreparedJetty } from "./jetty_pool.ts";
import type { ReceiveCredits } from "./receive_credits.ts";
import type { ImportedSegment, Segment } from "./segment.ts";
import type { SideResources } from "./side_resources.ts";
import type { UrmaLib } from "./urma_lib.ts";

/**
 * The objects and memory a connected endpoint owns: its jetty (from the hub's pool, deleted on
 * close), its segments and imports — all children of the process's hub context.
 */
export interface UrmaEndpointParts {
  readonly lib: UrmaLib;
  readonly hub: UrmaHub;
  /** The jetty, its JFR, token and JFC (from the hub's pool). */
  readonly prepared: PreparedJetty;
  /** Its place in the hub (token, completion sink). */
  readonly binding: HubBinding;
  /** Everything above, to give back on close. */
  readonly resources: SideResources;
  /** The peer's readiness token: the immediate of my kicks. */
  readonly peerToken: number;
  /** Region + fabric page, registered as `regionSeg`. */
  readonly mem: Uint8Array;
  readonly regionSize: number;
  readonly regionSeg: Segment;
  /** Receive buffer, handshake scratch and bounce ring, registered as `auxSeg`. */
  readonly aux: Uint8Array;
  readonly auxSeg: Segment;
  /** Size of the peer's region (its fabric page follows it). */
  readonly remoteSize: number;
  /** True in RC mode (the jetty is bound to the peer). */
  readonly rc: boolean;
  /** The peer's region segment, imported (before its jetty). */
  readonly peerSegment: ImportedSegment;
  /** The peer's jetty, imported (and bound in RC mode). */
  readonly peerJetty: TargetJetty;
  /** The failure state the side's parts share (created with the prepared side). */
  readonly health: EndpointHealth;
  /** This side's posted receives (posted while the side was prepared). */
  readonly receives: ReceiveCredits;
  /** Receives of the peer this side consumed during the handshake (its SEND). */
  readonly notificationsUsed: number;
}
