/**
 * The client side of one fabric session: the async pipeline (`submit` / `progress`, and the
 * callers' promises) over the session region. A call takes a free slot ({@link SlotTable}), the
 * {@link RequestWriter} writes its payload, descriptor and state word; `progress()` reaps fabric
 * completions, hands READY responses to the {@link ResponseReader} (inline copy-out, or a
 * one-sided LAZY read), sends RECLAIMs in batches ({@link ReclaimBatcher}), expires calls past
 * their deadline ({@link CallDeadlines}) and keeps the server's control-page snapshot fresh
 * ({@link ServerSnapshot}). A slot returns to FREE only after its result was consumed and every
 * completion for it was reaped. How the session ends (a failure, the server's notice, a close)
 * is {@link SessionEnd}'s.
 *
 * Threading: one JS thread. Buffers handed to `submit` are copied before it returns.
 * @module
 */
import { Completions, type FabricEndpoint, FAILED, FULL, OK } from "../../../transport/fabric.ts";
import { CONTROL, type RegionLayout, SESSION_CLOSED } from "../../region/layout.ts";
import type { TelemetrySnapshot } from "../../region/telemetry.ts";
import { OBJECT_OVERHEAD_BYTES } from "../../region/object_format.ts";
import { CallDeadlines } from "./call_deadlines.ts";
import { SlotTable } from "./client_slots.ts";
import { MethodTable } from "./method_table.ts";
import { SessionEnd } from "./client_session_end.ts";
import type { ClientCallOptions, ClientCallResult } from "../../client/client_options.ts";
import type { CallSpec } from "./call_spec.ts";
import { CallStarter } from "./call_starter.ts";
import {
  type AnswerSink,
  type CallHooks,
  type ClientSessionStats,
  newCallPromise,
} from "./fabric_call.ts";
import { ObjectLifecycleProbe } from "./object_lifecycle_probe.ts";
import { ReclaimBatcher } from "./reclaim_batcher.ts";
import { RequestWriter } from "./request_writer.ts";
import { ResponseReader } from "./response_reader.ts";
import { ServerSnapshot, SNAPSHOT_WR_ID } from "./server_snapshot.ts";
import { StagingArea } from "./staging_area.ts";

/** What a client session needs. */
export interface ClientSessionInit {
  endpoint: FabricEndpoint;
  server: RegionLayout;
  client: RegionLayout;
  /** "service/method" → index, from the server hello. */
  methods: readonly string[];
  /** Refresh the server's control-page snapshot every N calls (0 = never). */
  refreshEvery: number;
  /** Called when the session fails (fabric error or a violating peer). */
  onFail(reason: string): void;
}

/** One fabric session, client side. */
export class ClientSession {
  readonly #endpoint: FabricEndpoint;
  readonly #server: RegionLayout;
  readonly #client: RegionLayout;
  readonly #methods: MethodTable;
  readonly #slots: SlotTable;
  readonly #writer: RequestWriter;
  readonly #reader: ResponseReader;
  readonly #reclaims: ReclaimBatcher;
  readonly #deadlines: CallDeadlines;
  readonly #snapshot: ServerSnapshot;
  readonly #completions = new Completions(256);
  /** Posts calls into free slots (the first half of a call's life). */
  readonly #starter: CallStarter;
  /** The client's control page as u32 words (its state word says whether the server closed). */
  readonly #control: Int32Array;
  /** How the session ends (its reason is null while it runs). */
  readonly #end: SessionEnd;
  #seenDoorbell = 0;
  /**
   * The object-lifecycle seam (the `--lifecycle*` demos and tests): the last LAZY reference read,
   * and whether to leave objects unreclaimed (so the server's TTL sweep must free them).
   */
  readonly lifecycle: ObjectLifecycleProbe = new ObjectLifecycleProbe();
  /** Counters for stats (updated in place). */
  readonly stats: ClientSessionStats = {
    submitted: 0,
    sunk: 0,
    doorbells: 0,
    bulkDirect: 0,
    completed: 0,
    lazyReads: 0,
    lazyWaits: 0,
    reclaimsSent: 0,
    staleObjects: 0,
    completionBatches: 0,
  };

  /** Told once when the session fails or closes (its stream pipe ends its streams). */
  onEnded: ((reason: string) => void) | null = null;

  constructor(init: ClientSessionInit) {
    this.#endpoint = init.endpoint;
    this.#server = init.server;
    this.#client = init.client;
    this.#methods = new MethodTable(init.methods);
    const local = this.#endpoint.local, slotCount = this.#client.config.slots;
    this.#control = new Int32Array(
      local.buffer,
      local.byteOffset + this.#client.control.offset,
      (CONTROL.state >> 2) + 1,
    );
    const staging = new StagingArea(local, this.#client.staging, slotCount);
    this.#writer = new RequestWriter(this.#endpoint, this.#server, staging, this.stats);
    this.#slots = new SlotTable(slotCount, this.#writer.bulkArea, staging);
    this.#reclaims = new ReclaimBatcher(
      this.#server.config.slotSize,
      this.#slots,
      this.#writer,
      this.stats,
    );
    this.#reader = new ResponseReader({
      endpoint: this.#endpoint,
      server: this.#server,
      client: this.#client,
      slots: this.#slots,
      staging,
      reclaims: this.#reclaims,
      lifecycle: this.lifecycle,
      stats: this.stats,
      slotCount,
      fail: (reason) => this.fail(reason),
    });
    this.#deadlines = new CallDeadlines(this.#slots);
    this.#snapshot = new ServerSnapshot(
      this.#endpoint,
      this.#server,
      staging.snapshotView,
      init.refreshEvery,
    );
    this.#starter = new CallStarter({
      endpoint: this.#endpoint,
      server: this.#server,
      slots: this.#slots,
      writer: this.#writer,
      deadlines: this.#deadlines,
      snapshot: this.#snapshot,
      stats: this.stats,
      fail: (reason) => this.fail(reason),
    });
    this.#end = new SessionEnd({
      endpoint: this.#endpoint,
      slots: this.#slots,
      slotCount,
      ended: (reason) => this.onEnded?.(reason),
      onFail: init.onFail,
    });
  }

  /** True once the session failed; every call then goes over TCP. */
  get failed(): boolean {
    return this.#end.reason !== null;
  }

  /** Calls in flight (including internal RECLAIMs). */
  get inflight(): number {
    return this.#slots.busyCount;
  }

  /** Free request slots right now (0 = a submit would return FULL). */
  get freeSlots(): number {
    return this.#slots.freeCount;
  }

  /** The last control-page snapshot of the server, or null before the first refresh. */
  get snapshot(): TelemetrySnapshot | null {
    return this.#snapshot.latest;
  }

  /** True while a control-page snapshot read is in flight. */
  get snapshotPending(): boolean {
    return this.#snapshot.pending;
  }

  /** RECLAIM references queued but not yet sent. */
  get pendingReclaims(): number {
    return this.#reclaims.pending;
  }

  /** The fabric endpoint (for the progress loop's idle wait). */
  get endpoint(): FabricEndpoint {
    return this.#endpoint;
  }

  /** The negotiated layouts of both regions (tests and tools). */
  get layouts(): { server: RegionLayout; client: RegionLayout } {
    return { server: this.#server, client: this.#client };
  }

  /** Inline bytes a slot holds (request and response bodies). */
  get slotSize(): number {
    return this.#client.config.slotSize;
  }

  /** The largest answer the server's object pool holds (a call expecting more goes over TCP). */
  get maxPoolAnswerBytes(): number {
    const c = this.#server.config;
    return c.objectSlabs * c.objectSlabSize - OBJECT_OVERHEAD_BYTES;
  }

  /**
   * Encodes the metadata block of a call with `options` and returns its size (0 for none;
   * negative, minus the size, when it exceeds {@link metaBound}: that call goes over TCP). A
   * {@link submit} made right after, in the same turn, may pass the size as `prepared` and skip
   * a second encode.
   */
  metaBytes(options: ClientCallOptions): number {
    return this.#writer.prepareMeta(options);
  }

  /** The largest request metadata block (headers, request_id) this session carries. */
  get metaBound(): number {
    return this.#writer.metaBound;
  }

  /** The doorbell value the last progress() started from (idle waits sleep until it moves). */
  get seenDoorbell(): number {
    return this.#seenDoorbell;
  }

  /** Where settled calls are reported, and the fabric label of their results (the client sets it). */
  set hooks(hooks: CallHooks) {
    this.#slots.hooks = hooks;
  }

  /** The method index of "service/method", or -1 when the server did not list it. */
  methodIndex(service: string, method: string): number {
    return this.#methods.indexOf(service, method);
  }

  /** True (after failing the session) when the fabric endpoint failed. */
  #fabricFailed(): boolean {
    if (!this.#endpoint.failed) return false;
    this.fail(`fabric failed: ${this.#endpoint.failureReason ?? "unknown reason"}`);
    return true;
  }

  /** True (after failing the session) when the server wrote SESSION_CLOSED into our control page. */
  #serverClosed(): boolean { // a plain (tear-free) read: a flag written once, read per call
    if (this.#control[CONTROL.state >> 2] !== SESSION_CLOSED) return false;
    this.fail("the server closed the session");
    return true;
  }

  /**
   * Starts the call `spec` describes (read before this returns: the caller may reuse the
   * record). Returns the caller's promise, or the fabric contract's status: {@link FULL} (no free
   * slot, no BULK or staging room, or the send queue is full: retry after progress, or go over
   * TCP) or {@link FAILED} (the session is down: the call goes over TCP). The request and
   * attachment bytes are copied before return; `service`, `method`, `request` and `options` are
   * kept (not copied) until the call settles, for a TCP redo (see {@link CallHooks.redoOverTcp}).
   */
  submit(spec: CallSpec): Promise<ClientCallResult> | typeof FULL | typeof FAILED {
    const i = this.#start(spec);
    if (i < 0) return i === FULL ? FULL : FAILED;
    // The call's record is its slot's: only the promise is new.
    return newCallPromise(this.#slots.slot(i));
  }

  /**
   * Starts the call `spec` describes as {@link submit} does, without a promise: its answer goes
   * to `sink` under `tag` — handed over as a view of the session's memory, so the sink copies it
   * once, where it goes — and so does its failure. Returns {@link OK}, {@link FULL} or
   * {@link FAILED} (as {@link submit}; on either, the sink is never called for it).
   */
  submitTo(spec: CallSpec, sink: AnswerSink, tag: number): typeof OK | typeof FULL | typeof FAILED {
    const i = this.#start(spec);
    if (i < 0) return i === FULL ? FULL : FAILED;
    const slot = this.#slots.slot(i);
    slot.sink = sink;
    slot.tag = tag;
    this.stats.sunk++;
    return OK;
  }

  /** Posts `spec`'s request in a free slot and fills its record; the slot index, or FULL / FAILED. */
  #start(spec: CallSpec): number {
    if (this.#end.reason !== null || this.#fabricFailed() || this.#serverClosed()) return FAILED;
    return this.#starter.start(spec);
  }

  /**
   * Defers the doorbell of the calls submitted until {@link uncork}: a batch of calls shares one
   * flush and one kick. Nests; the caller must uncork (in a `finally`).
   */
  cork(): void {
    this.#writer.cork();
  }

  /** Ends a {@link cork}: rings one doorbell for every call submitted meanwhile. */
  uncork(): void {
    this.#writer.uncork();
  }

  /**
   * LAZY reads progress() posted since the last call (work that completed no call yet); resets
   * the count. The progress loop counts them as work so it does not go to sleep with such a
   * completion pending.
   */
  takeLazyReadsPosted(): number {
    return this.#reader.takeReadsPosted();
  }

  /** Reaps completions and responses; returns how many calls completed. */
  progress(): number {
    if (this.#end.reason !== null || this.#fabricFailed()) return 0;
    this.#seenDoorbell = this.#endpoint.doorbell();
    if (this.#serverClosed()) return 0;
    this.#writer.ringOwed(); // requests submitted since the last doorbell: tell the server first
    let done = 0;
    const cq = this.#completions, n = this.#endpoint.poll(cq);
    for (let k = 0; k < n; k++) {
      if (cq.wrId[k] === SNAPSHOT_WR_ID) this.#snapshot.complete(cq.status[k]);
      else done += this.#reader.readCompleted(cq.wrId[k], cq.status[k]);
    }
    const slots = this.#slots;
    for (let k = 0; k < slots.busyCount && this.#end.reason === null; k++) {
      const i = slots.busyAt(k);
      if (!this.#reader.isReady(i)) continue;
      const before = slots.busyCount;
      done += this.#reader.read(i);
      if (slots.busyCount < before) k--; // slot i was swapped out of the busy list
    }
    // LAZY reads that waited for staging: the completions and answers above gave some back.
    if (this.#end.reason === null) done += this.#reader.postWaiting();
    if (this.#reclaims.pending > 0 && slots.freeCount > 0 && this.#end.reason === null) {
      this.#reclaims.send();
    }
    this.#deadlines.countRound();
    if (done > 0) {
      this.stats.completed += done;
      this.stats.completionBatches++;
    }
    return done;
  }

  /** Milliseconds until the earliest call deadline (capped by `max`): bounds an idle sleep. */
  msToDeadline(max: number): number {
    return this.#deadlines.msToEarliest(max);
  }

  /** Rejects calls whose deadline passed (the progress loop calls this after an idle sleep). */
  checkDeadlines(): void {
    this.#deadlines.check();
  }

  /** Sends a RECLAIM of (object, generation) now — also a stale or repeated one (it is harmless). */
  reclaim(object: number, generation: number): void {
    this.#reclaims.queue(object >>> 0, generation >>> 0);
    this.#reclaims.send();
  }

  /** Sends the queued RECLAIMs now (when a slot is free). */
  flushReclaims(): void {
    this.#reclaims.send();
  }

  /** Posts a one-sided read of the server's control page into staging. */
  refreshSnapshot(): void {
    if (this.#end.reason === null) this.#snapshot.refresh();
  }

  /** Whether the session's Watch call is open: a failure here then waits for the server's notice. */
  set watching(open: boolean) {
    this.#end.watching = open;
  }

  /** The server ended the session (its Watch answered): see {@link SessionEnd.serverEnded}. */
  serverEnded(reason: string, untaken: readonly (readonly [number, number])[]): void {
    this.#end.serverEnded(reason, untaken);
  }

  /** Fails the session: later calls go over TCP (see {@link SessionEnd.fail}). Safe twice. */
  fail(reason: string): void {
    this.#end.fail(reason);
  }

  /** Closes the session and its endpoint (calls in flight reject). Safe twice. */
  close(): void {
    this.#end.close();
  }
}
