/**
 * The fabric contract: how one fast fabric joins a session's handshake. The rpc layer speaks only
 * to these interfaces (found through `transport/registry.ts`), so adding a fabric never touches
 * the handshake or the session code. A provider sees byte sizes and its own opaque parameters —
 * never the rpc layer's region layout or hello. Its hello parameters and offer are JSON that only
 * it understands, and it validates what it receives (`util/options.ts`): a lying peer gets a
 * HANDSHAKE error naming the field.
 *
 * Server flow: `refuse(peer, params)` → `offer(ctx)` (prepares the server's side: its region
 * exists, stamped, nothing is connected) → on the client's ACK 1, `offer.connect()` checks the
 * proof (`transport/proof.ts`) and yields the connected {@link FabricEndpoint}; without an ACK,
 * `offer.abort()` releases everything the offer took.
 * Client flow: `params()` (goes in the hello) → `open(offer, sizes)` connects, proves and yields
 * the connected endpoint (the client then ACKs).
 *
 * Endpoints are born connected: no endpoint exists before its peer is reachable.
 * Threading: one JS thread per provider; every method may allocate and await (control path).
 * @module
 */
import type { FabricEndpoint } from "./fabric.ts";
import type { AnyFabricKind } from "./fabric_kinds.ts";

/** Who the peer says it is (from its hello; the same-host fabrics check it). */
export interface PeerInfo {
  /** The peer's /proc boot id ("" when unknown). */
  readonly bootId: string;
  /** The peer's process id. */
  readonly pid: number;
  /** The peer's address on the TCP control connection. */
  readonly host: string;
}

/** The byte sizes of one session's two regions: all a fabric needs to know of them. */
export interface SessionSizes {
  /** Bytes of the server's region (a multiple of 4 KiB). */
  readonly server: number;
  /** Bytes of the client's region (a multiple of 4 KiB). */
  readonly client: number;
  /** The largest single message either side posts from outside its region (bounce sizing). */
  readonly maxMessage: number;
}

/** What a server-side provider gets for one session. */
export interface OfferContext {
  readonly sessionId: number;
  readonly sizes: SessionSizes;
  readonly peer: PeerInfo;
  /** This fabric's part of the client's hello, unvalidated (the provider validates it). */
  readonly params: unknown;
}

/** The server's half of a session's fabric, prepared and not yet connected. */
export interface ServerOffer {
  /** JSON sent to the client (only this fabric's client provider reads it). */
  readonly offer: unknown;
  /**
   * On the client's ACK 1: checks that the client connected to what was offered and yields the
   * connected endpoint; throws HANDSHAKE naming what failed (and then has released everything).
   */
  connect(): Promise<FabricEndpoint>;
  /** Releases everything the offer holds (no ACK, a failed setup, a closed connection). Safe twice; a no-op after `connect()` succeeded. */
  abort(reason: string): void;
}

/** A fabric as the server sees it. */
export interface ServerFabricProvider {
  /** Its descriptor's kind: a registered fabric's, or the kind of a fabric given beside them. */
  readonly kind: AnyFabricKind;
  /** undefined when this fabric can serve the peer, else why not (it becomes the OFF reason). */
  refuse(peer: PeerInfo, params: unknown): string | undefined;
  /** Prepares one session. Throws (HANDSHAKE, NATIVE_CALL…) after releasing what it took. */
  offer(ctx: OfferContext): Promise<ServerOffer>;
  /** Releases provider-wide resources (listeners). Safe twice. */
  close(): void;
}

/** A fabric as the client sees it. */
export interface ClientFabricProvider {
  /** Its descriptor's kind: a registered fabric's, or the kind of a fabric given beside them. */
  readonly kind: AnyFabricKind;
  /** Printable name for reports: "shm", "verbs", "urma (simulated)". */
  readonly label: string;
  /** What this side sends in the hello for this fabric (JSON). */
  params(): unknown;
  /** Connects to the server's offer; throws HANDSHAKE with what to check. */
  open(offer: unknown, sizes: SessionSizes): Promise<FabricEndpoint>;
  /** Releases provider-wide resources. Safe twice. */
  close(): void;
}

/** Options a provider factory reads: `providerOptions[kind]`, validated by the provider. */
export type ProviderOptions = unknown;

/** What each fabric's `provider.ts` module exports (the registry loads it lazily). */
export interface FabricModule {
  /** The server provider, or why this fabric cannot serve here. Never throws. */
  createServerProvider(
    options: ProviderOptions,
    log: (line: string) => void,
  ): Promise<ServerFabricProvider | string>;
  /** The client provider, or why this fabric cannot be used from here. Never throws. */
  createClientProvider(options: ProviderOptions): Promise<ClientFabricProvider | string>;
}
