/**
 * The one handshake proof every fabric uses. The server draws a random 16-byte nonce per
 * session and sends it in its offer (over the TCP hello). Each side stamps its own region's
 * fabric header — magic, version, role and that nonce — and then checks the peer's header
 * through the fabric itself (shm: the mapping; verbs: an RDMA READ; URMA: a read of the imported
 * segment). A matching stamp proves the peer reached the very memory the handshake described:
 * only the process that received this session's offer knows the nonce, and only one that really
 * connected can have written it where the other side reads it.
 *
 * Setup path only (allocates); one JS thread.
 * @module
 */
import { bytesEqual, fromHex, toHex } from "../util/hex.ts";
import {
  FABRIC_HEADER,
  FABRIC_HEADER_BYTES,
  PROOF_BYTES,
  REGION_MAGIC,
  REGION_VERSION,
  type RegionRoleCode,
} from "./control_page.ts";

/** Bytes of a region's header a peer checks (magic … proof). */
export const STAMP_BYTES = FABRIC_HEADER_BYTES;

/** A fresh random session nonce. */
export function newNonce(): Uint8Array {
  return crypto.getRandomValues(new Uint8Array(PROOF_BYTES));
}

/** The nonce as it travels in an offer (32 hex digits). */
export const nonceToHex = toHex;

/** The nonce of an offer (the offer's schema checked it is 32 hex digits). */
export function nonceFromHex(hex: string): Uint8Array {
  const n = fromHex(hex);
  if (n.length !== PROOF_BYTES) throw new RangeError(`a nonce has ${PROOF_BYTES} bytes`);
  return n;
}

/** zod-free check used by offer schemas: 32 lower-case hex digits. */
export const NONCE_HEX = /^[0-9a-f]{32}$/;

/** Writes magic, version, role and `nonce` into the fabric header at the start of `region`. */
export function stampRegion(region: Uint8Array, role: RegionRoleCode, nonce: Uint8Array): void {
  const d = new DataView(region.buffer, region.byteOffset, STAMP_BYTES);
  d.setUint32(FABRIC_HEADER.magic, REGION_MAGIC, true);
  d.setUint32(FABRIC_HEADER.version, REGION_VERSION, true);
  d.setUint32(FABRIC_HEADER.role, role, true);
  region.set(nonce.subarray(0, PROOF_BYTES), FABRIC_HEADER.proof);
}

/**
 * Checks a peer's header (at least {@link STAMP_BYTES} bytes, read through the fabric);
 * undefined when it carries `role` and `nonce`, else what is wrong.
 */
export function checkStamp(
  header: Uint8Array,
  role: RegionRoleCode,
  nonce: Uint8Array,
): string | undefined {
  if (header.length < STAMP_BYTES) return `the peer header has ${header.length} bytes`;
  const d = new DataView(header.buffer, header.byteOffset, STAMP_BYTES);
  if (d.getUint32(FABRIC_HEADER.magic, true) !== REGION_MAGIC) {
    return "the peer region holds no verbus region (magic): wrong address, key or name";
  }
  const v = d.getUint32(FABRIC_HEADER.version, true);
  if (v !== REGION_VERSION) return `region version ${v} (expected ${REGION_VERSION})`;
  const r = d.getUint32(FABRIC_HEADER.role, true);
  if (r !== role) return `the peer region has role ${r} (expected ${role})`;
  const got = header.subarray(FABRIC_HEADER.proof, FABRIC_HEADER.proof + PROOF_BYTES);
  return bytesEqual(got, nonce) ? undefined : "the peer region holds another session's nonce";
}
