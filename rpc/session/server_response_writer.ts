/**
 * Writes answers into the client's region, server side. An answer to the request behind a
 * {@link ResponseToken} is either INLINE — body and attachment written into the client's slot
 * area — or a reference to an OBJECT in the server's pool (LAZY). Either way the response
 * descriptor body is written next and its state word READY last, in its own write (state-last
 * publication). The server's own request slot is freed first: the client may reuse the slot the
 * moment it sees READY.
 *
 * Ownership and threading: one writer per server session, on the server's JS thread. The
 * descriptor scratch is preallocated; writing an answer allocates nothing. Bodies stay the
 * caller's (they are posted before a method returns).
 * @module
 */
import type { FabricEndpoint } from "../../transport/fabric.ts";
import {
  DESC_WORDS,
  FREE,
  KIND_INLINE,
  KIND_OBJECT,
  READY,
  REQ,
  RESP,
} from "../region/descriptors.ts";
import type { RegionLayout } from "../region/layout.ts";
import type { ObjectPool } from "../region/object_pool.ts";
import type { ResponseToken, ResponseTokens } from "./response_tokens.ts";

/** See the module documentation. */
export class ServerResponseWriter {
  readonly #endpoint: FabricEndpoint;
  readonly #server: RegionLayout;
  readonly #client: RegionLayout;
  /** The server's request ring (its state words are freed before each answer is published). */
  readonly #requestRing: Int32Array;
  readonly #tokens: ResponseTokens;
  readonly #pool: ObjectPool;
  /** Descriptor scratch: words 1.. are written as the body, then word 0 (state) alone. */
  readonly #desc = new Uint32Array(DESC_WORDS);
  readonly #descBody = new Uint8Array(this.#desc.buffer, 4);

  constructor(
    endpoint: FabricEndpoint,
    layouts: { server: RegionLayout; client: RegionLayout },
    requestRing: Int32Array,
    tokens: ResponseTokens,
    pool: ObjectPool,
  ) {
    this.#endpoint = endpoint;
    this.#server = layouts.server;
    this.#client = layouts.client;
    this.#requestRing = requestRing;
    this.#tokens = tokens;
    this.#pool = pool;
  }

  /**
   * Answers `token` inline: `status` (0 = OK, else a brpc error code whose text is `body`),
   * `body` then `attachment` in the client's slot area. `body` + `attachment` must fit the slot.
   * Returns the fabric status of the publishing write (negative: the fabric failed).
   */
  inline(
    token: ResponseToken,
    status: number,
    body: Uint8Array,
    attachment: Uint8Array | undefined,
    serverUs: number,
  ): number {
    const at = this.#client.slotLocal.offset + token * this.#client.config.slotSize;
    if (body.length) this.#endpoint.write(0, at, body, 0);
    if (attachment?.length) this.#endpoint.write(0, at + body.length, attachment, 0);
    const d = this.#desc;
    d[RESP.status] = status;
    d[RESP.kind] = KIND_INLINE;
    d[RESP.length] = body.length;
    d[RESP.offset] = at;
    d[RESP.object] = 0;
    d[RESP.generation] = 0;
    d[RESP.attach] = attachment?.length ?? 0;
    return this.#publish(token, serverUs);
  }

  /**
   * Answers `token` with a reference to the published object `object` of the pool, holding
   * `responseBytes` of response and then `attachmentBytes` of attachment. Returns the fabric
   * status of the publishing write.
   */
  object(
    token: ResponseToken,
    object: number,
    responseBytes: number,
    attachmentBytes: number,
    serverUs: number,
  ): number {
    const d = this.#desc;
    d[RESP.status] = 0;
    d[RESP.kind] = KIND_OBJECT;
    d[RESP.length] = responseBytes;
    d[RESP.offset] = this.#server.objectPool.offset + this.#pool.objectOffset(object);
    d[RESP.object] = object;
    d[RESP.generation] = this.#pool.generation(object);
    d[RESP.attach] = attachmentBytes;
    return this.#publish(token, serverUs);
  }

  #publish(token: ResponseToken, serverUs: number): number {
    const d = this.#desc, ep = this.#endpoint;
    d[RESP.seq] = this.#tokens.seq(token);
    d[RESP.serverUs] = Math.min(serverUs, 0xffffffff);
    const at = this.#client.responseRing.offset + token * DESC_WORDS * 4;
    // Free our request slot BEFORE publishing: the client may reuse it the moment it sees READY.
    this.#tokens.close(token);
    Atomics.store(this.#requestRing, token * DESC_WORDS + REQ.state, FREE);
    ep.write(0, at + 4, this.#descBody, 0);
    return ep.writeU32(0, at, READY, 0); // state last, in its own write
  }
}
