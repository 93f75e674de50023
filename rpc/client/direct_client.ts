/**
 * The direct client: one server, through a baidu_std {@link Channel} (TCP: control plane and
 * fallback) plus, when the handshake succeeds, a fabric session that carries calls on the fastest
 * path. Every call picks
 * its path with the selector (forced path, fabric health, error count, the server's published
 * pressure, sizes) and reports the path it really took.
 *
 * Async API (`rpc_client.ts`, shared by every client kind): `submit` (start a call, get a
 * handle) / `progress` (advance) / `poll` (result if done) / `wait` (promise), and `call` on top.
 * Users reach it through `connect()` (`client.ts`), which picks the client kind by address.
 *
 * Threading: a client belongs to the JS thread that created it.
 * @module
 */
import { type CallOptions, type Channel, connect as connectChannel } from "../tcp/channel.ts";
import {
  type BatchCall,
  channelOptionsOf,
  type ClientCallOptions,
  type ClientCallResult,
  type ClientOptions,
  connectOptionsSchema,
  type ConnectSettings,
  faultsSchema,
} from "./client_options.ts";
import { parseOptions } from "../../util/options.ts";
import { ENOSERVICE, RpcError } from "../errors.ts";
import { ClientBase } from "./rpc_client.ts";
import { FabricLink } from "./fabric_link.ts";
import { CallRouter, VIA_FABRIC, VIA_TCP_REDO } from "./call_router.ts";
import type { TelemetrySnapshot } from "../region/telemetry.ts";
import { type ClientStats, formatClientStats, PathCounters } from "./client_stats.ts";
import type { ClientSession } from "../session/client/client_session.ts";
import { type CallSpec, copyCallSpec, NO_CALL_OPTIONS } from "../session/client/call_spec.ts";
import { FAILED, FULL, OK } from "../../transport/fabric.ts";
import type { AnswerSink, CallHooks } from "../session/client/fabric_call.ts";
import { establishFabric, type FabricOutcome } from "../session/handshake/client_handshake.ts";
import { ProgressEngine } from "../session/engine/engine.ts";
import type { FabricStreams } from "../stream/stream_ring.ts";

export { connectOptionsSchema, faultsSchema };
export type { BatchCall, ClientCallOptions, ClientCallResult, ClientOptions, ClientStats };
const NO_OPTIONS: ClientCallOptions = NO_CALL_OPTIONS;

/** A client connected to one server. Create with `connect()` (`client.ts`) or {@link connectDirect}. */
export class Client extends ClientBase<ClientCallResult> {
  readonly #channel: Channel;
  readonly #settings: ConnectSettings;
  /** Picks each call's path and fills its fabric record. */
  readonly #router: CallRouter;
  readonly #fabric: FabricLink;
  /** Fabric errors counted against the session (the selector moves to TCP past a threshold). */
  #errors: number;
  /** Calls per path, fallbacks, latency EWMAs. */
  readonly #counts = new PathCounters();
  /** What the fabric session reports per call (one object for the client's life). */
  readonly #hooks: CallHooks;

  /** @internal use {@link connect}. */
  constructor(
    channel: Channel,
    settings: ConnectSettings,
    outcome: FabricOutcome,
    engine: ProgressEngine,
  ) {
    super();
    this.#channel = channel;
    this.#settings = settings;
    this.#router = new CallRouter(settings);
    this.#errors = settings.faults.errors;
    // A fresh session starts with a clean record.
    this.#fabric = new FabricLink(
      channel,
      settings,
      outcome,
      engine,
      () => {
        this.#errors = settings.faults.errors;
        if (this.#fabric.session) this.#fabric.session.hooks = this.#hooks;
      },
    );
    // deno-lint-ignore no-this-alias
    const client = this;
    this.#hooks = {
      get fabricLabel() {
        return client.#fabric.outcome.fabricLabel;
      },
      completed(path, startedAt) {
        client.#counts.completed(path, startedAt);
      },
      fabricError() {
        client.#errors++;
      },
      redoOverTcp(service, method, request, options) {
        return client.#tcp(service, method, request, options, true); // the server never took it
      },
    };
    if (this.#fabric.session) this.#fabric.session.hooks = this.#hooks;
    // The channel counts the TCP calls it carries without a fabric session (see `call`).
    channel._observe((ms) => {
      this.#counts.calls.TCP_FALLBACK++;
      this.#counts.fold("TCP_FALLBACK", ms * 1000);
    });
  }

  /** The TCP channel (control plane / fallback). */
  get channel(): Channel {
    return this.#channel;
  }

  /**
   * @internal The stream pipe of the live fabric session (streams opened through this client
   * ride it), or null: streams go over the TCP connection.
   */
  _fabricStreams(): FabricStreams | null {
    return this.#fabric.streams();
  }

  /** @internal The calls' default timeout (what a stream's opening call waits when given none). */
  get _timeoutMs(): number {
    return this.#settings.timeoutMs;
  }

  /** The fabric carrying fast-path calls ("shm", …) or "tcp". */
  get fabric(): string {
    const s = this.#fabric.session;
    return s && !s.failed ? this.#fabric.outcome.fabricLabel : "tcp";
  }

  /** How the handshake ended and why. */
  get handshake(): FabricOutcome["summary"] {
    return this.#fabric.outcome.summary;
  }

  /**
   * Makes one call and resolves with its answer and the path it took. A fabric call costs its
   * promise and its result: it is posted before this returns, and its slot's record carries it.
   */
  call(
    service: string,
    method: string,
    request: Uint8Array,
    options: ClientCallOptions = NO_OPTIONS,
  ): Promise<ClientCallResult> {
    // No fabric session: straight to the channel, which builds the result and counts the call
    // (no promise of this layer, no copy of the result).
    const s = this.#fabric.current();
    if (s === null) return this.#channel._callAsClient(service, method, request, options);
    try {
      const how = this.#router.select(s, this.#errors, service, method, request, options);
      if (how !== VIA_FABRIC) {
        return this.#tcp(service, method, request, options, how === VIA_TCP_REDO);
      }
      const spec = this.#router.spec; // filled by select; submit reads it before it returns
      const p = s.submit(spec);
      if (typeof p === "object") {
        this.#fabric.startLoop();
        return p;
      }
      if (p === FULL && s.inflight > 0 && !s.failed) {
        return this.#callWhenSlotFree(s, copyCallSpec(spec));
      }
      if (p === FAILED) this.#errors++;
      return this.#tcp(service, method, request, options, true);
    } catch (e) {
      return Promise.reject(e);
    }
  }

  /**
   * Makes one call as {@link call} does, its outcome handed to `sink` under `tag` instead of a
   * promise. A call posted on the fabric at once costs no promise and no result: its answer is
   * handed to `sink.answer` as a view of the session's memory, from the session's progress. A
   * call that goes over TCP, or waits for a free slot, runs as {@link call} and settles the sink
   * from its promise (`sink.result` / `sink.fail`). Returns true when posted without a promise.
   * `request` and the attachment are read until the call settles (as {@link call} keeps them).
   */
  callTo(
    service: string,
    method: string,
    request: Uint8Array,
    options: ClientCallOptions,
    sink: AnswerSink,
    tag: number,
  ): boolean {
    const s = this.#fabric.current();
    if (s !== null) {
      let how: number;
      try {
        how = this.#router.select(s, this.#errors, service, method, request, options);
      } catch (e) {
        sink.fail(tag, e);
        return false;
      }
      if (how === VIA_FABRIC && s.submitTo(this.#router.spec, sink, tag) === OK) {
        this.#fabric.startLoop();
        return true;
      }
    }
    // TCP, or no slot now, or the session failed: as call() does (it counts and retries).
    this.call(service, method, request, options).then(
      (r) => sink.result(tag, r),
      (e) => sink.fail(tag, e),
    );
    return false;
  }

  /** No free slot (or BULK space) right now: waits for calls in flight to finish (backpressure). */
  async #callWhenSlotFree(s: ClientSession, spec: CallSpec): Promise<ClientCallResult> {
    let p: ReturnType<ClientSession["submit"]> = FULL;
    while (p === FULL && s.inflight > 0 && !s.failed) {
      await this.#fabric.waitForSlot();
      p = s.submit(spec);
    }
    if (typeof p === "object") {
      this.#fabric.startLoop();
      return await p;
    }
    if (p === FAILED) this.#errors++;
    return await this.#tcp(spec.service, spec.method, spec.request, spec.options, true);
  }

  /**
   * Makes many calls at once. Every call that goes over the fabric is posted before one shared
   * doorbell — one flush and one wake-up of the server for the whole batch —, so a caller with
   * many requests ready pays the notification once. Resolves like `Promise.all`: the answers in
   * order, or the first error. Calls that must wait for a free slot, and TCP calls, proceed as
   * `call()` does. The caller's request bytes are copied before this returns; main thread only.
   */
  override callMany(calls: readonly BatchCall[]): Promise<ClientCallResult[]> {
    const s = this.#fabric.current();
    s?.cork();
    try {
      return Promise.all(calls.map((c) => this.call(c.service, c.method, c.request, c.options)));
    } finally {
      s?.uncork();
    }
  }

  async #tcp(
    service: string,
    method: string,
    request: Uint8Array,
    options: CallOptions,
    fallback: boolean,
  ): Promise<ClientCallResult> {
    const t0 = performance.now();
    if (fallback) this.#counts.fallbacks++;
    const r = await this.#channel.call(service, method, request, options);
    this.#counts.completed("TCP_FALLBACK", t0);
    return { ...r, path: "TCP_FALLBACK", fabric: "tcp" };
  }

  /** Advances the fabric session once; returns how many calls completed. */
  progress(): number {
    return this.#fabric.session?.progress() ?? 0;
  }
  /** Refreshes the server snapshot now (one-sided read of its control page) and waits for it. */
  refreshServerSnapshot(): Promise<TelemetrySnapshot | null> {
    return this.#fabric.refreshSnapshot();
  }

  /** The fabric session (object-lifecycle seam, counters), or null on TCP. */
  get session(): ClientSession | null {
    return this.#fabric.session;
  }

  /** Sends queued RECLAIMs and waits until no fabric call is in flight (at most `timeoutMs`). */
  drain(timeoutMs = 5000): Promise<void> {
    return this.#fabric.drain(timeoutMs);
  }

  /** Local counters plus the server's last control-page snapshot. */
  stats(): ClientStats {
    return {
      fabric: this.fabric,
      handshake: this.handshake,
      ...this.#counts.snapshot(),
      errors: this.#errors,
      session: this.#fabric.session ? { ...this.#fabric.session.stats } : null,
      server: this.#fabric.session?.snapshot ?? null,
    };
  }

  /** Human-readable stats. */
  formatStats(): string {
    return formatClientStats(this.stats());
  }

  /** Closes the fabric session and the channel. Safe twice. */
  async close(): Promise<void> {
    await this.#fabric.close();
    await this.#channel.close();
  }
}

/**
 * Connects to one verbus (or brpc) server: TCP first, then the fabric handshake (unless
 * `fabric: "tcp"`). A refused or failed handshake leaves the client on TCP, with the reason in
 * `client.handshake`. Options are validated (INVALID_OPTIONS names the bad field).
 */
export async function connectDirect(
  address: string | { host: string; port: number },
  options: ClientOptions = {},
): Promise<Client> {
  const settings = parseOptions(connectOptionsSchema, options, "connect() options");
  const channel = await connectChannel(address, channelOptionsOf(settings));
  let outcome: FabricOutcome;
  try {
    outcome = await establishFabric(channel, settings);
  } catch (e) {
    await channel.close();
    throw e;
  }
  return new Client(channel, settings, outcome, await ProgressEngine.forThread());
}

export { ENOSERVICE, RpcError };
