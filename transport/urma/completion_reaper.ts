/**
 * Completion reaping of a URMA endpoint: `urma_poll_jfc` into the preallocated
 * {@link CrReader}, each record handed to its owner — send completions to the send side (in
 * posting order), receive completions to the receive credits — and consumed receives reposted
 * in batches. A failed receive or poll fails the endpoint. Allocates nothing. One JS thread.
 * @module
 */
import type { CrReader } from "./data_path.ts";
import type { UrmaEndpointParts } from "./endpoint_config.ts";
import { crStatusName } from "./errors.ts";
import type { EndpointHealth } from "./health.ts";
import type { Jfc } from "./jfc.ts";
import type { ReceiveCredits } from "./receive_credits.ts";
import type { UrmaSendSide } from "./send_side.ts";

/** Polls one endpoint's JFC. */
export class CompletionReaper {
  readonly #jfc: Jfc;
  readonly #records: CrReader;
  readonly #sendSide: UrmaSendSide;
  readonly #receives: ReceiveCredits;
  readonly #health: EndpointHealth;

  constructor(parts: UrmaEndpointParts, sendSide: UrmaSendSide) {
    this.#jfc = parts.jfc;
    this.#records = parts.completions;
    this.#receives = parts.receives;
    this.#health = parts.health;
    this.#sendSide = sendSide;
  }

  /**
   * Reaps every completion the JFC holds, then reposts receives if a batch was consumed; returns
   * how many records (sends and receives) it reaped.
   */
  reap(): number {
    const records = this.#records;
    let reaped = 0;
    for (;;) {
      let count: number;
      try {
        count = this.#jfc.poll(records);
      } catch (e) {
        this.#health.fail((e as Error).message);
        return reaped;
      }
      for (let i = 0; i < count; i++) {
        if (records.isRecv(i)) this.#onReceive(records.status(i));
        else this.#sendSide.onCompletion(records.status(i), records.userCtx(i));
      }
      reaped += count;
      if (count < records.max) break;
    }
    this.#receives.repostBatched();
    return reaped;
  }

  #onReceive(status: number): void {
    this.#receives.onReceive();
    if (status !== 0 && !this.#health.closed) {
      this.#health.fail(`receive completed with ${crStatusName(status)}`);
    }
  }
}
