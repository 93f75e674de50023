/**
 * The server's fabric side: the built-in `verbus.Fabric` service (its handshake is
 * `server_handshake.ts`) and the sessions it established. The sessions are driven by the
 * process's one progress engine (`engine.ts`), which the host holds while it is open: it finds the
 * sessions with work without looking at idle ones and sleeps in one wait for all of them, so an
 * idle server uses no CPU whatever the number of sessions.
 *
 * A session lives as long as the TCP connection it was negotiated on: when that connection
 * closes (the client died, or went away), its session is closed and its region released.
 *
 * Threading: one JS thread (the server's).
 * @module
 */
import { z } from "zod";
import type { ServerFabricProvider } from "../../../transport/provider.ts";
import { fabricDescriptorSchema } from "../../../transport/fabric_descriptor.ts";
import { type AnyFabricKind, fabricNameSchema } from "../../../transport/fabric_kinds.ts";
import { fabricsWith, serverProviders } from "../../../transport/registry.ts";
import type {
  CallContext,
  Dispatcher,
  Handler,
  Logger,
  ServerCall,
} from "../../protocol/dispatch.ts";
import { regionConfigSchema } from "../../region/layout.ts";
import type { PartialDefault } from "../../../util/options.ts";
import { ELIMIT, EREQUEST, RpcError } from "../../errors.ts";
import { type Bye, byeSchema, decodeHello, encodeBye, FABRIC_SERVICE } from "../handshake/hello.ts";
import { type EngineSession, ProgressEngine, type Registration } from "../engine/engine.ts";
import { type ProgressOptions, progressOptionsSchema } from "../engine/progress.ts";
import type { ServerSession } from "./server_session.ts";
import { DEFAULT_HOLD } from "./held_answers.ts";
import {
  connectionKey,
  type HandshakeHost,
  ServerHandshakes,
} from "../handshake/server_handshake.ts";
import type { HandshakeOutcome } from "../handshake/handshake_log.ts";
import { peerText } from "../../../util/log_text.ts";
import type { EndNotice } from "../../../util/end_notice.ts";

/** Server-side fabric options (zod: one source for types, defaults and messages). */
export const fabricHostOptionsSchema: z.ZodObject<{
  fabrics: z.ZodDefault<z.ZodArray<typeof fabricNameSchema>>;
  extraFabrics: z.ZodDefault<z.ZodArray<typeof fabricDescriptorSchema>>;
  providerOptions: z.ZodDefault<z.ZodRecord<z.ZodString, z.ZodUnknown>>;
  region: PartialDefault<(typeof regionConfigSchema)["shape"]>;
  batchBudget: z.ZodDefault<z.ZodNumber>;
  largeThreshold: z.ZodDefault<z.ZodNumber>;
  objectTtlMs: z.ZodDefault<z.ZodNumber>;
  heldAnswers: z.ZodDefault<z.ZodNumber>;
  heldAnswerBytes: z.ZodDefault<z.ZodNumber>;
  heldAnswerMs: z.ZodDefault<z.ZodNumber>;
  ackTimeoutMs: z.ZodDefault<z.ZodNumber>;
  maxSessions: z.ZodDefault<z.ZodNumber>;
  maxHandshakes: z.ZodDefault<z.ZodNumber>;
  historyLength: z.ZodDefault<z.ZodNumber>;
  requestBufferBytes: z.ZodDefault<z.ZodNumber>;
  progress: typeof progressOptionsSchema;
}, z.core.$strict> = z.object({
  /** Fabrics this server offers, best first (registered kinds, or kinds of `extraFabrics`). */
  fabrics: z.array(fabricNameSchema).default(["shm"]),
  /**
   * Fabric descriptors beside the registered ones (a fabric under development, a test's
   * throw-away fabric): `fabrics` may name their kinds.
   */
  extraFabrics: z.array(fabricDescriptorSchema).default([]),
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
  /**
   * Answers a session holds at most while its object pool has no room for them (their handlers
   * ran: they wait for RECLAIMs or the TTL sweep rather than being redone; past this bound such
   * a call fails with ERESPONSE saying so; 0: none is held). See `session_answers.ts`.
   */
  heldAnswers: z.number().int().min(0).max(65536).default(DEFAULT_HOLD.heldAnswers),
  /** Bytes of answers a session holds at most that way (the handlers' response buffers). */
  heldAnswerBytes: z.number().int().min(0).max(2 ** 40).default(DEFAULT_HOLD.heldAnswerBytes),
  /**
   * The longest an answer is held when its call has no deadline (with one, it gives up shortly
   * before the deadline).
   */
  heldAnswerMs: z.number().int().min(1).max(3_600_000).default(DEFAULT_HOLD.heldAnswerMs),
  /** A client that does not ACK within this long loses its half-made session. */
  ackTimeoutMs: z.number().int().min(1).max(600_000).default(10_000),
  /**
   * Established fabric sessions at most (each holds a region); a Hello past it is answered
   * FALLBACK_TCP with the reason (logged once while the server stays at the limit).
   */
  maxSessions: z.number().int().min(0).max(1 << 20).default(16_384),
  /** Handshakes in progress (Hello answered, no ACK yet) at most; past it: FALLBACK_TCP. */
  maxHandshakes: z.number().int().min(1).max(1 << 20).default(256),
  /** Handshake outcomes kept in `history`, and distinct fallback causes the log remembers. */
  historyLength: z.number().int().min(1).max(1 << 16).default(256),
  /**
   * Bytes of reused buffers the sessions lend the large requests of handlers marked
   * `borrowsRequest` (0: every request is copied fresh, as for other handlers).
   */
  requestBufferBytes: z.number().int().min(0).max(4096 * 1024 * 1024).default(8 * 1024 * 1024),
  /** Progress-loop tunables. */
  progress: progressOptionsSchema,
}).strict().superRefine((o, ctx) => {
  const known = fabricsWith(o.extraFabrics);
  if (typeof known === "string") {
    ctx.addIssue({ code: "custom", path: ["extraFabrics"], message: known });
    return;
  }
  o.fabrics.forEach((f, i) => {
    if (known.some((d) => d.kind === f)) return;
    const kinds = known.map((d) => d.kind).join(", ");
    ctx.addIssue({
      code: "custom",
      path: ["fabrics", i],
      message: `unknown fabric ${f}: expected one of ${kinds}`,
    });
  });
});
/** Server-side fabric options as a caller writes them (every field optional). */
export type FabricHostOptions = z.input<typeof fabricHostOptionsSchema>;
type HostOptions = z.output<typeof fabricHostOptionsSchema>;

const NO_BYTES = new Uint8Array(0);

/** A server session as the engine drives it. */
function drivenSession(session: ServerSession): EngineSession {
  return {
    endpoint: session.endpoint,
    step: () => session.poll(),
    wantsTurn: () => session.seenDoorbell === -1, // its batch budget ran out: more may be READY
    seenDoorbell: () => session.seenDoorbell,
    tick: () => void session.sweep(),
  };
}

/** What a Watch is answered when `session` ended: why, and the requests it never took. */
function noticeOf(session: ServerSession): Bye {
  return {
    sessionId: session.id,
    reason: session.closedReason ?? "closed",
    untaken: [...session.untaken],
  };
}

/** Notices of ended sessions kept for late Watch calls (one per connection, oldest dropped). */
const ENDED_KEPT = 1024;

/**
 * The notice of a session that ended, and the TCP connection it lived on: only a Watch on that
 * same connection is told (a later connection from the same address and port — a reused port,
 * a NAT — is another caller). The connection is compared, not listened to: a listener would
 * count as activity and keep the connection from its idle timeout.
 */
interface EndedNotice {
  readonly bye: Bye;
  readonly connection: EndNotice;
}

/** The fabric half of a server. Create with {@link FabricHost.create}; one JS thread. */
export class FabricHost {
  #dispatcher: Dispatcher | null = null;
  readonly #providers: ServerFabricProvider[];
  readonly #handshakes: ServerHandshakes;
  readonly #sessions = new Set<ServerSession>();
  /** The established session of each connection (a new hello on it replaces the old session). */
  readonly #byConnection = new Map<string, ServerSession>();
  readonly #registrations = new Map<ServerSession, Registration>();
  /**
   * The notice of the last session that ended on each connection, for a Watch that arrives after
   * its session ended (the client opens it right after the ACK): at most {@link ENDED_KEPT}.
   */
  readonly #ended = new Map<string, EndedNotice>();
  /** Sessions with an open Watch (one each). */
  readonly #watched = new Set<ServerSession>();
  readonly #engine: ProgressEngine;
  readonly #logger: Logger;
  #closed = false;

  private constructor(
    options: HostOptions,
    services: Record<string, Record<string, unknown>>,
    logger: Logger,
    providers: ServerFabricProvider[],
    unavailable: Partial<Record<string, string>>,
    engine: ProgressEngine,
  ) {
    this.#providers = providers;
    this.#logger = logger;
    const methods = Object.entries(services).filter(([s]) => s !== FABRIC_SERVICE)
      .flatMap(([s, ms]) => Object.keys(ms).map((m) => [s, m] as const));
    const host: HandshakeHost = {
      dispatcher: () => this.#dispatcher,
      closed: () => this.#closed,
      retire: (key) => this.#retire(key),
      sessionCount: () => this.#sessions.size,
      adopt: (session, key, connection) => this.#adopt(session, key, connection),
    };
    this.#handshakes = new ServerHandshakes(
      host,
      { ...options, maxRegion: regionConfigSchema.parse(options.region) },
      providers,
      unavailable,
      methods,
      logger,
    );
    this.#engine = engine;
    engine.configure(options.progress as ProgressOptions);
  }

  /** Builds the host and its providers (a fabric that cannot run here is refused, not an error). */
  static async create(
    options: FabricHostOptions,
    services: Record<string, Record<string, unknown>>,
    logger: Logger,
  ): Promise<FabricHost> {
    const o = fabricHostOptionsSchema.parse(options);
    const log = (l: string) => logger.info?.(l);
    const fabrics = fabricsWith(o.extraFabrics) as Exclude<ReturnType<typeof fabricsWith>, string>;
    const { providers, refused } = await serverProviders(
      o.fabrics,
      o.providerOptions,
      log,
      fabrics,
    );
    for (const [k, why] of Object.entries(refused)) {
      // a capability of this host, said once at start: info (a logger without info gets warn)
      (logger.info ?? logger.warn).call(logger, `fabric ${k} unavailable on this server: ${why}`);
    }
    return new FabricHost(
      o,
      services,
      logger,
      providers,
      refused,
      await ProgressEngine.forThread(),
    );
  }

  /** Fabrics this server can offer (after the providers were built). */
  get fabrics(): AnyFabricKind[] {
    return this.#providers.map((p) => p.kind);
  }

  /** Gives the host the server's dispatcher (fabric calls are served by it, like TCP ones). */
  attach(dispatcher: Dispatcher): void {
    this.#dispatcher = dispatcher;
  }

  /** The `verbus.Fabric` service to register with the dispatcher. */
  service(): Record<string, Handler> {
    return {
      // The dispatcher's contexts are its ServerCalls (the handshake listens on `sink.lifetime`).
      Hello: (req, ctx) => this.#handshakes.hello(req, ctx as ServerCall),
      Ack: (req, ctx) => this.#handshakes.ack(req, ctx as ServerCall),
      Bye: (req, ctx) => this.#bye(req, ctx),
      Watch: (req, ctx) => this.#watch(req, ctx),
    };
  }

  /**
   * The `Watch` handler: the client of an established session keeps this one call open on the TCP
   * connection, and it is answered (a {@link Bye} naming the reason) when the server ends the
   * session for any reason of its own — its endpoint failed (an overrun on its JFC, a completion
   * error), a peer violation, the server closing — so the client fails over at once instead of
   * waiting for its calls' deadlines. Answered at once when the connection has no such session.
   */
  #watch(req: Uint8Array, ctx: CallContext): Uint8Array | Promise<Uint8Array> {
    let w: Bye;
    try {
      w = decodeHello(byeSchema, req, "client watch");
    } catch (e) {
      throw new RpcError(EREQUEST, (e as Error).message);
    }
    const sessionId = w.sessionId;
    const key = connectionKey(ctx), s = this.#byConnection.get(key);
    if (!s || s.id !== sessionId) {
      const ended = this.#ended.get(key);
      const connection = (ctx as ServerCall).sink.lifetime;
      if (ended?.connection === connection && ended.bye.sessionId === sessionId) {
        return encodeBye(ended.bye);
      }
      return encodeBye({ sessionId, reason: "no such session on this connection" });
    }
    const told = () => encodeBye(noticeOf(s));
    if (s.closedReason !== null) return told();
    // One open Watch per session: a Watch is exempt from the connection's cap on calls in flight.
    if (this.#watched.has(s)) {
      throw new RpcError(ELIMIT, `a Watch is already open for fabric session ${sessionId}`);
    }
    this.#watched.add(s);
    return new Promise((resolve) =>
      s.lifetime.onEnd(() => {
        this.#watched.delete(s);
        resolve(told());
      })
    );
  }

  /**
   * The `Bye` handler: the client's session failed (or was taken down); the connection's session
   * closes now if it is still that one (a stale Bye after a new Hello changes nothing).
   */
  #bye(req: Uint8Array, ctx: CallContext): Uint8Array {
    let bye: Bye;
    try {
      bye = decodeHello(byeSchema, req, "client bye");
    } catch (e) {
      throw new RpcError(EREQUEST, (e as Error).message);
    }
    const key = connectionKey(ctx);
    const s = this.#byConnection.get(key);
    if (s && s.id === bye.sessionId) {
      this.#byConnection.delete(key);
      const reason = peerText(bye.reason); // the client's words: escaped, bounded
      this.#logger.info?.(`fabric session ${s.id} (${key}) ended by the client: ${reason}`);
      s.close(`the client ended it: ${reason}`);
    }
    return NO_BYTES;
  }

  /** Handshake outcomes (tests, stats). */
  get history(): readonly HandshakeOutcome[] {
    return this.#handshakes.history;
  }

  /** Handshakes between Hello and ACK now (tests, stats). */
  get handshakesInProgress(): number {
    return this.#handshakes.inProgress;
  }

  /** The process engine's loop counters (turns taken, idle sleeps; shared by every user). */
  get loopCounters(): { turns: number; sleeps: number } {
    return this.#engine.loopCounters;
  }

  /** The process's progress engine (tests and stats). */
  get engine(): ProgressEngine {
    return this.#engine;
  }

  /** Established sessions. */
  get sessions(): ReadonlySet<ServerSession> {
    return this.#sessions;
  }

  /** Closes the established session of connection `key`, if any (a new hello replaces it). */
  #retire(key: string): void {
    const old = this.#byConnection.get(key);
    if (!old) return;
    this.#byConnection.delete(key);
    old.close("replaced by a new hello on the same connection");
  }

  /** Serves a session the handshake just established on connection `key` (`connection`). */
  #adopt(session: ServerSession, key: string, connection: EndNotice): void {
    session.lifetime.onEnd(() => {
      this.#sessions.delete(session);
      this.#registrations.get(session)?.remove();
      this.#registrations.delete(session);
      if (this.#byConnection.get(key) === session) this.#byConnection.delete(key);
      this.#ended.delete(key); // re-inserted last: the oldest notice is dropped first
      if (connection.ended) return; // no Watch can come on a closed connection
      if (this.#ended.size >= ENDED_KEPT) this.#ended.delete(this.#ended.keys().next().value!);
      this.#ended.set(key, { bye: noticeOf(session), connection });
    });
    this.#sessions.add(session);
    this.#byConnection.set(key, session);
    this.#engine.hold(this);
    this.#registrations.set(session, this.#engine.add(drivenSession(session)));
  }

  /** Closes every session, aborts every pending offer and stops the engine. Safe twice. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#handshakes.close();
    for (const s of [...this.#sessions]) s.close("server closing");
    this.#engine.release(this);
    for (const p of this.#providers) p.close();
  }
}
