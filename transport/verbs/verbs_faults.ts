/**
 * The verbs endpoint's faults port (transport/faults.ts): breaks the endpoint on purpose for
 * tests and demos. `bad-remote-key` flips bits of the peer's rkey in every later work request
 * and `out-of-bounds` aims them past the end of the peer's region, so the peer's NIC answers
 * the next one with a remote access error; `fail` fails the endpoint at once. Data path and
 * handshake code never call this. One JS thread (the endpoint's).
 * @module
 */
import { VerbusError } from "../../errors.ts";
import type { FabricFaults, FaultKind } from "../faults.ts";
import type { VerbsSendPath } from "./send_path.ts";

/** The faults port of one verbs endpoint. */
export class VerbsFaults implements FabricFaults {
  readonly supported: readonly FaultKind[] = ["bad-remote-key", "out-of-bounds", "fail"];

  constructor(
    private readonly send: VerbsSendPath,
    /** Bytes the peer's region MR covers (its rpc region, write log and tail). */
    private readonly remoteExtent: number,
    private readonly failEndpoint: (reason: string) => void,
  ) {}

  inject(kind: FaultKind, reason = "fault injected"): void {
    switch (kind) {
      case "bad-remote-key":
        return this.send.corruptRemoteKey();
      case "out-of-bounds":
        return this.send.skewRemoteAddress(this.remoteExtent + 4096);
      case "fail":
        return this.failEndpoint(reason);
      default:
        throw new VerbusError("INVALID_ARGUMENT", `the verbs fabric cannot inject "${kind}"`);
    }
  }
}
