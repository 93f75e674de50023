/**
 * What the verbs fabric exchanges during the handshake, and its validation: provider options
 * (zod), the server's offer (JSON over the TCP hello), the connect request's private data
 * (client → server: its region and the session nonce) and the accept's (server → client: the
 * nonce echoed). The region stamp each side checks with an RDMA READ is transport/proof.ts.
 * Every field from a peer is validated and bounds-checked here; a lie fails the handshake,
 * never the process. Pure; any thread.
 * ```
 * connect private data, 52 B (≤ 56 on RoCE):
 *   0 magic 'VBCQ' | 4 version u16 | 6 flags u8 (bit0: client waits in event mode) | 7 0
 *   8 session u32  | 12 rkey u32   | 16 region addr u64 | 24 region size u64 | 32 nonce[16]
 *  48 token u32 (the client endpoint's token in its process's hub: the server's kicks carry it)
 * accept private data, 24 B:  0 magic 'VBCP' | 4 nonce[16] | 20 token u32 (the server's)
 * ```
 * @module
 */
import { z } from "zod";
import { bytesEqual } from "../../util/hex.ts";
import { PROOF_BYTES } from "../control_page.ts";
import { NONCE_HEX } from "../proof.ts";
import { isIPv4 } from "./cm_lib.ts";
import { logSizeProblem } from "../write_log.ts";

/** Wire version of the verbs handshake. */
export const VERBS_WIRE_VERSION = 3;
const REQ_MAGIC = 0x51434256; // 'VBCQ'
const REP_MAGIC = 0x50434256; // 'VBCP'
/** Bytes of the connect private data. */
export const REQUEST_BYTES = 52;
const ACCEPT_BYTES = 24;
/** Largest hub token a peer may name (transport/verbs/hub.ts HUB_CAPACITY − 1). */
const MAX_TOKEN = 65535;

const ipv4 = z.string().refine(
  isIPv4,
  "expected an IPv4 address of an RDMA interface (e.g. 10.77.0.2)",
);
const mode = z.enum(["poll", "event"]);
/** Bytes of each direction's write log: 0 (off) or a size transport/write_log.ts accepts. */
const logBytes = z.number().int().refine(
  (n) => n === 0 || logSizeProblem(n) === null,
  "expected 0 (no write log) or a multiple of 4096 between 16384 and 67108864",
);
/**
 * The write log of a session whose `logBytes` is not set: 1/16 of the smaller region, within
 * 16 KiB – 1 MiB (a multiple of 4 KiB). Each side registers the log and an outbox as large, so a
 * fixed 1 MiB would have quadrupled a small region's pinned memory (500 idle sessions: +1 GiB);
 * 1/16 still holds a full ring of small answers per flush (1024 slots of 32 KiB: 1 MiB).
 */
export function autoLogBytes(sizes: { server: number; client: number }): number {
  const sixteenth = Math.floor(Math.min(sizes.server, sizes.client) / 16 / 4096) * 4096;
  return Math.min(1 << 20, Math.max(16384, sixteenth));
}

/** `providerOptions.verbs` of a server. */
export const verbsServerOptionsSchema = z.object({
  /** CM port; default 0: an ephemeral port (the offer names it). */
  port: z.number().int().min(0).max(65535).default(0),
  /** Local RDMA address to listen on; default: the first RDMA device's IPv4 address. */
  addr: ipv4.optional(),
  /** How the server waits for work: busy-poll, or sleep on the completion channel when idle. */
  mode: mode.default("event"),
  /** A connection must be ESTABLISHED this long after the offer. */
  acceptTimeoutMs: z.number().int().min(100).max(120_000).default(10_000),
  /** Listen backlog. */
  backlog: z.number().int().min(1).max(4096).default(128),
  /** Signal one send WR in this many. */
  signalEvery: z.number().int().min(1).max(256).default(32),
  /** Session resources (PD, MRs, QP) kept prepared ahead of the next session (0: none). */
  preparedQps: z.number().int().min(0).max(256).default(2),
  /**
   * Bytes of each direction's write log (transport/write_log.ts): small writes of a flush go as
   * one RDMA WRITE_WITH_IMM the receiver applies. 0: every write is its own work request.
   * Unset: {@link autoLogBytes} of the session's regions.
   */
  logBytes: logBytes.optional(),
}).strict();
/** Validated server options. */
export type VerbsServerOptions = z.output<typeof verbsServerOptionsSchema>;

/** `providerOptions.verbs` of a client. */
export const verbsClientOptionsSchema = z.object({
  /** Bind the CM id to this local RDMA address (picks the device the traffic leaves from). */
  sourceAddr: ipv4.optional(),
  /** How the client waits for responses. */
  mode: mode.default("event"),
  /** Deadline of address/route resolution and of the connect. */
  connectTimeoutMs: z.number().int().min(100).max(120_000).default(10_000),
  /** Signal one send WR in this many. */
  signalEvery: z.number().int().min(1).max(256).default(32),
  /** Session resources (PD, MRs, QP) kept prepared ahead of the next session (0: none). */
  preparedQps: z.number().int().min(0).max(256).default(2),
}).strict();
/** Validated client options. */
export type VerbsClientOptions = z.output<typeof verbsClientOptionsSchema>;

/** What the client says in its hello under `params.verbs`. */
export const verbsClientParamsSchema = z.object({
  mode,
  sourceAddr: ipv4.optional(),
}).strict();

/** The server's offer. */
export const verbsOfferSchema = z.object({
  version: z.literal(VERBS_WIRE_VERSION),
  addr: ipv4,
  port: z.number().int().min(1).max(65535),
  device: z.string().max(64),
  session: z.number().int().min(0).max(0xffffffff),
  region: z.object({
    addr: z.string().regex(/^0x[0-9a-f]{1,13}$/, "expected a hex address below 2^52"),
    rkey: z.number().int().min(0).max(0xffffffff),
    size: z.number().int().positive(),
  }).strict(),
  layoutVersion: z.number().int(),
  sizes: z.object({ server: z.number().int().positive(), client: z.number().int().positive() })
    .strict(),
  nonce: z.string().regex(NONCE_HEX, "expected 32 hex digits"),
  mode,
  /** Bytes of each direction's write log (0: none); the client's region carries one as large. */
  logBytes,
}).strict();
/** A validated offer. */
export type VerbsOffer = z.output<typeof verbsOfferSchema>;

/** The client's connect request. */
export interface ConnectRequest {
  session: number;
  events: boolean;
  rkey: number;
  addr: number;
  size: number;
  nonce: Uint8Array;
  /** The client endpoint's hub token. */
  token: number;
}

/** Encodes the connect private data. */
export function encodeRequest(r: ConnectRequest): Uint8Array {
  const b = new Uint8Array(REQUEST_BYTES), d = new DataView(b.buffer);
  d.setUint32(0, REQ_MAGIC, true);
  d.setUint16(4, VERBS_WIRE_VERSION, true);
  d.setUint8(6, r.events ? 1 : 0);
  d.setUint32(8, r.session, true);
  d.setUint32(12, r.rkey, true);
  d.setBigUint64(16, BigInt(r.addr), true);
  d.setBigUint64(24, BigInt(r.size), true);
  b.set(r.nonce.subarray(0, PROOF_BYTES), 32);
  d.setUint32(48, r.token, true);
  return b;
}

/** Decodes and checks the connect private data; a string says what is wrong. */
export function decodeRequest(b: Uint8Array): ConnectRequest | string {
  if (b.length < REQUEST_BYTES) {
    return `private data of ${b.length} bytes (expected ${REQUEST_BYTES})`;
  }
  const d = new DataView(b.buffer, b.byteOffset, b.length);
  if (d.getUint32(0, true) !== REQ_MAGIC) return "not a verbus connect request (magic)";
  if (d.getUint16(4, true) !== VERBS_WIRE_VERSION) {
    return `verbs wire version ${d.getUint16(4, true)} (expected ${VERBS_WIRE_VERSION})`;
  }
  const flags = d.getUint8(6);
  if (flags > 1) return `unknown flags 0x${flags.toString(16)}`;
  const addr = d.getBigUint64(16, true), size = d.getBigUint64(24, true);
  const token = d.getUint32(48, true);
  if (token > MAX_TOKEN) return `token ${token} is out of range (at most ${MAX_TOKEN})`;
  if (addr === 0n || addr + size > BigInt(Number.MAX_SAFE_INTEGER)) {
    return `region address 0x${addr.toString(16)} + ${size} is out of range`;
  }
  return {
    session: d.getUint32(8, true),
    events: flags === 1,
    rkey: d.getUint32(12, true),
    addr: Number(addr),
    size: Number(size),
    nonce: b.slice(32, 32 + PROOF_BYTES),
    token,
  };
}

/** Encodes the accept private data (the session nonce and the server endpoint's hub token). */
export function encodeAccept(nonce: Uint8Array, token: number): Uint8Array {
  const b = new Uint8Array(ACCEPT_BYTES), d = new DataView(b.buffer);
  d.setUint32(0, REP_MAGIC, true);
  b.set(nonce.subarray(0, PROOF_BYTES), 4);
  d.setUint32(20, token, true);
  return b;
}

/**
 * Checks the accept private data against the nonce of the offer: the server's hub token, or a
 * string saying what is wrong.
 */
export function checkAccept(b: Uint8Array, nonce: Uint8Array): number | string {
  if (b.length < ACCEPT_BYTES) return `accept private data of ${b.length} bytes`;
  const d = new DataView(b.buffer, b.byteOffset, b.length);
  if (d.getUint32(0, true) !== REP_MAGIC) return "not a verbus accept (magic)";
  if (!bytesEqual(b.subarray(4, 4 + PROOF_BYTES), nonce)) {
    return "the accept carries another session's nonce";
  }
  const token = d.getUint32(20, true);
  return token > MAX_TOKEN ? `server token ${token} is out of range` : token;
}
