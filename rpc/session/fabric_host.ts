/**
 * The server's fabric side: the built-in `verbus.Fabric` service (Hello / Ack, the server half
 * of the handshake as an explicit state machine per connection), the sessions it establishes,
 * and the progress engine that serves them all — busy-polling with a budget while there is work,
 * then sleeping in each session's doorbell wait (off the JS thread) so an idle server uses no CPU.
 *
 * On a hello the chosen provider prepares an offer (`transport/provider.ts`: the server's region
 * exists, nothing is connected); on the client's ACK 1 the offer connects (checking the client's
 * proof) and only then does a {@link ServerSession} start over the connected endpoint. Every other
 * end of a pending handshake (no ACK in time, ACK 0, the connection closed, a new hello, the
 * server closing) aborts the offer, which releases what it took.
 *
 * A session lives as long as the TCP connection it was negotiated on: when that connection
 * closes (the client died, or went away), its session is closed and its region released.
 *
 * Threading: one JS thread (the server's); every method is control path except the progress
 * loop's poll rounds.
 * @module
 */
import { z } from "zod";
import { cpuYielder } from "../../transport/cpu.ts";
import type { FabricEndpoint } from "../../transport/fabric.ts";
import type {
  PeerInfo,
  ServerFabricProvider,
  ServerOffer,
  SessionSizes,
} from "../../transport/provider.ts";
import { type FabricKind, fabricKindSchema, serverProviders } from "../../transport/registry.ts";
import type { NetAddress } from "../../transport/tcp/tcp.ts";
import { EREQUEST, RpcError } from "../errors.ts";
import type { CallContext, Dispatcher, Handler, Logger } from "../protocol/dispatch.ts";
import {
  computeLayout,
  type RegionConfig,
  regionConfigSchema,
  type RegionLayout,
} from "../region/layout.ts";
import {
  ACK_ON,
  type ClientHello,
  clientHelloSchema,
  decodeAck,
  decodeHello,
  encodeHello,
  FABRIC_SERVICE,
  HELLO_VERSION,
  type ServerHello,
} from "./hello.ts";
import { ProgressLoop, type ProgressOptions, progressOptionsSchema } from "./progress.ts";
import { ServerSession } from "./server_session.ts";
import { serverMachine, type ServerState, type StateMachine } from "./state_machine.ts";

/** Server-side fabric options (zod: one source for types, defaults and messages). */
export const fabricHostOptionsSchema = z.object({
  /** Fabrics this server offers, best first. */
  fabrics: z.array(fabricKindSchema).default(["shm"]),
  /**
   * Per-fabric provider options keyed by fabric (e.g. `verbs: { port, addr }`); each provider
   * gets and validates its own part.
   */
  providerOptions: z.record(z.string(), z.unknown()).default({}),
  /** The largest region a client may get (its proposal is clamped to this). */
  region: regionConfigSchema.partial().default({}),
  /** READY requests handled per session per round. */
  batchBudget: z.number().int().min(1).max(4096).default(16),
  /** Responses at least this large go LAZY when the client prefers it. */
  largeThreshold: z.number().int().min(0).default(8192),
  /** Unreclaimed LAZY objects are freed after this long. */
  objectTtlMs: z.number().int().min(1).default(30_000),
  /** A client that does not ACK within this long loses its half-made session. */
  ackTimeoutMs: z.number().int().min(1).default(10_000),
  /** Progress-loop tunables. */
  progress: progressOptionsSchema,
}).strict();
/** Server-side fabric options as a caller writes them (every field optional). */
export type FabricHostOptions = z.input<typeof fabricHostOptionsSchema>;
type HostOptions = z.output<typeof fabricHostOptionsSchema>;

/** A handshake between its hello and its ACK: the offer is prepared, nothing is connected. */
interface PendingHandshake {
  readonly machine: StateMachine<ServerState>;
  readonly sessionId: number;
  readonly kind: FabricKind;
  readonly offer: ServerOffer;
  readonly serverLayout: RegionLayout;
  readonly clientLayout: RegionLayout;
  readonly peer: NetAddress;
  readonly pressure?: "ring" | "objpool";
  readonly ackTimer: ReturnType<typeof setTimeout>;
}

/** A session's parked doorbell wait (reused across idle rounds). */
interface ParkedWait {
  readonly woke: Promise<boolean>;
  readonly startedAt: number;
}

const NO_BYTES = new Uint8Array(0);

const peerKey = (ctx: CallContext) => `${ctx.peer.host}:${ctx.peer.port}`;

/** Clamps every field of the client's proposal to the server's maximum. */
function negotiate(max: RegionConfig, proposal: ClientHello["region"]): RegionConfig {
  const out = { ...max };
  for (const k of Object.keys(max) as (keyof RegionConfig)[]) {
    const v = proposal[k];
    if (typeof v === "number") out[k] = Math.min(v, max[k]);
  }
  return out;
}

/** The fabric half of a server. Create with {@link FabricHost.create}; one JS thread. */
export class FabricHost {
  readonly #options: HostOptions;
  #dispatcher: Dispatcher | null = null;
  readonly #logger: Logger;
  readonly #providers: ServerFabricProvider[];
  readonly #unavailable: Partial<Record<FabricKind, string>>;
  readonly #methods: (readonly [string, string])[];
  readonly #pending = new Map<string, PendingHandshake>();
  readonly #sessions = new Set<ServerSession>();
  /** The established session of each connection (a new hello on it replaces the old session). */
  readonly #byPeer = new Map<string, ServerSession>();
  readonly #waits = new Map<ServerSession, ParkedWait>();
  readonly #loop: ProgressLoop;
  readonly #maxRegion: RegionConfig;
  #nextSession = 1;
  #lastSweep = 0;
  #closed = false;
  /** Handshake outcomes (tests, stats). */
  readonly history: { peer: string; state: ServerState; reason?: string }[] = [];

  private constructor(
    options: HostOptions,
    services: Record<string, Record<string, unknown>>,
    logger: Logger,
    providers: ServerFabricProvider[],
    unavailable: Partial<Record<FabricKind, string>>,
    yieldCpu: () => void,
  ) {
    this.#options = options;
    this.#logger = logger;
    this.#providers = providers;
    this.#unavailable = unavailable;
    this.#methods = Object.entries(services).filter(([s]) => s !== FABRIC_SERVICE)
      .flatMap(([s, ms]) => Object.keys(ms).map((m) => [s, m] as const));
    this.#maxRegion = regionConfigSchema.parse(options.region);
    this.#loop = new ProgressLoop(
      () => this.#step(),
      (ms) => this.#idle(ms),
      () => !this.#closed,
      options.progress as ProgressOptions,
      yieldCpu,
    );
  }

  /** Builds the host and its providers (a fabric that cannot run here is refused, not an error). */
  static async create(
    options: FabricHostOptions,
    services: Record<string, Record<string, unknown>>,
    logger: Logger,
  ): Promise<FabricHost> {
    const o = fabricHostOptionsSchema.parse(options);
    const log = (l: string) => logger.info?.(l);
    const { providers, refused } = await serverProviders(o.fabrics, o.providerOptions, log);
    for (const [k, why] of Object.entries(refused)) {
      logger.warn(`fabric ${k} unavailable on this server: ${why}`);
    }
    return new FabricHost(o, services, logger, providers, refused, await cpuYielder());
  }

  /** Fabrics this server can offer (after the providers were built). */
  get fabrics(): FabricKind[] {
    return this.#providers.map((p) => p.kind);
  }

  /** Gives the host the server's dispatcher (fabric calls are served by it, like TCP ones). */
  attach(dispatcher: Dispatcher): void {
    this.#dispatcher = dispatcher;
  }

  /** The `verbus.Fabric` service to register with the dispatcher. */
  service(): Record<string, Handler> {
    return {
      Hello: (req, ctx) => this.#hello(req, ctx),
      Ack: (req, ctx) => this.#ack(req, ctx),
    };
  }

  /** Progress-loop counters (turns taken, idle sleeps). */
  get loopCounters(): { turns: number; sleeps: number } {
    return { ...this.#loop.counters };
  }

  /** Established sessions. */
  get sessions(): ReadonlySet<ServerSession> {
    return this.#sessions;
  }

  #record(peer: string, m: StateMachine<ServerState>): void {
    const last = m.history[m.history.length - 1];
    this.history.push({ peer, state: m.state, ...(last?.reason ? { reason: last.reason } : {}) });
  }

  /** Ends a handshake on TCP with `reason` (logged once by the machine) and records it. */
  #fallBack(key: string, m: StateMachine<ServerState>, reason: string): void {
    m.to("FALLBACK_TCP", reason);
    this.#record(key, m);
  }

  async #hello(req: Uint8Array, ctx: CallContext): Promise<Uint8Array> {
    const key = peerKey(ctx);
    const old = this.#byPeer.get(key);
    if (old) { // the client negotiates again (its session failed): the old one goes first
      this.#byPeer.delete(key);
      old.close("replaced by a new hello on the same connection");
    }
    const m = serverMachine(
      `fabric handshake with ${key}`,
      (l) => this.#logger.info?.(l) ?? this.#logger.warn(l),
    );
    let hello: ClientHello;
    try {
      hello = decodeHello(clientHelloSchema, req, "client hello");
    } catch (e) {
      m.to("FAILED", (e as Error).message);
      this.#record(key, m);
      throw new RpcError(EREQUEST, (e as Error).message);
    }
    m.to("S_SETUP");
    const region = negotiate(this.#maxRegion, hello.region);
    const peer: PeerInfo = { bootId: hello.bootId, pid: hello.pid, host: ctx.peer.host };
    const decisions: ServerHello["decisions"] = {};
    let chosen: FabricKind | null = null;
    for (const f of hello.fabrics) {
      const why = this.#refuse(f, peer, hello.params[f]);
      decisions[f] = why ? { state: "OFF", reason: why } : { state: "ON" };
      if (!why && chosen === null) chosen = f;
    }
    const reply: ServerHello = {
      version: HELLO_VERSION,
      sessionId: 0,
      fabric: null,
      decisions,
      region,
      methods: this.#methods.map(([s, m]) => `${s}/${m}`),
      batchBudget: this.#options.batchBudget,
      largeThreshold: this.#options.largeThreshold,
    };
    const provider = this.#providers.find((p) => p.kind === chosen);
    if (!provider || !this.#dispatcher) {
      this.#fallBack(
        key,
        m,
        Object.entries(decisions).map(([f, d]) => `${f}: ${d.reason}`).join("; ") ||
          "client offered no fabric",
      );
      return encodeHello(reply);
    }
    const sessionId = this.#nextSession++;
    const serverLayout = computeLayout("server", region);
    const clientLayout = computeLayout("client", region);
    const sizes: SessionSizes = {
      server: serverLayout.size,
      client: clientLayout.size,
      maxMessage: region.slotSize,
    };
    let offer: ServerOffer;
    try {
      offer = await provider.offer({ sessionId, sizes, peer, params: hello.params[provider.kind] });
    } catch (e) {
      const reason = `server could not set up ${provider.kind}: ${(e as Error).message}`;
      decisions[provider.kind] = { state: "OFF", reason };
      this.#fallBack(key, m, reason);
      return encodeHello(reply);
    }
    if (this.#closed || ctx.connectionSignal.aborted) { // went away while the offer was made
      const reason = this.#closed ? "server closing" : "connection closed";
      offer.abort(reason);
      this.#fallBack(key, m, reason);
      return encodeHello(reply);
    }
    reply.sessionId = sessionId;
    reply.fabric = provider.kind;
    reply.offer = offer.offer;
    this.#drop(key, "replaced by a new hello");
    const pending: PendingHandshake = {
      machine: m,
      sessionId,
      kind: provider.kind,
      offer,
      serverLayout,
      clientLayout,
      peer: ctx.peer,
      pressure: hello.simulate?.serverPressure,
      ackTimer: setTimeout(() => this.#drop(key, "no ACK in time", pending), this.#options.ackTimeoutMs),
    };
    this.#pending.set(key, pending);
    // The offer lives as long as the TCP connection (not the Hello call's deadline).
    ctx.connectionSignal.addEventListener(
      "abort",
      () => this.#drop(key, "connection closed", pending),
      { once: true },
    );
    m.to("S_HELLO_SEND");
    m.to("S_ACK_WAIT");
    return encodeHello(reply);
  }

  #refuse(f: FabricKind, peer: PeerInfo, params: unknown): string | undefined {
    if (!this.#options.fabrics.includes(f)) return `server does not offer ${f}`;
    const unavailable = this.#unavailable[f];
    if (unavailable) return unavailable;
    const p = this.#providers.find((x) => x.kind === f);
    return p ? p.refuse(peer, params) : `server does not offer ${f}`;
  }

  /**
   * Ends the pending handshake of `key` (only if it is still `only`, when given): the offer is
   * aborted and the handshake recorded as FALLBACK_TCP with `reason`.
   */
  #drop(key: string, reason: string, only?: PendingHandshake): void {
    const pending = this.#pending.get(key);
    if (!pending || (only && pending !== only)) return;
    this.#pending.delete(key);
    clearTimeout(pending.ackTimer);
    pending.offer.abort(reason);
    this.#fallBack(key, pending.machine, reason);
  }

  async #ack(req: Uint8Array, ctx: CallContext): Promise<Uint8Array> {
    const key = peerKey(ctx);
    const pending = this.#pending.get(key);
    if (!pending) {
      throw new RpcError(EREQUEST, "ACK without a pending fabric hello on this connection");
    }
    let value: number;
    try {
      value = decodeAck(req);
    } catch (e) {
      this.#drop(key, (e as Error).message);
      throw new RpcError(EREQUEST, (e as Error).message);
    }
    if (value !== ACK_ON) {
      this.#drop(key, "client declined the fabric (ACK 0)");
      return NO_BYTES;
    }
    // This ACK now owns the offer: no other end of the handshake can reach it.
    this.#pending.delete(key);
    clearTimeout(pending.ackTimer);
    let endpoint: FabricEndpoint;
    try {
      endpoint = await pending.offer.connect();
    } catch (e) {
      const reason = (e as Error).message;
      pending.offer.abort(reason);
      this.#fallBack(key, pending.machine, reason);
      throw new RpcError(EREQUEST, `fabric connection not confirmed: ${reason}`);
    }
    if (this.#closed || ctx.connectionSignal.aborted) { // went away while it connected
      endpoint.close();
      this.#fallBack(key, pending.machine, this.#closed ? "server closing" : "connection closed");
      return NO_BYTES;
    }
    const session = this.#startSession(pending, endpoint, key);
    ctx.connectionSignal.addEventListener("abort", () => session.close("connection closed"), {
      once: true,
    });
    return NO_BYTES;
  }

  /** Starts the session over the connected endpoint; throws (to the client) when it cannot. */
  #startSession(
    pending: PendingHandshake,
    endpoint: FabricEndpoint,
    key: string,
  ): ServerSession {
    let session: ServerSession;
    try {
      session = new ServerSession({
        id: pending.sessionId,
        endpoint,
        server: pending.serverLayout,
        client: pending.clientLayout,
        dispatcher: this.#dispatcher!,
        methods: this.#methods,
        peer: pending.peer,
        batchBudget: this.#options.batchBudget,
        largeThreshold: this.#options.largeThreshold,
        ttlMs: this.#options.objectTtlMs,
        logger: this.#logger,
        pressure: pending.pressure,
      });
    } catch (e) {
      endpoint.close();
      const reason = `server could not set up ${pending.kind}: ${(e as Error).message}`;
      this.#fallBack(key, pending.machine, reason);
      throw new RpcError(EREQUEST, reason);
    }
    pending.machine.to("ESTABLISHED");
    this.#record(key, pending.machine);
    session.signal.addEventListener("abort", () => {
      this.#sessions.delete(session);
      this.#waits.delete(session);
      if (this.#byPeer.get(key) === session) this.#byPeer.delete(key);
    }, { once: true });
    this.#sessions.add(session);
    this.#byPeer.set(key, session);
    this.#loop.start();
    return session;
  }

  #step(): number {
    let n = 0;
    for (const s of this.#sessions) n += s.poll();
    const now = performance.now();
    if (now - this.#lastSweep > 1000) {
      this.#lastSweep = now;
      for (const s of this.#sessions) s.sweep();
    }
    return n;
  }

  #idle(ms: number): Promise<boolean> {
    if (this.#sessions.size === 0) return new Promise((r) => setTimeout(() => r(false), ms));
    const all: Promise<boolean>[] = [];
    for (const s of this.#sessions) {
      let wait = this.#waits.get(s);
      // Reuse the session's parked wait — unless it is overdue (it should have timed out):
      // then a fresh one takes over, so a lost wait never parks this session.
      if (!wait || performance.now() - wait.startedAt > 2 * ms + 500) {
        const startedAt = performance.now();
        const woke: Promise<boolean> = s.endpoint.waitInbound(s.seenDoorbell, ms).finally(() => {
          if (this.#waits.get(s)?.woke === woke) this.#waits.delete(s);
        });
        wait = { woke, startedAt };
        this.#waits.set(s, wait);
      }
      all.push(wait.woke);
    }
    return Promise.race(all);
  }

  /** Closes every session, aborts every pending offer and stops the engine. Safe twice. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    for (const k of [...this.#pending.keys()]) this.#drop(k, "server closing");
    for (const s of [...this.#sessions]) s.close("server closing");
    this.#loop.stop();
    for (const p of this.#providers) p.close();
  }
}
