/**
 * The client's copy of the server's control-page telemetry: every `refreshEvery` calls (and on
 * demand) one signaled one-sided read brings the server's control page into the first page of
 * staging; its completion turns the bytes into a {@link TelemetrySnapshot} the path selector reads
 * (ring and object-pool pressure).
 *
 * Work-request ids of a client session: a LAZY read of slot i uses wr id i (slots ≤ 65536);
 * the snapshot read uses {@link SNAPSHOT_WR_ID}, above every slot index.
 *
 * Ownership and threading: one per client session, on its JS thread. The read lands in staging
 * (the session's region); each completed refresh allocates one snapshot object.
 * @module
 */
import { type FabricEndpoint, OK, SIGNALED } from "../../../transport/fabric.ts";
import { CONTROL, type RegionLayout } from "../../region/layout.ts";
import { Telemetry, type TelemetrySnapshot, telemetryView } from "../../region/telemetry.ts";

/** wr id of the control-page snapshot read (no slot index reaches it). */
export const SNAPSHOT_WR_ID = 0x1f_ffff;

/** See the module documentation. */
export class ServerSnapshot {
  readonly #endpoint: FabricEndpoint;
  readonly #server: RegionLayout;
  readonly #target: Uint8Array;
  readonly #refreshEvery: number;
  #callsSinceRefresh = 0;
  #pending = false;
  #latest: TelemetrySnapshot | null = null;

  /**
   * Reads `server`'s control page into `target` (a registered view of at least 4 KiB), every
   * `refreshEvery` calls (0 = only on demand).
   */
  constructor(
    endpoint: FabricEndpoint,
    server: RegionLayout,
    target: Uint8Array,
    refreshEvery: number,
  ) {
    this.#endpoint = endpoint;
    this.#server = server;
    this.#target = target;
    this.#refreshEvery = refreshEvery;
  }

  /** The last snapshot, or null before the first refresh completed. */
  get latest(): TelemetrySnapshot | null {
    return this.#latest;
  }

  /** True while a snapshot read is in flight. */
  get pending(): boolean {
    return this.#pending;
  }

  /** Counts one call; refreshes when `refreshEvery` calls passed since the last refresh. */
  countCall(): void {
    if (this.#refreshEvery > 0 && ++this.#callsSinceRefresh >= this.#refreshEvery) this.refresh();
  }

  /** Posts the read of the server's control page (unless one is in flight). */
  refresh(): void {
    this.#callsSinceRefresh = 0;
    if (this.#pending) return;
    const st = this.#endpoint.read(
      SNAPSHOT_WR_ID,
      this.#target,
      this.#server.control.offset,
      SIGNALED,
    );
    if (st === OK) {
      this.#pending = true;
      this.#endpoint.flush();
    }
  }

  /** The read's completion with fabric `status` (0 = the bytes arrived). */
  complete(status: number): void {
    this.#pending = false;
    if (status !== 0) return;
    const t = this.#target;
    this.#latest = new Telemetry(telemetryView(t.buffer, t.byteOffset + CONTROL.telemetry))
      .snapshot();
  }
}
