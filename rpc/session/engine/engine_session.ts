/**
 * What the progress engine (`engine.ts`) asks of a session it drives — a fabric session, or
 * brpc's RDMA connection —, the registration it hands back, and its counters.
 *
 * Threading: the engine's JS thread.
 * @module
 */
import type { FabricEndpoint } from "../../../transport/fabric.ts";

/** A session as the engine drives it. */
export interface EngineSession {
  /** Its fabric endpoint (readiness token, or the doorbell wait of a fabric without one). */
  readonly endpoint: Pick<FabricEndpoint, "readiness" | "waitInbound">;
  /** One round of work; returns how much it did (0: nothing). Must not throw. */
  step(): number;
  /** True when it has local work that no announcement will signal (look again next turn). */
  wantsTurn(): boolean;
  /** The doorbell value its last round acted on (fabrics without readiness sleep until it moves). */
  seenDoorbell(): number;
  /**
   * False when nothing can arrive for it (a client with no call in flight): a fabric without a
   * readiness source then parks no wait for it — a parked wait would hold its endpoint's
   * resources until it times out. Default: always waits.
   */
  expectsInbound?(): boolean;
  /** Periodic work, about once a second (TTL sweeps). */
  tick?(): void;
  /** Milliseconds until its earliest deadline, at most `max` (bounds the engine's sleep). */
  msToDeadline?(max: number): number;
  /** Called after every sleep of the engine while it holds the engine (deadline checks). */
  afterSleep?(): void;
  /**
   * True when the peer this session awaits answers from is asleep (the spin policy does not spin
   * for a sleeper). Asked of sessions holding the engine with deadlines (clients with calls in flight).
   */
  peerAsleep?(): boolean;
}

/** A registration: `activate()` asks for a turn; `remove()` leaves the engine. Safe twice. */
export interface Registration {
  activate(): void;
  remove(): void;
}

/** Engine counters (tests and stats; turns and sleeps are in `loopCounters`). */
export interface EngineCounters {
  /** Session rounds run (a session driven in a turn counts once). */
  sessionRounds: number;
  /** Announcements collected from readiness sources. */
  announced: number;
  /** Holds taken (`ProgressEngine.hold`). */
  holds: number;
}
