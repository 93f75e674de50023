/**
 * The fabric's part of every region's control page: the first {@link FABRIC_HEADER_BYTES} bytes
 * of each side's region belong to the transport layer (identity, wake-up words, handshake proof);
 * the rpc layer lays out its own words after them (`rpc/region/layout.ts`) and never writes here
 * except through the fabric. Offsets are byte offsets from the start of a region.
 * ```
 *   0 ┌─────────────┬─────────────┬─────────────┬─────────────┐
 *     │ magic u32   │ version u32 │ role u32    │ (rpc) u32   │  'VBRG', REGION_VERSION, 1|2
 *  16 ├─────────────┼─────────────┼─────────────┴─────────────┘
 *     │ doorbell u32│ sleeping u32│  doorbell: the peer adds 1 after publishing work (a futex
 *  24 ├─────────────┴─────────────┴──────────────────────────┐   word on shm); sleeping: the
 *     │ proof[16]: the session nonce (transport/proof.ts)      │   owner sets 1 while it sleeps
 *  40 ├─────────────┬──────────────────────────────────────────┘
 *     │ notify u32  │  the owner's token in its process's readiness source (shm: the notify
 *  44 └─────────────┘  page): the peer announces work for this session under it
 *     rpc words from here on (FABRIC_HEADER_BYTES)
 * ```
 * Word 12 lies inside the header but belongs to the rpc layer (its session state word); the
 * fabric never touches it.
 * @module
 */

/** Byte offsets of the fabric header. */
export const FABRIC_HEADER = {
  magic: 0,
  version: 4,
  role: 8,
  doorbell: 16,
  sleeping: 20,
  proof: 24,
  notifyToken: 40,
} as const;

/** Bytes of the proof field. */
export const PROOF_BYTES = 16;
/** First byte after the fabric header (the rpc layer's words start here). */
export const FABRIC_HEADER_BYTES = FABRIC_HEADER.notifyToken + 4;
/** The one word inside the header that the rpc layer owns (its session state). */
export const RPC_STATE_OFFSET = 12;
/** 'VBRG' little-endian. */
export const REGION_MAGIC = 0x47524256;
/** Region layout version; both sides must agree (a fabric checks it during the handshake). */
export const REGION_VERSION = 2;
/** `role` of a server region. */
export const ROLE_SERVER = 1;
/** `role` of a client region. */
export const ROLE_CLIENT = 2;
/** Which side a region belongs to. */
export type RegionRoleCode = typeof ROLE_SERVER | typeof ROLE_CLIENT;
