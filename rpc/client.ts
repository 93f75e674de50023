/**
 * The verbus client: a baidu_std {@link Channel} (TCP: control plane and fallback) plus, when the
 * handshake succeeds, a fabric session that carries calls on the fastest path. Every call picks
 * its path with the selector (forced path, fabric health, error count, the server's published
 * pressure, sizes) and reports the path it really took.
 *
 * Async API: `submit` (start a call, get a handle) / `progress` (advance) / `poll` (result if
 * done) / `wait` (promise), and `call` (submit + wait) on top.
 *
 * Threading: a client belongs to the JS thread that created it.
 * @module
 */
import { setImmediate } from "node:timers";
import { z } from "zod";
import { VerbusError } from "../errors.ts";
import { FAILED, FULL } from "../transport/fabric.ts";
import {
  type CallOptions,
  type CallResult,
  type Channel,
  ChannelOptionsSchema,
  connect as connectChannel,
} from "./channel.ts";
import { ENOSERVICE, RpcError } from "./errors.ts";
import { parseOptions } from "../util/options.ts";
import { regionConfigSchema } from "./region/layout.ts";
import { formatTelemetry, type TelemetrySnapshot } from "./region/telemetry.ts";
import {
  type CallPath,
  callPathSchema,
  type SelectorConfig,
  selectorConfigSchema,
  selectPathOnly,
} from "./selector.ts";
import type { ClientSession, FabricResult } from "./session/client_session.ts";
import {
  establishFabric,
  fabricChoiceSchema,
  type FabricOutcome,
} from "./session/client_handshake.ts";
import { ProgressLoop, progressOptionsSchema } from "./session/progress.ts";
import { cpuYielder } from "../transport/cpu.ts";

/** Fault injection (tests and demos): what `verbus call --simulate-*` sets. */
export const faultsSchema = z.object({
  /** Treat the fabric as down: every call goes over TCP. */
  fabricDown: z.boolean().default(false),
  /** The Nth fabric operation fails (1-based); that call retries over TCP. 0 = never. */
  opFail: z.number().int().min(0).default(0),
  /** Start with this many fabric errors counted (over the threshold → TCP). */
  errors: z.number().int().min(0).default(0),
  /** Ask the server to publish ring or object-pool pressure for this session. */
  serverPressure: z.enum(["ring", "objpool"]).optional(),
}).strict();

/** Options of {@link connect}; unknown keys are rejected and messages name the field. */
export const clientOptionsSchema = ChannelOptionsSchema.extend({
  /** Which data plane to use: the best the two hosts share (auto), one fabric, or TCP only. */
  fabric: fabricChoiceSchema.default("auto"),
  /** The region to propose (the server may shrink it). */
  region: regionConfigSchema.partial().default({}),
  /** Path-selection thresholds. */
  selector: selectorConfigSchema.partial().default({}),
  /** Per-fabric provider options (e.g. `verbs: { sourceAddr, port }`, `urma: { library }`). */
  providerOptions: z.record(z.string(), z.unknown()).default({}),
  /** Force every call onto one path. */
  forcePath: callPathSchema.optional(),
  /** After a session fails, negotiate a new one this long after (doubling while it fails; 0 = never). */
  reestablishMs: z.number().int().min(0).max(3_600_000).default(2000),
  /** Refresh the server's control-page snapshot every N fabric calls (0 = never). */
  refreshEvery: z.number().int().min(0).default(64),
  faults: faultsSchema.default({ fabricDown: false, opFail: 0, errors: 0 }),
  /** Progress-loop tunables. */
  progress: progressOptionsSchema,
}).strict();
export type ClientOptions = z.input<typeof clientOptionsSchema>;

/** Options of one call. */
export interface ClientCallOptions extends CallOptions {
  /** Force this call's path. */
  forcePath?: CallPath;
  /** How large the caller expects the response to be (LAZY when ≥ the large threshold). */
  expectedResponseBytes?: number;
}

/** A call's answer and how it travelled. */
export interface ClientCallResult extends CallResult {
  /** The path the call really took. */
  path: CallPath;
  /** What carried it: "shm", "verbs", "urma", "urma (simulated)" or "tcp". */
  fabric: string;
}

/** Local counters of a client (`stats()`). */
export interface ClientStats {
  fabric: string;
  handshake: FabricOutcome["summary"];
  calls: Record<CallPath, number>;
  fallbacks: number;
  errors: number;
  latencyUs: Record<CallPath, number>;
  session: ClientSession["stats"] | null;
  server: TelemetrySnapshot | null;
}

const PATHS: CallPath[] = ["EAGER", "LAZY", "BULK", "TCP_FALLBACK"];

/** A connected verbus client. Create with {@link connect}. */
export class Client {
  readonly #channel: Channel;
  readonly #o: z.output<typeof clientOptionsSchema>;
  readonly #sel: SelectorConfig;
  #outcome: FabricOutcome;
  #session: ClientSession | null;
  #loop: ProgressLoop | null;
  readonly #yieldCpu: () => void;
  /** Re-establishing a failed session: the attempt in flight, and when the next may start. */
  #redo: Promise<void> | null = null;
  #redoAt = 0;
  #redoBackoff: number;
  #errors: number;
  #fabricOps = 0;
  #fallbacks = 0;
  readonly #calls: Record<CallPath, number> = { EAGER: 0, LAZY: 0, BULK: 0, TCP_FALLBACK: 0 };
  readonly #lat: Record<CallPath, number> = { EAGER: 0, LAZY: 0, BULK: 0, TCP_FALLBACK: 0 };
  readonly #handles = new Map<
    number,
    { promise: Promise<ClientCallResult>; result?: ClientCallResult; error?: unknown }
  >();
  #nextHandle = 1;

  /** @internal use {@link connect}. */
  constructor(
    channel: Channel,
    o: z.output<typeof clientOptionsSchema>,
    outcome: FabricOutcome,
    yieldCpu: () => void = () => {},
  ) {
    this.#channel = channel;
    this.#o = o;
    this.#sel = selectorConfigSchema.parse(o.selector);
    this.#outcome = outcome;
    this.#session = outcome.session;
    this.#errors = o.faults.errors;
    this.#yieldCpu = yieldCpu;
    this.#redoBackoff = o.reestablishMs;
    this.#loop = this.#session ? this.#makeLoop(this.#session) : null;
  }

  #makeLoop(s: ClientSession): ProgressLoop {
    return new ProgressLoop(
      () => this.#step(s),
      (ms) => this.#idleWait(s, ms),
      () => s.inflight > 0 && !s.failed,
      this.#o.progress,
      this.#yieldCpu,
    );
  }

  /**
   * A session that was ESTABLISHED and then failed (the server closed it, a QP error…) is
   * negotiated again on the same TCP channel after `reestablishMs` (doubling up to 30 s while
   * attempts fail). Calls meanwhile go over TCP. Never blocks a call.
   */
  #maybeReestablish(): void {
    const s = this.#session;
    if (!s || !s.failed || this.#redo || this.#o.reestablishMs === 0) return;
    const now = performance.now();
    if (now < this.#redoAt) return;
    if (this.#redoAt === 0) { // first notice: wait the back-off once before trying
      this.#redoAt = now + this.#redoBackoff;
      return;
    }
    this.#redo = (async () => {
      this.#loop?.stop();
      s.close();
      const outcome = await establishFabric(this.#channel, this.#o).catch(() => null);
      if (outcome?.session) {
        this.#outcome = outcome;
        this.#session = outcome.session;
        this.#loop = this.#makeLoop(outcome.session);
        this.#errors = this.#o.faults.errors; // a fresh session starts with a clean record
        this.#redoAt = 0;
        this.#redoBackoff = this.#o.reestablishMs;
      } else {
        this.#redoBackoff = Math.min(30_000, this.#redoBackoff * 2);
        this.#redoAt = performance.now() + this.#redoBackoff;
      }
    })().finally(() => (this.#redo = null));
  }

  /** The TCP channel (control plane / fallback). */
  get channel(): Channel {
    return this.#channel;
  }

  /** The fabric carrying fast-path calls ("shm", …) or "tcp". */
  get fabric(): string {
    return this.#session && !this.#session.failed ? this.#outcome.fabricLabel : "tcp";
  }

  /** How the handshake ended and why. */
  get handshake(): FabricOutcome["summary"] {
    return this.#outcome.summary;
  }

  /** Makes one call and resolves with its answer and the path it took. */
  async call(
    service: string,
    method: string,
    request: Uint8Array,
    options: ClientCallOptions = {},
  ): Promise<ClientCallResult> {
    const attachment = options.attachment ?? new Uint8Array(0);
    if (this.#session?.failed) this.#maybeReestablish();
    const s = this.#session;
    const forcePath = options.forcePath ?? this.#o.forcePath;
    const fabricUp = s !== null && !s.failed && !this.#o.faults.fabricDown;
    const m = s ? s.methodIndex(service, method) : -1;
    const path = selectPathOnly({
      forcePath,
      fabricUp: fabricUp && m >= 0,
      errorCount: this.#errors,
      requestBytes: request.length + attachment.length,
      expectedResponseBytes: options.expectedResponseBytes,
      snapshot: s?.snapshot ?? undefined,
      requestFitsSlot: s ? request.length + attachment.length <= s.slotSize : true,
    }, this.#sel);
    const t0 = performance.now();
    if (path !== "TCP_FALLBACK" && s) {
      if (this.#o.faults.opFail > 0 && ++this.#fabricOps === this.#o.faults.opFail) {
        this.#errors++;
        return await this.#tcp(service, method, request, options, t0, true);
      }
      const timeoutMs = options.timeoutMs ?? this.#o.timeoutMs;
      const logId = options.logId ?? 0;
      let p = s.submit(m, request, attachment, path, timeoutMs, logId);
      // No free slot (or BULK space) right now: wait for calls in flight to finish (backpressure).
      while (p === FULL && s.inflight > 0 && !s.failed) {
        await this.#slotFreed();
        p = s.submit(m, request, attachment, path, timeoutMs, logId);
      }
      if (p === FULL || p === FAILED) {
        if (p === FAILED) this.#errors++;
        return await this.#tcp(service, method, request, options, t0, true);
      }
      this.#loop!.start();
      let r: FabricResult;
      try {
        r = await p.promise;
      } catch (e) {
        if (e instanceof VerbusError && e.code === "FULL") {
          return await this.#tcp(service, method, request, options, t0, true); // server pool full: TCP
        }
        if (e instanceof VerbusError && e.code === "FABRIC") this.#errors++;
        throw e;
      }
      this.#calls[r.path]++;
      this.#ewma(r.path, t0);
      return { response: r.response, attachment: r.attachment, path: r.path, fabric: this.fabric };
    }
    return await this.#tcp(
      service,
      method,
      request,
      options,
      t0,
      s !== null && forcePath !== "TCP_FALLBACK",
    );
  }

  async #tcp(
    service: string,
    method: string,
    request: Uint8Array,
    options: CallOptions,
    t0: number,
    fallback: boolean,
  ): Promise<ClientCallResult> {
    if (fallback) this.#fallbacks++;
    const r = await this.#channel.call(service, method, request, options);
    this.#calls.TCP_FALLBACK++;
    this.#ewma("TCP_FALLBACK", t0);
    return { ...r, path: "TCP_FALLBACK", fabric: "tcp" };
  }

  readonly #slotWaiters: (() => void)[] = [];

  #slotFreed(): Promise<void> {
    this.#loop?.start();
    return new Promise((r) => this.#slotWaiters.push(r));
  }

  /** The idle wait in flight (a loop woken by a new call leaves it running; the next idle
   * period waits on it again instead of parking another thread). */
  #wait: { p: Promise<boolean>; started: number } | null = null;

  async #idleWait(s: ClientSession, ms: number): Promise<boolean> {
    // An overdue wait (it should have timed out) is replaced, so a lost one never parks us.
    if (!this.#wait || performance.now() - this.#wait.started > 2 * ms + 500) {
      const p: Promise<boolean> = s.endpoint.waitInbound(s.seenDoorbell, s.msToDeadline(ms))
        .finally(() => {
          if (this.#wait?.p === p) this.#wait = null;
        });
      this.#wait = { p, started: performance.now() };
    }
    const woke = await this.#wait.p;
    s.checkDeadlines();
    return woke;
  }

  #step(s: ClientSession): number {
    const n = s.progress();
    const busy = n + s.takeActivity();
    if (n > 0 && this.#slotWaiters.length > 0) {
      for (const w of this.#slotWaiters.splice(0, Math.max(1, s.freeSlots))) w();
    }
    return busy;
  }

  #ewma(path: CallPath, t0: number): void {
    const us = (performance.now() - t0) * 1000;
    this.#lat[path] = this.#lat[path] === 0 ? us : this.#lat[path] * 0.9 + us * 0.1;
  }

  /** Starts a call without waiting; returns a handle for poll()/wait(). */
  submit(
    service: string,
    method: string,
    request: Uint8Array,
    options: ClientCallOptions = {},
  ): number {
    const h = this.#nextHandle++;
    const entry: {
      promise: Promise<ClientCallResult>;
      result?: ClientCallResult;
      error?: unknown;
    } = {
      promise: this.call(service, method, request, options),
    };
    entry.promise.then((r) => (entry.result = r), (e) => (entry.error = e));
    this.#handles.set(h, entry);
    return h;
  }

  /** Advances the fabric session once; returns how many calls completed. */
  progress(): number {
    return this.#session?.progress() ?? 0;
  }

  /** The result of a finished call (the handle is then released), or undefined while running. Throws its error. */
  poll(handle: number): ClientCallResult | undefined {
    const e = this.#handles.get(handle);
    if (!e) throw new VerbusError("NOT_FOUND", `no call with handle ${handle}`);
    if (e.error !== undefined) {
      this.#handles.delete(handle);
      throw e.error;
    }
    if (e.result === undefined) return undefined;
    this.#handles.delete(handle);
    return e.result;
  }

  /** Waits for a call started with submit(); releases the handle. */
  async wait(handle: number): Promise<ClientCallResult> {
    const e = this.#handles.get(handle);
    if (!e) throw new VerbusError("NOT_FOUND", `no call with handle ${handle}`);
    try {
      return await e.promise;
    } finally {
      this.#handles.delete(handle);
    }
  }

  /** Refreshes the server snapshot now (one-sided read of its control page) and waits for it. */
  async refreshServerSnapshot(): Promise<TelemetrySnapshot | null> {
    const s = this.#session;
    if (!s || s.failed) return null;
    s.refreshSnapshot();
    for (let i = 0; i < 1000 && s.snapshotPending; i++) {
      s.progress();
      await new Promise((r) => setImmediate(r));
    }
    return s.snapshot;
  }

  /** The fabric session (lifecycle hooks, counters), or null on TCP. */
  get session(): ClientSession | null {
    return this.#session;
  }

  /** Sends queued RECLAIMs and waits until no fabric call is in flight. */
  async drain(timeoutMs = 5000): Promise<void> {
    const s = this.#session;
    if (!s) return;
    s.flushReclaims();
    const end = performance.now() + timeoutMs;
    while ((s.inflight > 0 || s.pendingReclaims > 0) && !s.failed && performance.now() < end) {
      s.flushReclaims();
      s.progress();
      await new Promise((r) => setImmediate(r));
    }
  }

  /** Local counters plus the server's last control-page snapshot. */
  stats(): ClientStats {
    return {
      fabric: this.fabric,
      handshake: this.handshake,
      calls: { ...this.#calls },
      fallbacks: this.#fallbacks,
      errors: this.#errors,
      latencyUs: Object.fromEntries(
        PATHS.map((p) => [p, Math.round(this.#lat[p] * 10) / 10]),
      ) as Record<CallPath, number>,
      session: this.#session ? { ...this.#session.stats } : null,
      server: this.#session?.snapshot ?? null,
    };
  }

  /** Human-readable stats. */
  formatStats(): string {
    const st = this.stats();
    const lines = [
      `fabric       ${st.fabric} (${st.handshake.state}${
        st.handshake.reason ? `: ${st.handshake.reason}` : ""
      })`,
      `calls        ${PATHS.map((p) => `${p} ${st.calls[p]}`).join(", ")}`,
      `fallbacks    ${st.fallbacks}    errors ${st.errors}`,
      `latency µs   ${PATHS.map((p) => `${p} ${st.latencyUs[p]}`).join(", ")}`,
    ];
    if (st.server) lines.push(formatTelemetry(st.server, "server control page (snapshot)"));
    return lines.join("\n");
  }

  /** Closes the fabric session and the channel. Safe twice. */
  async close(): Promise<void> {
    await this.#redo;
    this.#loop?.stop();
    this.#session?.close();
    await this.#channel.close();
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }
}

/**
 * Connects to a verbus (or brpc) server: TCP first, then the fabric handshake (unless
 * `fabric: "tcp"`). A refused or failed handshake leaves the client on TCP, with the reason in
 * `client.handshake`. Options are validated (INVALID_OPTIONS names the bad field).
 */
export async function connect(
  address: string | { host: string; port: number },
  options: ClientOptions = {},
): Promise<Client> {
  const o = parseOptions(clientOptionsSchema, options, "invalid connect() options");
  const {
    fabric: _f,
    region: _r,
    selector: _s,
    forcePath: _p,
    refreshEvery: _e,
    faults: _x,
    progress: _g,
    providerOptions: _v,
    reestablishMs: _q,
    ...chOpts
  } = o;
  const channel = await connectChannel(address, chOpts);
  let outcome: FabricOutcome;
  try {
    outcome = await establishFabric(channel, o);
  } catch (e) {
    await channel.close();
    throw e;
  }
  return new Client(channel, o, outcome, outcome.session ? await cpuYielder() : undefined);
}

export { ENOSERVICE, RpcError };
