/**
 * The helper's own flat formats (c-helpers/verbus_helper.h). TypeScript fills and reads these
 * in preallocated typed arrays; the helper turns them into verbs work requests.
 * @module
 */

/**
 * struct vb_sge — 16 bytes, same layout as struct ibv_sge
 * ```
 *  0 ┌──────── addr u64 ────────┐
 *  8 │ length u32 │ lkey u32    │
 * 16 └──────────────────────────┘
 * ```
 */
export const VB_SGE = { $struct: "vb_sge", $size: 16, addr: 0, length: 8, lkey: 12 } as const;

/**
 * struct vb_send_desc — 48 bytes, one send work request
 * ```
 *  0 ┌────────── wr_id u64 ──────────┐
 *  8 │────────── remote_addr u64 ────│
 * 16 │ rkey u32      │ imm u32 (host)│
 * 24 │ opcode u32    │ send_flags u32│
 * 32 │ sge_index u32 │ num_sge u32   │
 * 40 │────────── reserved u64 ───────│
 * 48 └───────────────────────────────┘
 * ```
 */
export const VB_SEND_DESC = {
  $struct: "vb_send_desc",
  $size: 48,
  wr_id: 0,
  remote_addr: 8,
  rkey: 16,
  imm: 20,
  opcode: 24,
  send_flags: 28,
  sge_index: 32,
  num_sge: 36,
} as const;

/**
 * struct vb_recv_desc — 16 bytes
 * ```
 *  0 ┌──────── wr_id u64 ─────────┐
 *  8 │ sge_index u32 │ num_sge u32│
 * 16 └────────────────────────────┘
 * ```
 */
export const VB_RECV_DESC = {
  $struct: "vb_recv_desc",
  $size: 16,
  wr_id: 0,
  sge_index: 8,
  num_sge: 12,
} as const;

/**
 * struct vb_wc — 40 bytes, one completion (imm already in host order)
 * ```
 *  0 ┌──────────── wr_id u64 ───────────┐
 *  8 │ status u32      │ opcode u32     │
 * 16 │ byte_len u32    │ imm u32        │
 * 24 │ qp_num u32      │ wc_flags u32   │
 * 32 │ vendor_err u32  │ src_qp u32     │
 * 40 └──────────────────────────────────┘
 * ```
 */
export const VB_WC = {
  $struct: "vb_wc",
  $size: 40,
  wr_id: 0,
  status: 8,
  opcode: 12,
  byte_len: 16,
  imm: 20,
  qp_num: 24,
  wc_flags: 28,
  vendor_err: 32,
  src_qp: 36,
} as const;

/**
 * struct vb_ubring_block — 64 bytes, one block of brpc's UBRing ring (its UbrMsgFormat)
 * ```
 *  0 ┌──────────── payload[60] ────────────┐
 * 60 │ flag u8 │ len u8 │ cur u8 │ reserved │
 * 64 └─────────────────────────────────────┘
 * ```
 */
export const VB_UBRING_BLOCK = {
  $struct: "vb_ubring_block",
  $size: 64,
  payload: 0,
  flag: 60,
  len: 61,
  cur: 62,
} as const;

/**
 * struct vb_ubring_gather — 20 bytes, what one vb_ubring_gather did
 * ```
 *  0 ┌ blocks u32 ┬ bytes u32 ┬ pos u32 ┬ bad_block u32 ┐
 * 16 │ flag u8 │ len u8 │ cur u8 │ reserved u8         │
 * 20 └──────────────────────────────────────────────────┘
 * ```
 */
export const VB_UBRING_GATHER = {
  $struct: "vb_ubring_gather",
  $size: 20,
  blocks: 0,
  bytes: 4,
  pos: 8,
  bad_block: 12,
  flag: 16,
  len: 17,
  cur: 18,
} as const;
