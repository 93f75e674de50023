/**
 * Control path of the shm fabric for one session: it turns a session's sizes into a pair of
 * connected {@link ShmEndpoint}s, one in each process.
 *
 * Server: {@link PreparedShmSession.prepare} creates the session's object — a memfd sealed against
 * shrinking and growing (`shm_object.ts`), the server's region then the client's —, stamps the
 * server's region with a fresh nonce (`transport/proof.ts`) and returns the offer: where the
 * client opens the memfd (`/proc/<server pid>/fd/<fd>`), the sizes, the server's nonce and a
 * second, client nonce. Client: {@link connectShmSession} checks the seals and the size before it
 * maps, checks the server's stamp through the mapping, stamps its own region with the client
 * nonce and yields its endpoint. Server again, on the client's ACK:
 * {@link PreparedShmSession.connect} checks the client's stamp — the client nonce travelled only in
 * the Hello answer on this TCP connection and is never written by the server into shared memory,
 * so the stamp was written by the peer that got that answer, and it mapped the object —, closes
 * its fd (both sides now hold a mapping) and yields the server's endpoint.
 * {@link PreparedShmSession.abort} closes the fd and unmaps.
 *
 * ```
 *  0                      serverSize                 serverSize + clientSize
 *  ├──── server region ────┼──────── client region ────────┤
 *  each region starts with its fabric header (transport/control_page.ts)
 * ```
 * Setup path only (allocates, throws); one JS thread.
 * @module
 */
import { pid } from "node:process";
import { VerbusError } from "../../errors.ts";
import type { Helper } from "../../ffi/helper.ts";
import { FABRIC_HEADER, ROLE_CLIENT, ROLE_SERVER } from "../control_page.ts";
import { checkStamp, newNonce, nonceFromHex, nonceToHex, stampRegion } from "../proof.ts";
import type { SessionSizes } from "../provider.ts";
import type { NotifyRef, PeerNotifyPage, ProcessNotifyPage } from "./notify_page.ts";
import { ShmEndpoint, type ShmHalves, type ShmNotify } from "./shm_endpoint.ts";
import { ShmMapping, shmName } from "./shm_object.ts";

/** Regions start on page boundaries (futex words and Atomics views need alignment). */
const PAGE = 4096;

/** What the server tells the client about the session's object (JSON, in the server's hello). */
export interface ShmOffer {
  /** The object's label, `/verbus-<server pid>-<session>` (in /proc/<pid>/maps; no name to open). */
  name: string;
  /** The server process: the client opens `/proc/<pid>/fd/<fd>`. */
  pid: number;
  /** The server's fd of the sealed memfd (open until the ACK). */
  fd: number;
  /** Bytes of the whole object (server region + client region). */
  size: number;
  /** Where the server's region starts in the object (0). */
  serverOffset: number;
  /** Bytes of the server's region (`SessionSizes.server`). */
  serverSize: number;
  /** Where the client's region starts in the object (right after the server's). */
  clientOffset: number;
  /** Bytes of the client's region (`SessionSizes.client`). */
  clientSize: number;
  /** The session nonce (32 hex digits) the server stamped into its region's header. */
  nonce: string;
  /** The nonce the client stamps into its region (32 hex digits; never in shared memory before). */
  clientNonce: string;
  /** The server process's notify page (absent: no readiness; the client polls the session). */
  notify?: NotifyRef;
}

/** The notify pages of one side: its own, and the peer's (mapped). Null: no readiness. */
export interface NotifyPages {
  readonly own: ProcessNotifyPage;
  readonly peer: PeerNotifyPage;
}

/** Writes my notify token into my header (or 0xffffffff: none). */
function writeToken(region: Uint8Array, token: number): void {
  new DataView(region.buffer, region.byteOffset + FABRIC_HEADER.notifyToken, 4)
    .setUint32(0, token < 0 ? 0xffffffff : token, true);
}

/** The peer's notify token from its header (-1: none). */
function readToken(region: Uint8Array): number {
  const t = new DataView(region.buffer, region.byteOffset + FABRIC_HEADER.notifyToken, 4)
    .getUint32(0, true);
  return t === 0xffffffff ? -1 : t;
}

/** Builds an endpoint's readiness, or null (and releases what was taken) when either side has none. */
function sessionNotify(
  pages: NotifyPages | null,
  ownToken: number,
  peerToken: number,
): ShmNotify | null {
  if (pages === null) return null;
  if (ownToken < 0 || peerToken < 0) {
    if (ownToken >= 0) pages.own.release(ownToken);
    pages.peer.release();
    return null;
  }
  return { own: pages.own, ownToken, peer: pages.peer, peerToken };
}

function checkSizes(sizes: SessionSizes): void {
  for (const side of ["server", "client"] as const) {
    const n = sizes[side];
    if (!Number.isSafeInteger(n) || n <= 0 || n % PAGE !== 0) {
      throw new VerbusError(
        "INVALID_ARGUMENT",
        `shm: the ${side} region size ${n} is not a positive multiple of ${PAGE} bytes`,
      );
    }
  }
}

/**
 * The server's half of one session, prepared and not yet connected: the object exists, the
 * server's region is stamped, the name is still linked (the client opens it by name). Owns the
 * mapping until {@link connect} hands it to the endpoint or {@link abort} releases it.
 */
export class PreparedShmSession {
  #mapping: ShmMapping | null;
  #connected = false;

  private constructor(
    mapping: ShmMapping,
    /** The offer for the client (JSON). */
    readonly offer: ShmOffer,
    private readonly clientNonce: Uint8Array,
    private readonly helper: Helper,
    private readonly pages: NotifyPages | null,
    private readonly ownToken: number,
  ) {
    this.#mapping = mapping;
  }

  /**
   * Creates, maps and stamps the object of session `sessionId` (throws NATIVE_CALL when the
   * object cannot be created; nothing is left behind then).
   */
  static async prepare(
    helper: Helper,
    sessionId: number,
    sizes: SessionSizes,
    pages: NotifyPages | null = null,
  ): Promise<PreparedShmSession> {
    checkSizes(sizes);
    const name = shmName(pid, sessionId);
    const size = sizes.server + sizes.client;
    let mapping: ShmMapping;
    try {
      mapping = await ShmMapping.createSealed(name, size);
    } catch (e) {
      pages?.peer.release();
      throw e;
    }
    const nonce = newNonce(), clientNonce = newNonce();
    const serverRegion = mapping.bytes.subarray(0, sizes.server);
    stampRegion(serverRegion, ROLE_SERVER, nonce);
    const ownToken = pages ? pages.own.allocate() : -1;
    writeToken(serverRegion, ownToken);
    return new PreparedShmSession(
      mapping,
      {
        name,
        pid,
        fd: mapping.fd,
        size,
        serverOffset: 0,
        serverSize: sizes.server,
        clientOffset: sizes.server,
        clientSize: sizes.client,
        nonce: nonceToHex(nonce),
        clientNonce: nonceToHex(clientNonce),
        ...(pages ? { notify: pages.own.ref } : {}),
      },
      clientNonce,
      helper,
      pages,
      ownToken,
    );
  }

  /**
   * On the client's ACK: checks the client's stamp through the mapping, unlinks the name and
   * yields the connected endpoint (the caller owns it from then on). Throws HANDSHAKE naming what
   * is wrong, after releasing everything; throws once aborted or connected.
   */
  connect(): ShmEndpoint {
    const mapping = this.#mapping;
    if (mapping === null) {
      throw new VerbusError(
        "HANDSHAKE",
        `shm ${this.offer.name}: ${
          this.#connected ? "already connected" : "the offer was aborted"
        }`,
      );
    }
    const clientHeader = mapping.bytes.subarray(this.offer.clientOffset);
    const why = checkStamp(clientHeader, ROLE_CLIENT, this.clientNonce);
    if (why !== undefined) {
      this.abort(why);
      throw new VerbusError(
        "HANDSHAKE",
        `shm ${this.offer.name}: the client did not prove it mapped the offered object (${why}); ` +
          "check that client and server run on the same host as the same user",
      );
    }
    mapping.unlink(); // both sides hold a mapping: nobody needs to open the memfd any more
    this.#mapping = null;
    this.#connected = true;
    const halves: ShmHalves = {
      localOffset: 0,
      localSize: this.offer.serverSize,
      remoteOffset: this.offer.clientOffset,
      remoteSize: this.offer.clientSize,
    };
    const notify = sessionNotify(this.pages, this.ownToken, readToken(clientHeader));
    return new ShmEndpoint(mapping, halves, this.helper, notify);
  }

  /**
   * Unlinks the name, unmaps and returns the notify token and page. Safe twice; a no-op after a
   * successful connect.
   */
  abort(_reason: string): void {
    const mapping = this.#mapping;
    this.#mapping = null;
    if (mapping === null) return;
    mapping.unlink();
    mapping.close();
    if (this.pages) {
      if (this.ownToken >= 0) this.pages.own.release(this.ownToken);
      this.pages.peer.release();
    }
  }
}

function offerMismatch(offer: ShmOffer, sizes: SessionSizes): string | undefined {
  const expected: [keyof ShmOffer, number, string][] = [
    ["serverOffset", 0, "the server region starts the object"],
    ["serverSize", sizes.server, "the negotiated server region size"],
    ["clientOffset", sizes.server, "the client region follows the server region"],
    ["clientSize", sizes.client, "the negotiated client region size"],
    ["size", sizes.server + sizes.client, "server + client region sizes"],
  ];
  for (const [field, want, meaning] of expected) {
    if (offer[field] !== want) {
      return `shm offer: field ${field} is ${offer[field]}, expected ${want} (${meaning})`;
    }
  }
  return undefined;
}

/**
 * Client: maps the offered object, checks it against `sizes` and the server's stamp, stamps its
 * own region with the nonce and yields the connected endpoint (the caller owns it). Throws
 * HANDSHAKE (with what to check) when anything disagrees; nothing stays mapped then.
 */
export async function connectShmSession(
  helper: Helper,
  offer: ShmOffer,
  sizes: SessionSizes,
  pages: NotifyPages | null = null,
): Promise<ShmEndpoint> {
  const mismatch = offerMismatch(offer, sizes);
  if (mismatch !== undefined) {
    pages?.peer.release();
    throw new VerbusError("HANDSHAKE", mismatch);
  }
  const nonce = nonceFromHex(offer.nonce), clientNonce = nonceFromHex(offer.clientNonce);
  let mapping: ShmMapping;
  try {
    mapping = await ShmMapping.openSealed(offer.pid, offer.fd, offer.size, offer.name);
  } catch (e) {
    pages?.peer.release();
    if (e instanceof VerbusError && e.code === "HANDSHAKE") throw e;
    throw new VerbusError(
      "HANDSHAKE",
      `cannot map ${offer.name} (${(e as Error).message}): not the same host, or not the same user`,
      { cause: e },
    );
  }
  const why = checkStamp(
    mapping.bytes.subarray(offer.serverOffset, offer.serverOffset + offer.serverSize),
    ROLE_SERVER,
    nonce,
  );
  if (why !== undefined) {
    mapping.close();
    pages?.peer.release();
    throw new VerbusError(
      "HANDSHAKE",
      `shm ${offer.name}: ${why}: not the object the server meant`,
    );
  }
  const serverRegion = mapping.bytes.subarray(offer.serverOffset);
  const clientRegion = mapping.bytes.subarray(offer.clientOffset);
  const ownToken = pages ? pages.own.allocate() : -1;
  const notify = sessionNotify(pages, ownToken, readToken(serverRegion));
  writeToken(clientRegion, notify ? ownToken : -1);
  stampRegion(clientRegion, ROLE_CLIENT, clientNonce); // last: the server checks it on the ACK
  return new ShmEndpoint(
    mapping,
    {
      localOffset: offer.clientOffset,
      localSize: offer.clientSize,
      remoteOffset: offer.serverOffset,
      remoteSize: offer.serverSize,
    },
    helper,
    notify,
  );
}
