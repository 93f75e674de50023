/**
 * The faults port of a URMA endpoint (transport/faults.ts): `bad-remote-key` re-imports the
 * peer's segment with a wrong token, so later one-sided requests complete with
 * URMA_CR_REM_ACCESS_ABORT_ERR at the peer; `out-of-bounds` aims later requests past the end of
 * the peer's segment (same status); `fail` fails the endpoint at once; `fail-next-write` makes
 * the next write return FAILED without posting it. Tests and demos only;
 * one JS thread (the endpoint's).
 * @module
 */
import { VerbusError } from "../../errors.ts";
import type { FabricFaults, FaultKind } from "../faults.ts";
import type { ImportedSegment } from "./segment.ts";
import { FABRIC_PAGE } from "./endpoint_config.ts";
import type { UrmaSendSide } from "./send_side.ts";

/** XORed into the peer's token to make a wrong one. */
const WRONG_TOKEN_MASK = 0x5a5a5a5a;

/** Fault injection into one URMA endpoint. */
export class UrmaFaults implements FabricFaults {
  readonly supported: readonly FaultKind[] = [
    "bad-remote-key",
    "out-of-bounds",
    "fail",
    "fail-next-write",
  ];
  /** Armed by `fail-next-write`: the endpoint refuses its next write (and disarms it). */
  failNextWrite = false;

  constructor(
    /** Imports a segment for this endpoint (closed with it). */
    private readonly importSegment: (
      descriptor: Uint8Array,
      token: number,
      blob: Uint8Array | null,
    ) => ImportedSegment,
    private readonly sendSide: UrmaSendSide,
    private readonly remoteSize: number,
    private readonly failEndpoint: (reason: string) => void,
  ) {}

  inject(kind: FaultKind, reason?: string): void {
    switch (kind) {
      case "bad-remote-key": {
        const seg = this.sendSide.peerSegment;
        const token = (seg.token ^ WRONG_TOKEN_MASK) >>> 0;
        // the same description as the handshake's (the library's blob where it gave one)
        this.sendSide.retargetPeerSegment(
          this.importSegment(seg.descriptorBytes, token, seg.blobBytes),
        );
        return;
      }
      case "out-of-bounds":
        this.sendSide.shiftRemoteAddresses(this.remoteSize + FABRIC_PAGE);
        return;
      case "fail":
        this.failEndpoint(reason ?? "fault injected");
        return;
      case "fail-next-write":
        this.failNextWrite = true;
        return;
      default:
        throw new VerbusError("INVALID_ARGUMENT", `urma cannot inject the fault "${kind}"`);
    }
  }
}
