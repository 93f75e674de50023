/**
 * Ring descriptors: fixed-size records of u32 fields — region offsets and lengths, never
 * pointers. A writer publishes a descriptor by writing its body first and its `state` word last,
 * in a separate write (state-last publication); a reader acts only on `state === READY` and
 * bounds-checks every field before use (it comes from the peer).
 *
 * Request descriptor (server's request ring, slot i), written by the client:
 * ```
 *  0 state u32     FREE 0 | READY 1 (written last) | TAKEN 2 (server, locally)
 *  4 seq u32       the client's use count of the slot; the response echoes it
 *  8 method u32    index into the method table the server sent in its hello
 * 12 flags u32     BULK 1 | PREFER_LAZY 2 (a RECLAIM is method METHOD_RECLAIM, no flag)
 * 16 offset u32    payload offset in the server region (slot-local area or BULK area)
 * 20 length u32    payload bytes
 * 24 attach u32    attachment bytes (they follow the payload)
 * 28 timeout u32   timeout_ms (0 = none)
 * 32 sg u32        BULK: scatter-gather entries the client used (telemetry)
 * 36 logLo u32     40 logHi u32   log_id
 * 44 meta u32      bytes of the request's metadata block (headers, request_id; 0 = none): the
 *                  last `meta` bytes of the slot's inline area (rpc/session/meta_block.ts)
 * 48 … 63 reserved
 * ```
 * Response descriptor (client's response ring, slot i), written by the server:
 * ```
 *  0 state u32     FREE 0 | READY 1 (written last)
 *  4 seq u32       the request's seq
 *  8 status u32    0 = OK, else a brpc error code (text inline in the client's slot-local area)
 * 12 kind u32      INLINE 1 | OBJECT 2 (LAZY reference)
 * 16 length u32    payload (or object data) bytes
 * 20 offset u32    INLINE: offset in the client region; OBJECT: offset of the object's header
 *                  in the server region
 * 24 object u32    OBJECT: object id      28 generation u32   OBJECT: its generation
 * 32 attach u32    attachment bytes (inline, after the payload)
 * 36 serverUs u32  time the server spent, for telemetry
 * 40 meta u32      bytes of the answer's metadata block (headers, trailers, error details;
 *                  0 = none): the last `meta` bytes of the client's slot area, for either kind
 * 44 … 63 reserved
 * ```
 * @module
 */
import { DESCRIPTOR_BYTES } from "./layout.ts";

/** u32 index of each request-descriptor field. */
export const REQ = {
  state: 0,
  seq: 1,
  method: 2,
  flags: 3,
  offset: 4,
  length: 5,
  attach: 6,
  timeout: 7,
  sg: 8,
  logLo: 9,
  logHi: 10,
  meta: 11,
} as const;

/** u32 index of each response-descriptor field. */
export const RESP = {
  state: 0,
  seq: 1,
  status: 2,
  kind: 3,
  length: 4,
  offset: 5,
  object: 6,
  generation: 7,
  attach: 8,
  serverUs: 9,
  meta: 10,
} as const;

/** Descriptor states. */
export const FREE = 0, READY = 1, TAKEN = 2;
/** Request flags. */
export const FLAG_BULK = 1, FLAG_PREFER_LAZY = 2;
/** Response kinds. */
export const KIND_INLINE = 1, KIND_OBJECT = 2;
/** u32 words per descriptor. */
export const DESC_WORDS = DESCRIPTOR_BYTES / 4;
/** The method index of a RECLAIM request (not a service method). */
export const METHOD_RECLAIM = 0xffff_fffe;

/**
 * The requests of `ring` (a request ring as Int32 words, `slots` descriptors) still READY — not
 * taken by the server — as `[slot, seq]`. Reads shared memory only; control path (allocates).
 */
export function readyRequests(ring: Int32Array, slots: number): [number, number][] {
  const out: [number, number][] = [];
  for (let i = 0; i < slots; i++) {
    const b = i * DESC_WORDS;
    if (Atomics.load(ring, b + REQ.state) === READY) out.push([i, ring[b + REQ.seq] >>> 0]);
  }
  return out;
}
