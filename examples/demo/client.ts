/**
 * Typed client helpers for the demo services over any {@link Caller} — a channel's `call`, a
 * shared-memory or RDMA session, or a direct in-process dispatcher in tests. Each helper encodes
 * its request with `codec.ts`, makes one call (ImagePut: one per chunk) and decodes the answer.
 *
 * Buffer ownership: helpers read the caller's buffers only during the call (request bytes are
 * copied into a fresh request). Results that are bytes (`echo`, `get`, `mget`, `largeGet`) are views
 * into the response buffer the {@link Caller} returned; the client never reuses it, so they belong
 * to the application.
 *
 * @module
 */
import { VerbusError } from "../../errors.ts";
import {
  decodeDynamicArray,
  decodeEchoMessage,
  decodeGetResponse,
  decodeImageChunkResult,
  decodePingResponse,
  decodeProfile,
  decodePutResponse,
  encodeEchoMessage,
  encodeImageChunk,
  encodeKeyRequest,
  encodeMGetRequest,
  encodePingRequest,
  encodeProfileRequest,
  encodePutRequest,
  type PingResult,
  type Profile,
  type PutResult,
  UPLOAD_FLAG_ABORT,
  UPLOAD_FLAG_COMMIT,
  UPLOAD_FLAG_INIT,
  UPLOAD_STATE_COMMITTED,
} from "./codec.ts";
import {
  checkImageName,
  Fnv1a64,
  IMAGE_CHUNK_DEFAULT_BYTES,
  IMAGE_CHUNK_MAX_BYTES,
} from "./image_upload.ts";
import { BRPC_ECHO_SERVICE, DEMO_SERVICE, type DemoMethod } from "./service.ts";

/** Per-call options passed through to the {@link Caller}. */
export interface DemoCallOptions {
  /** Deadline of the call in ms. */
  timeoutMs?: number;
  /** Request attachment (read during the call only). */
  attachment?: Uint8Array;
}

/** What a {@link Caller} resolves to; both buffers become the client's. */
export interface DemoCallResult {
  /** Response payload. */
  response: Uint8Array;
  /** Response attachment, if any. */
  attachment?: Uint8Array;
}

/** Makes one unary call; the shape of `Channel.call`. */
export type Caller = (
  service: string,
  method: string,
  request: Uint8Array,
  options?: DemoCallOptions,
) => Promise<DemoCallResult>;

/** Result of {@link DemoClient.ping}. */
export interface PingReply extends PingResult {
  /** Round-trip time measured by the client, µs. */
  rttUs: number;
}

/** Result of {@link DemoClient.imagePut}. */
export interface ImagePutResult {
  /** The upload id used. */
  uploadId: bigint;
  /** Bytes uploaded. */
  bytes: number;
  /** Chunks sent. */
  chunks: number;
  /** FNV-1a 64 of the file, as verified by the server. */
  hash: bigint;
}

function randomU64(): bigint {
  const w = crypto.getRandomValues(new Uint32Array(2));
  return (BigInt(w[0]) << 32n) | BigInt(w[1]);
}

/** Typed helpers for `verbus.Demo` and brpc's `example.EchoService`. */
export class DemoClient {
  readonly #call: Caller;
  readonly #timeout_ms: number | undefined;

  /** `call` makes the calls; `timeoutMs` is the default deadline of each call. */
  constructor(call: Caller, options: { timeoutMs?: number } = {}) {
    this.#call = call;
    this.#timeout_ms = options.timeoutMs;
  }

  async #demo(
    method: DemoMethod,
    request: Uint8Array,
    options?: DemoCallOptions,
  ): Promise<DemoCallResult> {
    return await this.#call(DEMO_SERVICE, method, request, {
      timeoutMs: this.#timeout_ms,
      ...options,
    });
  }

  /** PING with a random nonce; checks the nonce comes back. */
  async ping(): Promise<PingReply> {
    const nonce = randomU64();
    const t0 = performance.now();
    const { response } = await this.#demo("Ping", encodePingRequest(nonce));
    const rttUs = (performance.now() - t0) * 1000;
    const r = decodePingResponse(response);
    if (r.nonce !== nonce) {
      throw new VerbusError("PROTOCOL", `Ping: sent nonce ${nonce}, got ${r.nonce} back`);
    }
    return { ...r, rttUs };
  }

  /** ECHO: returns the payload the server sent back. `options.attachment` is echoed too. */
  async echo(bytes: Uint8Array, options?: DemoCallOptions): Promise<Uint8Array> {
    return (await this.#demo("Echo", bytes, options)).response;
  }

  /** KV_PUT of a small value (server limit default 1 MiB; use {@link bigPut} above). */
  async put(key: string, value: Uint8Array): Promise<PutResult> {
    return decodePutResponse((await this.#demo("KvPut", encodePutRequest(key, value))).response);
  }

  /** KV_GET: the value, or `undefined` when the key has none. */
  async get(key: string): Promise<Uint8Array | undefined> {
    return decodeGetResponse((await this.#demo("KvGet", encodeKeyRequest(key))).response);
  }

  /** MGET: one entry per key, `undefined` for misses (decoded from the dynamic-array blob). */
  async mget(keys: readonly string[]): Promise<(Uint8Array | undefined)[]> {
    const out = decodeDynamicArray((await this.#demo("MGet", encodeMGetRequest(keys))).response);
    if (out.length !== keys.length) {
      throw new VerbusError(
        "PROTOCOL",
        `MGet: asked for ${keys.length} keys, the result has ${out.length}`,
      );
    }
    return out;
  }

  /** PROFILE of user `id` (decoded from the composite-struct blob). */
  async profile(id: bigint | number): Promise<Profile> {
    const p = decodeProfile(
      (await this.#demo("Profile", encodeProfileRequest(BigInt(id)))).response,
    );
    if (p.id !== BigInt(id)) {
      throw new VerbusError("PROTOCOL", `Profile: asked for id ${id}, got ${p.id}`);
    }
    return p;
  }

  /** LARGE_GET: the object under `key` (`big:<size>` or a KV key). Check it with `verifyLargeObject`. */
  async largeGet(key: string): Promise<Uint8Array> {
    return (await this.#demo("LargeGet", encodeKeyRequest(key))).response;
  }

  /** BIGPUT: stores a large value in the KV. */
  async bigPut(key: string, bytes: Uint8Array): Promise<PutResult> {
    return decodePutResponse((await this.#demo("BigPut", encodePutRequest(key, bytes))).response);
  }

  /**
   * Uploads `fileBytes` as image `name` in chunks of `chunkSize` bytes (1..24 KiB, default 24 KiB),
   * one call per chunk, rolling FNV-1a 64 over the file and sending it with COMMIT. Resolves once the
   * server verified and renamed the file. On any failure it sends a best-effort ABORT and rethrows.
   */
  async imagePut(
    name: string,
    fileBytes: Uint8Array,
    chunkSize = IMAGE_CHUNK_DEFAULT_BYTES,
  ): Promise<ImagePutResult> {
    checkImageName(name);
    if (!Number.isInteger(chunkSize) || chunkSize < 1 || chunkSize > IMAGE_CHUNK_MAX_BYTES) {
      throw new VerbusError(
        "INVALID_ARGUMENT",
        `imagePut: chunk size ${chunkSize} is outside 1..${IMAGE_CHUNK_MAX_BYTES}`,
      );
    }
    const uploadId = randomU64();
    const total = fileBytes.length;
    const hash = new Fnv1a64();
    let chunks = 0;
    try {
      for (let offset = 0; offset === 0 || offset < total; offset += chunkSize) {
        const data = fileBytes.subarray(offset, Math.min(total, offset + chunkSize));
        hash.update(data);
        const last = offset + data.length >= total;
        const flags = (offset === 0 ? UPLOAD_FLAG_INIT : 0) | (last ? UPLOAD_FLAG_COMMIT : 0);
        const request = encodeImageChunk({
          uploadId,
          totalLength: total,
          offset,
          flags,
          hash: last ? hash.digest() : 0n,
          name: offset === 0 ? name : "",
          data,
        });
        const r = decodeImageChunkResult((await this.#demo("ImagePut", request)).response);
        chunks++;
        if (r.received !== offset + data.length) {
          throw new VerbusError(
            "PROTOCOL",
            `imagePut: server has ${r.received} bytes, expected ${offset + data.length}`,
          );
        }
        if (last) {
          if (r.state !== UPLOAD_STATE_COMMITTED || r.serverHash !== hash.digest()) {
            throw new VerbusError(
              "INTEGRITY",
              `imagePut: server did not commit (state ${r.state}, hash ${r.serverHash})`,
            );
          }
          break;
        }
      }
    } catch (e) {
      const abort = encodeImageChunk({
        uploadId,
        totalLength: total,
        offset: 0,
        flags: UPLOAD_FLAG_ABORT,
        hash: 0n,
        name: "",
        data: new Uint8Array(0),
      });
      await this.#demo("ImagePut", abort).catch(() => {});
      throw e;
    }
    return { uploadId, bytes: total, chunks, hash: hash.digest() };
  }

  /** brpc's `example.EchoService.Echo`: sends `EchoRequest{message}`, returns the response's message. */
  async brpcEcho(message: string, options?: DemoCallOptions): Promise<string> {
    const { response } = await this.#call(BRPC_ECHO_SERVICE, "Echo", encodeEchoMessage(message), {
      timeoutMs: this.#timeout_ms,
      ...options,
    });
    return decodeEchoMessage(response, "EchoResponse");
  }
}
