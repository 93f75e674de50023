/**
 * One session's verbs offer on the server (transport/provider.ts `ServerOffer`): the prepared
 * endpoint (region registered and stamped, QP in RESET) waiting for the client's rdma_cm
 * connect request. The provider's listener hands the request over ({@link VerbsServerOffer.take});
 * `connect()` (on the client's ACK) waits for the connection, checks the client's stamp with an
 * RDMA READ and yields the connected endpoint; `abort()` releases the QP, MRs and CM id.
 * Control path; one JS thread.
 * @module
 */
import { VerbusError } from "../../errors.ts";
import { ROLE_CLIENT } from "../control_page.ts";
import type { FabricEndpoint } from "../fabric.ts";
import type { ServerOffer } from "../provider.ts";
import type { CmConnection } from "./cm.ts";
import type { CmRequest } from "./cm_listen.ts";
import type { PreparedVerbsEndpoint } from "./handshake.ts";
import { type ConnectRequest, encodeAccept } from "./provider_wire.ts";
import { DEFAULT_QP_TUNING } from "./qp.ts";

/** What the offer went through. */
type OfferState = "offered" | "accepted" | "connecting" | "connected" | "released";

/** How often connect() looks for the client's connect request. */
const REQUEST_POLL_MS = 2;

/** The server's half of one verbs session, before the client's ACK. */
export class VerbsServerOffer implements ServerOffer {
  #state: OfferState = "offered";
  #connection: CmConnection | null = null;
  #client: ConnectRequest | null = null;
  #failure = "";

  /**
   * @param offer the JSON the client receives
   * @param forget removes this offer from the provider's table of pending sessions
   */
  constructor(
    readonly sessionId: number,
    readonly offer: unknown,
    private readonly prepared: PreparedVerbsEndpoint,
    private readonly clientSize: number,
    private readonly peerName: string,
    private readonly acceptTimeoutMs: number,
    private readonly forget: () => void,
  ) {}

  /** The session nonce (a connect request must carry it). */
  get nonce(): Uint8Array {
    return this.prepared.nonce;
  }

  /** The prepared region (tests and adapters; the endpoint's `local` once connected). */
  get local(): Uint8Array {
    return this.prepared.region.local;
  }

  /**
   * The listener's connect request for this session (already decoded): checks it, brings the
   * QP up towards the client and accepts, or rejects with the reason the client will see.
   */
  take(req: CmRequest, request: ConnectRequest): void {
    if (this.#state !== "offered") {
      return req.reject(`verbs session ${this.sessionId} is already connected`);
    }
    if (request.size !== this.clientSize) {
      return req.reject(`client region of ${request.size} bytes, negotiated ${this.clientSize}`);
    }
    try {
      req.accept(
        this.prepared.qp,
        encodeAccept(this.prepared.nonce, this.prepared.token),
        DEFAULT_QP_TUNING,
      );
    } catch (e) {
      this.#failure = `accept failed: ${(e as Error).message.split("\n")[0]}`;
      return req.reject(`server could not accept: ${(e as Error).message.split("\n")[0]}`);
    }
    this.#state = "accepted";
    this.#connection = req.conn;
    this.#client = request;
  }

  async connect(): Promise<FabricEndpoint> {
    if (this.#state === "released" || this.#state === "connected") {
      throw new VerbusError("HANDSHAKE", `verbs session ${this.sessionId}: offer already used`);
    }
    const end = performance.now() + this.acceptTimeoutMs;
    while (this.#state === "offered" && !this.#failure && performance.now() < end) {
      await new Promise((r) => setTimeout(r, REQUEST_POLL_MS));
    }
    const conn = this.#connection, client = this.#client;
    this.forget();
    if (
      this.#state !== "accepted" || !conn || !client ||
      !(await conn.whenEstablished(Math.max(1, end - performance.now())))
    ) {
      const why = conn?.reason || this.#failure || "the client never connected";
      this.abort(why);
      throw new VerbusError(
        "HANDSHAKE",
        `verbs session ${this.sessionId}: no RDMA connection (${why})`,
      );
    }
    this.#state = "connecting";
    try {
      const endpoint = await this.prepared.connect({
        addr: client.addr,
        rkey: client.rkey,
        size: this.clientSize,
        events: client.events,
        token: client.token,
        role: ROLE_CLIENT,
        name: this.peerName,
      }, conn);
      this.#state = "connected";
      return endpoint;
    } catch (e) {
      this.#state = "released"; // the prepared endpoint released everything
      throw e instanceof VerbusError ? e : new VerbusError(
        "HANDSHAKE",
        `verbs session ${this.sessionId}: ${(e as Error).message}`,
        { cause: e },
      );
    }
  }

  abort(reason: string): void {
    if (this.#state === "connected" || this.#state === "connecting") return;
    if (this.#state === "released") return;
    this.#state = "released";
    this.#failure ||= reason;
    this.forget();
    try {
      this.#connection?.disconnect();
      this.#connection?.close();
    } finally {
      this.prepared.close();
    }
  }
}
