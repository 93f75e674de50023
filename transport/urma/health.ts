/**
 * Whether a URMA endpoint is still usable: the one failure reason and the closed flag its parts
 * (send side, receive credits, completion reaper, wake-up) share. One JS thread.
 * @module
 */
import { FAILED, OK } from "../fabric.ts";

/** The failure state of one endpoint, shared by its parts. */
export class EndpointHealth {
  /** Why the endpoint failed (first reason wins), or null. */
  failure: string | null = null;
  /** True once `close()` ran (every part then stops touching native objects). */
  closed = false;

  /** Records `reason` unless the endpoint already failed. */
  fail(reason: string): void {
    this.failure ??= reason;
  }

  /** OK while usable, else FAILED (a data-path status). */
  status(): number {
    return this.failure === null ? OK : FAILED;
  }
}
