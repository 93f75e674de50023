/**
 * Control path of the shm fabric for one session: it turns a session's sizes into a pair of
 * connected {@link ShmEndpoint}s, one in each process.
 *
 * Server: {@link prepareShmSession} creates the session's object (`/verbus-<pid>-<session>`, the
 * server's region then the client's), stamps the server's region with a fresh nonce
 * (`transport/proof.ts`) and returns the offer. Client: {@link connectShmSession} maps the object
 * by name, checks the server's stamp through the mapping, stamps its own region with the same
 * nonce and yields its endpoint. Server again, on the client's ACK:
 * {@link PreparedShmSession.connect} checks the client's stamp — only a process on this host that
 * really mapped the object can have written it — unlinks the name (both sides now hold a
 * mapping) and yields the server's endpoint. {@link PreparedShmSession.abort} closes and unlinks.
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
import { ROLE_CLIENT, ROLE_SERVER } from "../control_page.ts";
import { checkStamp, newNonce, nonceFromHex, nonceToHex, stampRegion } from "../proof.ts";
import type { SessionSizes } from "../provider.ts";
import { ShmEndpoint } from "./shm_endpoint.ts";
import { ShmMapping, shmName } from "./shm_object.ts";

/** Regions start on page boundaries (futex words and Atomics views need alignment). */
const PAGE = 4096;

/** What the server tells the client about the session's object (JSON, in the server's hello). */
export interface ShmOffer {
  /** The object's name, `/verbus-<server pid>-<session>`. */
  name: string;
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
  #endpoint: ShmEndpoint | null;
  #connected = false;

  private constructor(
    endpoint: ShmEndpoint,
    /** The offer for the client (JSON). */
    readonly offer: ShmOffer,
    private readonly nonce: Uint8Array,
  ) {
    this.#endpoint = endpoint;
  }

  /**
   * Creates, maps and stamps the object of session `sessionId` (throws NATIVE_CALL when the
   * object cannot be created; nothing is left behind then).
   */
  static async prepare(
    helper: Helper,
    sessionId: number,
    sizes: SessionSizes,
  ): Promise<PreparedShmSession> {
    checkSizes(sizes);
    const name = shmName(pid, sessionId);
    const size = sizes.server + sizes.client;
    const mapping = await ShmMapping.create(name, size);
    const endpoint = new ShmEndpoint(mapping, {
      localOffset: 0,
      localSize: sizes.server,
      remoteOffset: sizes.server,
      remoteSize: sizes.client,
    }, helper);
    const nonce = newNonce();
    stampRegion(endpoint.local, ROLE_SERVER, nonce);
    return new PreparedShmSession(endpoint, {
      name,
      size,
      serverOffset: 0,
      serverSize: sizes.server,
      clientOffset: sizes.server,
      clientSize: sizes.client,
      nonce: nonceToHex(nonce),
    }, nonce);
  }

  /**
   * On the client's ACK: checks the client's stamp through the mapping, unlinks the name and
   * yields the connected endpoint (the caller owns it from then on). Throws HANDSHAKE naming what
   * is wrong, after releasing everything; throws once aborted or connected.
   */
  connect(): ShmEndpoint {
    const endpoint = this.#endpoint;
    if (endpoint === null) {
      throw new VerbusError(
        "HANDSHAKE",
        `shm ${this.offer.name}: ${
          this.#connected ? "already connected" : "the offer was aborted"
        }`,
      );
    }
    const clientHeader = endpoint.mapping.bytes.subarray(this.offer.clientOffset);
    const why = checkStamp(clientHeader, ROLE_CLIENT, this.nonce);
    if (why !== undefined) {
      this.abort(why);
      throw new VerbusError(
        "HANDSHAKE",
        `shm ${this.offer.name}: the client did not prove it mapped the offered object (${why}); ` +
          "check that client and server run on the same host and share /dev/shm",
      );
    }
    endpoint.mapping.unlink(); // both sides hold a mapping: the name is no longer needed
    this.#endpoint = null;
    this.#connected = true;
    return endpoint;
  }

  /** Closes the mapping and unlinks the name. Safe twice; a no-op after a successful connect. */
  abort(_reason: string): void {
    const endpoint = this.#endpoint;
    this.#endpoint = null;
    endpoint?.close();
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
): Promise<ShmEndpoint> {
  const mismatch = offerMismatch(offer, sizes);
  if (mismatch !== undefined) throw new VerbusError("HANDSHAKE", mismatch);
  const nonce = nonceFromHex(offer.nonce);
  let mapping: ShmMapping;
  try {
    mapping = await ShmMapping.open(offer.name, offer.size);
  } catch (e) {
    throw new VerbusError(
      "HANDSHAKE",
      `cannot map ${offer.name} (${
        (e as Error).message
      }): not the same host, or /dev/shm is not shared`,
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
    throw new VerbusError(
      "HANDSHAKE",
      `shm ${offer.name}: ${why}: not the object the server meant`,
    );
  }
  const endpoint = new ShmEndpoint(mapping, {
    localOffset: offer.clientOffset,
    localSize: offer.clientSize,
    remoteOffset: offer.serverOffset,
    remoteSize: offer.serverSize,
  }, helper);
  stampRegion(endpoint.local, ROLE_CLIENT, nonce);
  return endpoint;
}
