/**
 * Where a URMA endpoint's completions go: the hub (hub.ts) polls the process's JFC and hands
 * every record naming this endpoint's jetty to this sink — send completions to the send side (in
 * posting order), receive completions to the receive credits — and after the reap lets the
 * wake-up repost and publish. A failed receive, or a failed JFC, fails the endpoint. Allocates
 * nothing. One JS thread.
 * @module
 */
import type { CrReader } from "./data_path.ts";
import { crStatusName } from "./errors.ts";
import type { EndpointHealth } from "./health.ts";
import type { CompletionSink } from "./hub_binding.ts";
import type { ReceiveCredits } from "./receive_credits.ts";
import type { UrmaSendSide } from "./send_side.ts";

/** The completion sink of one endpoint. */
export class EndpointCompletions implements CompletionSink {
  constructor(
    private readonly health: EndpointHealth,
    private readonly sendSide: UrmaSendSide,
    private readonly receives: ReceiveCredits,
    private readonly after: () => void,
  ) {}

  onCompletion(records: CrReader, i: number): void {
    const status = records.status(i);
    if (!records.isRecv(i)) {
      this.sendSide.onCompletion(status, records.userCtx(i));
      return;
    }
    this.receives.onReceive();
    if (status !== 0 && !this.health.closed) {
      this.health.fail(`receive completed with ${crStatusName(status)}`);
    }
  }

  afterReap(): void {
    if (!this.health.closed) this.after();
  }

  onJfcFailure(reason: string): void {
    this.health.fail(reason);
  }
}
