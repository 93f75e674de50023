/**
 * The first half of a client session's call: {@link CallStarter.start} takes a free slot, has the
 * {@link RequestWriter} write the call's payload, descriptor and state word (BULK when the
 * request does not fit a slot or the path says so), and fills the slot's record (path, deadline,
 * what a TCP redo needs, whether its latency is sampled). The session checks that it is up before
 * it asks; the second half (answers, RECLAIMs, deadlines) is `ClientSession.progress`.
 *
 * Threading: the session's JS thread. The request and attachment bytes are copied before
 * `start` returns; `service`, `method`, `request` and `options` are kept in the slot's record.
 * @module
 */
import { type FabricEndpoint, FAILED, FULL, OK } from "../../../transport/fabric.ts";
import type { RegionLayout } from "../../region/layout.ts";
import { LATENCY_SAMPLE_EVERY } from "../../region/telemetry.ts";
import { nowThisTurn } from "../engine/turn_clock.ts";
import type { CallDeadlines } from "./call_deadlines.ts";
import { type CallSpec, NO_CALL_OPTIONS } from "./call_spec.ts";
import { NO_FREE_SLOT, SLOT_CALL, type SlotTable } from "./client_slots.ts";
import type { ClientSessionStats } from "./fabric_call.ts";
import type { RequestHeader, RequestWriter } from "./request_writer.ts";
import type { ServerSnapshot } from "./server_snapshot.ts";

/** One call in this many (the first included) has its latency measured with the real clock. */
const LATENCY_SAMPLE_MASK = LATENCY_SAMPLE_EVERY - 1;

/** The session parts a {@link CallStarter} works with (the session's own). */
export interface CallStarterInit {
  endpoint: FabricEndpoint;
  server: RegionLayout;
  slots: SlotTable;
  writer: RequestWriter;
  deadlines: CallDeadlines;
  snapshot: ServerSnapshot;
  stats: ClientSessionStats;
  /** Fails the session (a post the fabric refused). */
  fail(reason: string): void;
}

/** See the module documentation. */
export class CallStarter {
  readonly #init: CallStarterInit;
  /** Reused header of caller requests (filled per call). */
  readonly #header: RequestHeader = {
    method: 0,
    preferLazy: false,
    timeoutMs: 0,
    logId: 0,
    metaBytes: 0,
  };
  /** Calls started, for sampling their latency (one in {@link LATENCY_SAMPLE_MASK} + 1). */
  #sampleCount = 0;

  constructor(init: CallStarterInit) {
    this.#init = init;
  }

  /**
   * Posts `spec`'s request in a free slot and fills its record (`spec` is read before this
   * returns): the slot index, or FULL (no free slot, no BULK room, the send queue full) or
   * FAILED (metadata past the bound, or the fabric refused the post: the session is failed).
   */
  start(spec: CallSpec): number {
    const { slots, writer } = this.#init;
    const { request, attachment, path, timeoutMs, options } = spec;
    const metaBytes = options === NO_CALL_OPTIONS
      ? 0
      : spec.preparedMeta >= 0
      ? spec.preparedMeta
      : writer.prepareMeta(options);
    if (metaBytes < 0) return FAILED; // (the client checks the bound before it selects)
    const total = request.length + attachment.length;
    const bulk = path === "BULK" || total + metaBytes > this.#init.server.config.slotSize;
    const i = slots.take(SLOT_CALL);
    if (i === NO_FREE_SLOT) return FULL;
    const slot = slots.slot(i);
    if (bulk && !writer.reserveBulk(slot, total)) {
      slots.release(i);
      return FULL;
    }
    const deadline = timeoutMs > 0 ? nowThisTurn() + timeoutMs : Infinity;
    const header = this.#header;
    header.method = spec.methodIndex;
    header.preferLazy = path === "LAZY";
    header.timeoutMs = timeoutMs;
    header.logId = spec.logId;
    header.metaBytes = metaBytes;
    const st = writer.post(i, slot, header, request, attachment);
    if (st !== OK) {
      slots.release(i);
      if (st === FAILED) {
        this.#init.fail(`fabric post failed: ${this.#init.endpoint.failureReason ?? "?"}`);
      }
      return st === FULL ? FULL : FAILED;
    }
    slot.pending = true;
    slot.path = bulk ? "BULK" : path;
    slot.deadline = deadline;
    slot.method = spec.methodIndex;
    slot.startedAt = (this.#sampleCount++ & LATENCY_SAMPLE_MASK) === 0 ? performance.now() : 0;
    slot.service = spec.service;
    slot.methodName = spec.method;
    slot.request = request;
    slot.options = options;
    this.#init.deadlines.add(deadline);
    this.#init.stats.submitted++;
    this.#init.snapshot.countCall();
    return i;
  }
}
