/**
 * A jetty's place in the process's URMA hub (hub.ts): the sink its completion records go to,
 * the JFC it completes on, and its readiness token. One JS thread.
 * @module
 */
import type { CrReader } from "./data_path.ts";
import type { Jfc } from "./jfc.ts";

/** Where a jetty's completions go. Called on the hub's JS thread. */
export interface CompletionSink {
  /** Record `i` of `records` belongs to this jetty. Must not reap (it may not post either). */
  onCompletion(records: CrReader, i: number): void;
  /** After a reap that delivered records here: repost, publish; may post and reap. */
  afterReap(): void;
  /** The JFC failed (overrun): the endpoint is unusable. */
  onJfcFailure(reason: string): void;
}

/** One JFC of the hub and the jetties it serves. */
export interface HubJfc {
  readonly jfc: Jfc;
  /** Jetties placed on it (pool entries included). */
  users: number;
  /** Why it failed, or null. */
  broken: string | null;
}

/** A jetty's place in the hub: its token and sink. Release it before deleting the jetty. */
export class HubBinding {
  /** @internal */ touched = false;
  /** @internal */ released = false;
  constructor(
    /** The endpoint's readiness token (what peers announce it with). */
    readonly token: number,
    /** The local jetty id completions name. */
    readonly jettyId: number,
    /** Where its completions go (the handshake's side first, then the endpoint). */
    public sink: CompletionSink,
    /** The JFC it completes on. */
    readonly home: HubJfc,
  ) {}
}
