/**
 * Fabric providers: how one fast fabric joins the handshake, so adding a fabric never touches
 * the handshake or the session code. A provider says whether it can run here, what its side
 * sends in the hello, and how it turns the negotiated region layouts into a connected
 * {@link FabricEndpoint}. Its hello parameters and offer are opaque JSON to everyone else, and
 * the provider validates what it receives (zod) — a lying peer gets a HANDSHAKE error naming the
 * field.
 *
 * Server flow: `available()` → `offer()` (creates the server's endpoint, resolves with the JSON
 * offer for the client) → on the client's ACK, `confirm()` (proof that the client really
 * connected, e.g. the shm nonce; true = ESTABLISHED).
 * Client flow: `available()` → `params()` (goes in the hello) → `open(offer)` (connects; the
 * client then ACKs).
 * @module
 */
import type { FabricEndpoint, FabricKind } from "../../transport/fabric.ts";
import type { RegionLayout } from "../region/layout.ts";
import type { ClientHello } from "./hello.ts";

/** What a server-side provider gets for one session. */
export interface OfferContext {
  sessionId: number;
  server: RegionLayout;
  client: RegionLayout;
  hello: ClientHello;
  /** This provider's part of the client's hello (`hello.params[kind]`), unvalidated. */
  params: unknown;
  /** The client's TCP address (for fabrics that connect back). */
  peerHost: string;
}

/** The server's half of a session's fabric, before the ACK. */
export interface ServerOffer {
  endpoint: FabricEndpoint;
  /** JSON sent to the client as `reply.offer`. */
  offer: unknown;
  /** Called on the client's ACK 1: true when the client proved it connected. */
  confirm(): boolean | Promise<boolean>;
}

/** A fabric as the server sees it. */
export interface ServerFabricProvider {
  readonly kind: FabricKind;
  /** undefined when usable for this client, else why not (it becomes the OFF reason). */
  refuse(hello: ClientHello): string | undefined;
  offer(ctx: OfferContext): Promise<ServerOffer>;
  /** Releases provider-wide resources (listeners). Safe twice. */
  close(): void;
}

/** A fabric as the client sees it. */
export interface ClientFabricProvider {
  readonly kind: FabricKind;
  /** Printable name for reports: "shm", "verbs", "urma (simulated)". */
  readonly label: string;
  /** What this side sends in the hello under `params[kind]` (JSON). */
  params(): unknown;
  /** Connects to the server's offer; throws HANDSHAKE with what to check. */
  open(offer: unknown, server: RegionLayout, client: RegionLayout): Promise<FabricEndpoint>;
  /** Releases provider-wide resources. Safe twice. */
  close(): void;
}
