/**
 * The server half of the fabric handshake: the `verbus.Fabric` Hello and Ack handlers, an
 * explicit state machine per connection (`S_HELLO_WAIT → S_SETUP → S_HELLO_SEND → S_ACK_WAIT →
 * ESTABLISHED`, or `FALLBACK_TCP` / `FAILED` with the reason logged once).
 *
 * On a hello the chosen provider prepares an offer (`transport/provider.ts`: the server's region
 * exists and is stamped, nothing is connected); on the client's ACK 1 the offer connects (checking
 * the client's proof) and only then does a {@link ServerSession} start over the connected
 * endpoint. Every other end of a pending handshake — no ACK in time, ACK 0, the connection
 * closed, a new hello on it, the server closing — aborts the offer, which releases what it took.
 *
 * Threading: one JS thread (the server's); control path.
 * @module
 */
import type { FabricEndpoint } from "../../../transport/fabric.ts";
import type {
  PeerInfo,
  ServerFabricProvider,
  ServerOffer,
  SessionSizes,
} from "../../../transport/provider.ts";
import type { AnyFabricKind } from "../../../transport/fabric_kinds.ts";
import type { NetAddress } from "../../../transport/tcp/tcp.ts";
import { EREQUEST, RpcError } from "../../errors.ts";
import type { CallContext, Dispatcher, Logger, ServerCall } from "../../protocol/dispatch.ts";
import { computeLayout, type RegionConfig, type RegionLayout } from "../../region/layout.ts";
import {
  ACK_ON,
  clampRegion,
  type ClientHello,
  clientHelloSchema,
  decodeAck,
  decodeHello,
  encodeHello,
  HELLO_VERSION,
  helloRefusal,
  type ServerHello,
} from "./hello.ts";
import { ServerSession } from "../server/server_session.ts";
import type { HoldLimits } from "../server/held_answers.ts";
import { type LendingPool, lendingPool, RequestLender } from "../server/request_lender.ts";
import { HandshakeLog, type HandshakeOutcome } from "./handshake_log.ts";
import { serverMachine, type ServerState, type StateMachine } from "./state_machine.ts";
import type { EndNotice } from "../../../util/end_notice.ts";

/** What the handshake needs from the host it establishes sessions for. */
export interface HandshakeHost {
  /** The dispatcher sessions serve calls with (null before the server attached it). */
  dispatcher(): Dispatcher | null;
  /** True once the host is closing: nothing new is established. */
  closed(): boolean;
  /** Closes the established session of connection `key`, if any (a new hello replaces it). */
  retire(key: string): void;
  /** Established sessions now (for the `maxSessions` limit). */
  sessionCount(): number;
  /** Takes over a session just ESTABLISHED on connection `key` (`connection`: its end). */
  adopt(session: ServerSession, key: string, connection: EndNotice): void;
}

/** The settings the handshake applies (the host's validated options). */
export interface HandshakeSettings extends HoldLimits {
  /** Fabrics the server offers. */
  readonly fabrics: readonly AnyFabricKind[];
  /** The largest region a client may get. */
  readonly maxRegion: RegionConfig;
  readonly batchBudget: number;
  readonly largeThreshold: number;
  readonly objectTtlMs: number;
  readonly ackTimeoutMs: number;
  /** Established fabric sessions at most; a Hello past it stays on TCP. */
  readonly maxSessions: number;
  /** Handshakes between Hello and ACK at most; a Hello past it stays on TCP. */
  readonly maxHandshakes: number;
  /** Outcomes kept in the history, and distinct causes remembered by the log-once. */
  readonly historyLength: number;
  readonly requestBufferBytes: number; // reused buffers lent to borrowing handlers (all sessions)
}

/** A handshake between its hello and its ACK: the offer is prepared, nothing is connected. */
interface PendingHandshake {
  readonly machine: StateMachine<ServerState>;
  readonly sessionId: number;
  readonly kind: AnyFabricKind;
  readonly offer: ServerOffer;
  readonly serverLayout: RegionLayout;
  readonly clientLayout: RegionLayout;
  readonly peer: NetAddress;
  readonly pressure?: "ring" | "objpool";
  readonly ackTimer: ReturnType<typeof setTimeout>;
  /** Removes the connection-close listener this handshake added. */
  readonly unlisten: () => void;
}

const NO_BYTES = new Uint8Array(0);

/** The key of a TCP connection (its peer address). */
export const connectionKey = (ctx: CallContext): string => `${ctx.peer.host}:${ctx.peer.port}`;

/** The server's handshakes, one per connection at a time. */
export class ServerHandshakes {
  readonly #pending = new Map<string, PendingHandshake>();
  /** Hellos between their start and their answer (their offer is being prepared). */
  #preparing = 0;
  /** The number of the latest Hello of each connection (keyed by its end notice: no leak). */
  readonly #latest = new WeakMap<EndNotice, number>();
  #hellos = 0;
  #nextSession = 1;
  readonly #log: HandshakeLog;
  readonly #lending: LendingPool;

  /**
   * @param unavailable why a fabric of `settings.fabrics` has no provider here
   * @param methods the method table sent to clients (`service/method`, index = wire number)
   */
  constructor(
    private readonly host: HandshakeHost,
    private readonly settings: HandshakeSettings,
    private readonly providers: readonly ServerFabricProvider[],
    private readonly unavailable: Partial<Record<string, string>>,
    private readonly methods: readonly (readonly [string, string])[],
    private readonly logger: Logger,
  ) {
    this.#lending = lendingPool(settings.requestBufferBytes);
    this.#log = new HandshakeLog(
      settings.historyLength,
      (l) => this.logger.info ? this.logger.info(l) : this.logger.warn(l), // one, never both
    );
  }

  /** The last `historyLength` handshake outcomes, oldest first (tests, stats). */
  get history(): HandshakeOutcome[] {
    return this.#log.outcomes();
  }

  /** Handshakes between Hello and ACK (or still preparing their offer). */
  get inProgress(): number {
    return this.#pending.size + this.#preparing;
  }

  #machine(key: string): StateMachine<ServerState> {
    const name = `fabric handshake with ${key}`;
    return serverMachine(name, (l) => this.#log.once(l.slice(name.length + 2), l));
  }

  #record(peer: string, machine: StateMachine<ServerState>): void {
    const last = machine.history[machine.history.length - 1];
    this.#log.record({
      peer,
      state: machine.state,
      ...(last?.reason ? { reason: last.reason } : {}),
    });
  }

  /** Ends a handshake on TCP with `reason` (logged once per cause) and records it. */
  #fallBack(key: string, machine: StateMachine<ServerState>, reason: string): void {
    machine.to("FALLBACK_TCP", reason);
    this.#record(key, machine);
  }

  /** Why a new handshake may not start now (a limit is reached), or undefined. */
  #limitReached(sessions: number): string | undefined {
    const s = this.settings;
    if (sessions + this.inProgress >= s.maxSessions) { // a pending handshake holds a region too
      return `server at its fabric session limit (maxSessions ${s.maxSessions})`;
    }
    if (this.inProgress >= s.maxHandshakes) {
      return `too many fabric handshakes in progress (maxHandshakes ${s.maxHandshakes})`;
    }
    return undefined;
  }

  /** The `Hello` handler: decides each fabric, prepares the chosen one's offer, answers. */
  async hello(req: Uint8Array, ctx: ServerCall): Promise<Uint8Array> {
    const key = connectionKey(ctx);
    // The client negotiates again: its pending handshake and its old session end here, so an
    // ACK after this Hello can never confirm the offer of an earlier one.
    this.#drop(key, "replaced by a new hello");
    this.host.retire(key);
    const mine = ++this.#hellos;
    this.#latest.set(ctx.sink.lifetime, mine);
    const machine = this.#machine(key);
    let hello: ClientHello;
    try {
      hello = decodeHello(clientHelloSchema, req, "client hello", "client");
    } catch (e) {
      // A client of another version falls back to TCP; a malformed hello fails.
      const { state, why } = helloRefusal(e);
      machine.to(state, why);
      this.#record(key, machine);
      throw new RpcError(EREQUEST, why);
    }
    machine.to("S_SETUP");
    const region = clampRegion(this.settings.maxRegion, hello.region);
    const peer: PeerInfo = { bootId: hello.bootId, pid: hello.pid, host: ctx.peer.host };
    const decisions: ServerHello["decisions"] = {};
    let chosen: AnyFabricKind | null = null;
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
      methods: this.methods.map(([service, method]) => `${service}/${method}`),
      batchBudget: this.settings.batchBudget,
      largeThreshold: this.settings.largeThreshold,
    };
    const provider = this.providers.find((p) => p.kind === chosen);
    if (!provider || !this.host.dispatcher()) {
      this.#fallBack(
        key,
        machine,
        Object.entries(decisions).map(([f, d]) => `${f}: ${d.reason}`).join("; ") ||
          "client offered no fabric",
      );
      return encodeHello(reply);
    }
    const limit = this.#limitReached(this.host.sessionCount());
    if (limit !== undefined) {
      decisions[provider.kind] = { state: "OFF", reason: limit };
      this.#fallBack(key, machine, limit); // one log line for every Hello refused this way
      return encodeHello(reply);
    }
    const sessionId = this.#nextSession++;
    let offer: ServerOffer;
    let layouts: { server: RegionLayout; client: RegionLayout };
    this.#preparing++;
    try {
      layouts = {
        server: computeLayout("server", region),
        client: computeLayout("client", region),
      };
      const sizes: SessionSizes = {
        server: layouts.server.size,
        client: layouts.client.size,
        maxMessage: region.slotSize,
      };
      offer = await provider.offer({ sessionId, sizes, peer, params: hello.params[provider.kind] });
    } catch (e) {
      const reason = `server could not set up ${provider.kind}: ${(e as Error).message}`;
      decisions[provider.kind] = { state: "OFF", reason };
      this.#fallBack(key, machine, reason);
      return encodeHello(reply);
    } finally {
      this.#preparing--;
    }
    if (
      this.host.closed() || ctx.sink.lifetime.ended ||
      this.#latest.get(ctx.sink.lifetime) !== mine
    ) {
      // It went away while the offer was made, or a later Hello on it took over.
      const reason = this.host.closed()
        ? "server closing"
        : ctx.sink.lifetime.ended
        ? "connection closed"
        : "replaced by a new hello";
      offer.abort(reason);
      decisions[provider.kind] = { state: "OFF", reason };
      this.#fallBack(key, machine, reason);
      return encodeHello(reply);
    }
    reply.sessionId = sessionId;
    reply.fabric = provider.kind;
    reply.offer = offer.offer;
    const pending: PendingHandshake = {
      machine,
      sessionId,
      kind: provider.kind,
      offer,
      serverLayout: layouts.server,
      clientLayout: layouts.client,
      peer: ctx.peer,
      pressure: hello.simulate?.serverPressure,
      ackTimer: setTimeout(
        () => this.#drop(key, "no ACK in time", pending),
        this.settings.ackTimeoutMs,
      ),
      // The offer lives as long as the TCP connection (not the Hello call's deadline).
      unlisten: ctx.sink.lifetime.onEnd(() => this.#drop(key, "connection closed", pending)),
    };
    this.#pending.set(key, pending);
    machine.to("S_HELLO_SEND");
    machine.to("S_ACK_WAIT");
    return encodeHello(reply);
  }

  #refuse(f: AnyFabricKind, peer: PeerInfo, params: unknown): string | undefined {
    if (!this.settings.fabrics.includes(f)) return `server does not offer ${f}`;
    const unavailable = this.unavailable[f];
    if (unavailable) return unavailable;
    const p = this.providers.find((x) => x.kind === f);
    return p ? p.refuse(peer, params) : `server does not offer ${f}`;
  }

  /** Takes the pending handshake of `key` out of the table: its timer and listener are gone. */
  #take(key: string, only?: PendingHandshake): PendingHandshake | undefined {
    const pending = this.#pending.get(key);
    if (!pending || (only && pending !== only)) return undefined;
    this.#pending.delete(key);
    clearTimeout(pending.ackTimer);
    pending.unlisten();
    return pending;
  }

  /**
   * Ends the pending handshake of `key` (only if it is still `only`, when given): the offer is
   * aborted and the handshake recorded as FALLBACK_TCP with `reason`.
   */
  #drop(key: string, reason: string, only?: PendingHandshake): void {
    const pending = this.#take(key, only);
    if (!pending) return;
    pending.offer.abort(reason);
    this.#fallBack(key, pending.machine, reason);
  }

  /** The `Ack` handler: ACK 1 connects the offer and establishes the session; ACK 0 drops it. */
  async ack(req: Uint8Array, ctx: ServerCall): Promise<Uint8Array> {
    const key = connectionKey(ctx);
    if (!this.#pending.has(key)) {
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
    const pending = this.#take(key)!;
    let endpoint: FabricEndpoint;
    try {
      endpoint = await pending.offer.connect();
    } catch (e) {
      const reason = (e as Error).message;
      pending.offer.abort(reason);
      this.#fallBack(key, pending.machine, reason);
      throw new RpcError(EREQUEST, `fabric connection not confirmed: ${reason}`);
    }
    if (this.host.closed() || ctx.sink.lifetime.ended) { // went away while it connected
      endpoint.close();
      const reason = this.host.closed() ? "server closing" : "connection closed";
      this.#fallBack(key, pending.machine, reason);
      return NO_BYTES;
    }
    const session = this.#startSession(pending, endpoint, key, ctx.sink.lifetime);
    session.lifetime.onEnd(ctx.sink.lifetime.onEnd(() => session.close("connection closed")));
    return NO_BYTES;
  }

  /** Starts the session over the connected endpoint; throws (to the client) when it cannot. */
  #startSession(
    pending: PendingHandshake,
    endpoint: FabricEndpoint,
    key: string,
    connection: EndNotice,
  ): ServerSession {
    let session: ServerSession;
    try {
      session = new ServerSession({
        id: pending.sessionId,
        endpoint,
        server: pending.serverLayout,
        client: pending.clientLayout,
        dispatcher: this.host.dispatcher()!,
        methods: this.methods,
        peer: pending.peer,
        batchBudget: this.settings.batchBudget,
        largeThreshold: this.settings.largeThreshold,
        ttlMs: this.settings.objectTtlMs,
        logger: this.logger,
        pressure: pending.pressure,
        lender: new RequestLender(this.host.dispatcher()!, this.#lending),
        hold: this.settings,
      });
    } catch (e) {
      endpoint.close();
      const reason = `server could not set up ${pending.kind}: ${(e as Error).message}`;
      this.#fallBack(key, pending.machine, reason);
      throw new RpcError(EREQUEST, reason);
    }
    pending.machine.to("ESTABLISHED");
    this.#record(key, pending.machine);
    this.host.adopt(session, key, connection);
    return session;
  }

  /** Aborts every pending offer ("server closing"). Safe twice. */
  close(): void {
    for (const k of [...this.#pending.keys()]) this.#drop(k, "server closing");
  }
}
