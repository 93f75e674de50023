/**
 * The server's fabric side: the built-in `verbus.Fabric` service (Hello / Ack, the server half
 * of the handshake as an explicit state machine per connection), the sessions it establishes,
 * and the progress engine that serves them all — busy-polling with a budget while there is work,
 * then sleeping in each session's doorbell wait (off the JS thread) so an idle server uses no CPU.
 *
 * A session lives as long as the TCP connection it was negotiated on: when that connection
 * closes (the client died, or went away), its session is closed and its region released.
 * @module
 */
import { z } from "zod";
import type { FabricKind } from "../../transport/fabric.ts";
import { EREQUEST, RpcError } from "../errors.ts";
import type { CallContext, Dispatcher, Handler, Logger } from "../protocol/dispatch.ts";
import { computeLayout, type RegionConfig, regionConfigSchema } from "../region/layout.ts";
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
import {
  cpuYielder,
  ProgressLoop,
  type ProgressOptions,
  progressOptionsSchema,
} from "./progress.ts";
import { ServerSession } from "./server_session.ts";
import type { ServerFabricProvider, ServerOffer } from "./fabric_provider.ts";
import { serverProviders } from "./providers.ts";
import { serverMachine, type ServerState, type StateMachine } from "./state_machine.ts";

/** Server-side fabric options (zod: one source for types, defaults and messages). */
export const fabricHostOptionsSchema = z.object({
  /** Fabrics this server offers, best first. */
  fabrics: z.array(z.enum(["shm", "verbs", "urma"])).default(["shm"]),
  /** Per-fabric provider options (e.g. `verbs: { port, addr }`), validated by each provider. */
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
export type FabricHostOptions = z.input<typeof fabricHostOptionsSchema>;

interface Pending {
  machine: StateMachine<ServerState>;
  session: ServerSession;
  offer: ServerOffer;
  timer: ReturnType<typeof setTimeout>;
}

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

/** The fabric half of a server. Create with {@link FabricHost.create}. */
export class FabricHost {
  readonly #o: z.output<typeof fabricHostOptionsSchema>;
  #dispatcher: Dispatcher | null = null;
  readonly #logger: Logger;
  readonly #providers: ServerFabricProvider[];
  readonly #refused: Record<string, string>;
  readonly #methods: (readonly [string, string])[];
  readonly #pending = new Map<string, Pending>();
  readonly #sessions = new Set<ServerSession>();
  /** The established session of each connection (a new hello on it replaces the old session). */
  readonly #byPeer = new Map<string, ServerSession>();
  readonly #waits = new Map<ServerSession, { p: Promise<boolean>; started: number }>();
  readonly #loop: ProgressLoop;
  readonly #max: RegionConfig;
  #nextSession = 1;
  #lastSweep = 0;
  #closed = false;
  /** Handshake outcomes (tests, stats). */
  readonly history: { peer: string; state: ServerState; reason?: string }[] = [];

  private constructor(
    o: z.output<typeof fabricHostOptionsSchema>,
    services: Record<string, Record<string, unknown>>,
    logger: Logger,
    providers: ServerFabricProvider[],
    refused: Record<string, string>,
    yieldCpu: () => void,
  ) {
    this.#o = o;
    this.#logger = logger;
    this.#providers = providers;
    this.#refused = refused;
    this.#methods = Object.entries(services).filter(([s]) => s !== FABRIC_SERVICE)
      .flatMap(([s, ms]) => Object.keys(ms).map((m) => [s, m] as const));
    this.#max = regionConfigSchema.parse(o.region);
    this.#loop = new ProgressLoop(
      () => this.#step(),
      (ms) => this.#idle(ms),
      () => !this.#closed,
      o.progress as ProgressOptions,
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
    const region = negotiate(this.#max, hello.region);
    const decisions: ServerHello["decisions"] = {};
    let chosen: FabricKind | null = null;
    for (const f of hello.fabrics) {
      const why = this.#refuse(f, hello);
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
      batchBudget: this.#o.batchBudget,
      largeThreshold: this.#o.largeThreshold,
    };
    const provider = this.#providers.find((p) => p.kind === chosen);
    if (provider && this.#dispatcher) {
      const id = this.#nextSession++;
      const server = computeLayout("server", region), client = computeLayout("client", region);
      try {
        const offer = await provider.offer({
          sessionId: id,
          server,
          client,
          hello,
          params: hello.params[provider.kind],
          peerHost: ctx.peer.host,
        });
        const session = new ServerSession({
          id,
          endpoint: offer.endpoint,
          server,
          client,
          dispatcher: this.#dispatcher,
          methods: this.#methods,
          peer: ctx.peer,
          batchBudget: this.#o.batchBudget,
          largeThreshold: this.#o.largeThreshold,
          ttlMs: this.#o.objectTtlMs,
          logger: this.#logger,
          pressure: hello.simulate?.serverPressure,
        });
        reply.sessionId = id;
        reply.fabric = provider.kind;
        reply.offer = offer.offer;
        this.#pending.get(key)?.session.close("replaced by a new hello");
        const timer = setTimeout(() => this.#drop(key, "no ACK in time"), this.#o.ackTimeoutMs);
        this.#pending.set(key, { machine: m, session, offer, timer });
        // The session lives as long as the TCP connection (not the Hello call's deadline).
        ctx.connectionSignal.addEventListener("abort", () => this.#drop(key, "connection closed"), {
          once: true,
        });
        ctx.connectionSignal.addEventListener("abort", () => session.close("connection closed"), {
          once: true,
        });
        m.to("S_HELLO_SEND");
        m.to("S_ACK_WAIT");
      } catch (e) {
        decisions[provider.kind] = {
          state: "OFF",
          reason: `server could not set up ${provider.kind}: ${(e as Error).message}`,
        };
        m.to("FALLBACK_TCP", decisions[provider.kind].reason);
        this.#record(key, m);
      }
    } else {
      m.to(
        "FALLBACK_TCP",
        Object.entries(decisions).map(([f, d]) => `${f}: ${d.reason}`).join("; ") ||
          "client offered no fabric",
      );
      this.#record(key, m);
    }
    return encodeHello(reply);
  }

  #refuse(f: FabricKind, hello: ClientHello): string | undefined {
    if (!this.#o.fabrics.includes(f)) return `server does not offer ${f}`;
    if (this.#refused[f]) return this.#refused[f];
    const p = this.#providers.find((x) => x.kind === f);
    return p ? p.refuse(hello) : `server does not offer ${f}`;
  }

  #drop(key: string, reason: string): void {
    const p = this.#pending.get(key);
    if (!p) return;
    this.#pending.delete(key);
    clearTimeout(p.timer);
    p.machine.to("FALLBACK_TCP", reason);
    this.#record(key, p.machine);
    p.session.close(reason);
  }

  async #ack(req: Uint8Array, ctx: CallContext): Promise<Uint8Array> {
    const key = peerKey(ctx);
    const p = this.#pending.get(key);
    if (!p) throw new RpcError(EREQUEST, "ACK without a pending fabric hello on this connection");
    let v: number;
    try {
      v = decodeAck(req);
    } catch (e) {
      this.#drop(key, (e as Error).message);
      throw new RpcError(EREQUEST, (e as Error).message);
    }
    if (v !== ACK_ON) {
      this.#drop(key, "client declined the fabric (ACK 0)");
      return new Uint8Array(0);
    }
    if (!(await p.offer.confirm())) {
      this.#drop(key, "client did not prove it connected to the offered fabric");
      throw new RpcError(
        EREQUEST,
        "fabric proof missing: the client did not connect to what was offered",
      );
    }
    if (this.#pending.get(key) !== p) return new Uint8Array(0); // dropped meanwhile (connection closed)
    this.#pending.delete(key);
    clearTimeout(p.timer);
    p.machine.to("ESTABLISHED");
    this.#record(key, p.machine);
    p.session.signal.addEventListener("abort", () => {
      this.#sessions.delete(p.session);
      this.#waits.delete(p.session);
      if (this.#byPeer.get(key) === p.session) this.#byPeer.delete(key);
    }, { once: true });
    this.#sessions.add(p.session);
    this.#byPeer.set(key, p.session);
    this.#loop.start();
    return new Uint8Array(0);
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
      let w = this.#waits.get(s);
      // Reuse the session's parked wait — unless it is overdue (it should have timed out):
      // then a fresh one takes over, so a lost wait never parks this session.
      if (!w || performance.now() - w.started > 2 * ms + 500) {
        const started = performance.now();
        const p: Promise<boolean> = s.endpoint.waitInbound(s.seenDoorbell, ms).finally(() => {
          if (this.#waits.get(s)?.p === p) this.#waits.delete(s);
        });
        w = { p, started };
        this.#waits.set(s, w);
      }
      all.push(w.p);
    }
    return Promise.race(all);
  }

  /** Closes every session and stops the engine. Safe twice. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    for (const k of [...this.#pending.keys()]) this.#drop(k, "server closing");
    for (const s of [...this.#sessions]) s.close("server closing");
    this.#loop.stop();
    for (const p of this.#providers) p.close();
  }
}
