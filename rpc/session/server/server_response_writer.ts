/**
 * Writes answers into the client's region, server side. An answer to the request behind a
 * {@link ResponseToken} is either INLINE — body and attachment written into the client's slot
 * area — or a reference to an OBJECT in the server's pool (LAZY). Either way the response
 * descriptor body is written next and its state word READY last, in its own write (state-last
 * publication). The server's own request slot is freed first: the client may reuse the slot the
 * moment it sees READY.
 *
 * Every write is checked. A body (or attachment) write the fabric refuses fails that call only:
 * the answer becomes an ERESPONSE error whose text says so (written in the body's place; empty
 * if that write fails too), and `onBodyFailed` is told. A refused descriptor or state write
 * cannot tell the client anything: its status is returned (the session then fails).
 *
 * Ownership and threading: one writer per server session, on the server's JS thread. The
 * descriptor scratch is preallocated; writing an answer allocates nothing. Bodies stay the
 * caller's (they are posted before a method returns).
 * @module
 */
import { type FabricEndpoint, OK } from "../../../transport/fabric.ts";
import { ERESPONSE } from "../../errors.ts";
import {
  DESC_WORDS,
  FREE,
  KIND_INLINE,
  KIND_OBJECT,
  READY,
  REQ,
  RESP,
} from "../../region/descriptors.ts";
import type { RegionLayout } from "../../region/layout.ts";
import type { ObjectPool } from "../../region/object_pool.ts";
import type { ResponseToken, ResponseTokens } from "./response_tokens.ts";
import { MetaBlockEncoder } from "../meta_block.ts";

const enc = new TextEncoder();
const META_FAILED = "the server could not write the answer's metadata into the slot";

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
  readonly #onBodyFailed: (token: ResponseToken, status: number) => void;
  /**
   * The answers' metadata blocks: the caller encodes one with `metaBlock.answer(…)` and passes
   * its size to {@link inline} / {@link object}, which write it at the end of the client's slot.
   */
  readonly metaBlock: MetaBlockEncoder = new MetaBlockEncoder();

  /** `onBodyFailed` hears of every answer whose body the fabric refused (it became an error). */
  constructor(
    endpoint: FabricEndpoint,
    layouts: { server: RegionLayout; client: RegionLayout },
    requestRing: Int32Array,
    tokens: ResponseTokens,
    pool: ObjectPool,
    onBodyFailed: (token: ResponseToken, status: number) => void = () => {},
  ) {
    this.#onBodyFailed = onBodyFailed;
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
    metaBytes = 0,
  ): number {
    const ep = this.#endpoint;
    const at = this.#client.slotLocal.offset + token * this.#client.config.slotSize;
    let st = body.length ? ep.write(0, at, body, 0) : OK;
    if (st === OK && attachment?.length) st = ep.write(0, at + body.length, attachment, 0);
    if (st === OK) st = this.#writeMeta(token, metaBytes);
    let length = body.length, attach = attachment?.length ?? 0;
    if (st !== OK) { // the body did not get there: this call fails, the session goes on
      metaBytes = 0;
      if (ep.failed) return st;
      this.#onBodyFailed(token, st);
      status = ERESPONSE;
      const text = enc.encode(
        `the server could not write the answer into the slot (fabric status ${st})`,
      ).subarray(0, this.#client.config.slotSize);
      length = ep.write(0, at, text, 0) === OK ? text.length : 0;
      attach = 0;
    }
    const d = this.#desc;
    d[RESP.status] = status;
    d[RESP.kind] = KIND_INLINE;
    d[RESP.length] = length;
    d[RESP.offset] = at;
    d[RESP.object] = 0;
    d[RESP.generation] = 0;
    d[RESP.attach] = attach;
    d[RESP.meta] = metaBytes;
    return this.#publish(token, serverUs);
  }

  /** Writes the last encoded metadata block (`metaBytes` of it) at the end of `token`'s slot. */
  #writeMeta(token: ResponseToken, metaBytes: number): number {
    if (metaBytes === 0) return OK;
    const slotEnd = this.#client.slotLocal.offset + (token + 1) * this.#client.config.slotSize;
    return this.#endpoint.write(0, slotEnd - metaBytes, this.metaBlock.view(), 0);
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
    metaBytes = 0,
  ): number {
    const d = this.#desc;
    const st = this.#writeMeta(token, metaBytes);
    if (st !== OK) {
      // The metadata did not get there: the call fails as a refused body does (the object is
      // the pool's until its TTL: nobody holds a reference to it).
      if (this.#endpoint.failed) return st;
      this.#onBodyFailed(token, st);
      return this.inline(token, ERESPONSE, enc.encode(META_FAILED), undefined, serverUs);
    }
    d[RESP.meta] = metaBytes;
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
    // A plain store: the atomic publication below (or the fabric's post) orders it before that.
    this.#tokens.close(token);
    this.#requestRing[token * DESC_WORDS + REQ.state] = FREE;
    const st = ep.write(0, at + 4, this.#descBody, 0);
    if (st !== OK) return st;
    return ep.writeU32(0, at, READY, 0); // state last, in its own write
  }
}
