/**
 * liburma struct layouts (x86_64, openEuler UMDK 25.12 – 26.06: urma_types.h), as named offset
 * constants: those of the default ABI "25.12". Three structs differ between the named ABIs
 * (urma_rjetty_t, urma_seg_t, urma_target_seg_t): ffi/layouts/urma_abi.ts has their variants,
 * and URMA code reads them from `UrmaLib.layouts`. tests/urma/abi_test.ts checks every one
 * against the sizeof/offsetof table printed by the simulator's `abi_check` of each ABI.
 *
 * UMDK 24.12 LTS differs — `urma_sge_t` is 24 B (no `user_tseg`), `urma_rjetty_t` 40 B (no
 * `tp_type`) — and is refused by transport/urma/urma_lib.ts: these offsets would corrupt it.
 *
 * Object structs (urma_context_t, urma_jfc_t, urma_jetty_t...) grow between releases: verbus
 * treats them as opaque and reads only their leading fields (named below).
 * @module
 */
import type { Layout } from "./layout.ts";

/** union urma_eid — 16 B, raw[16] (8-byte aligned: it has u64 members) */
export const URMA_EID = { $struct: "urma_eid_t", $size: 16 } as const;

/** struct urma_token — 4 B: token u32 @0 */
export const URMA_TOKEN = { $struct: "urma_token_t", $size: 4, token: 0 } as const;

/** struct urma_init_attr — 16 B: token u64 @0, uasid u32 @8 */
export const URMA_INIT_ATTR = {
  $struct: "urma_init_attr_t",
  $size: 16,
  token: 0,
  uasid: 8,
} as const;

/**
 * struct urma_jetty_id — 24 B
 * ```
 *  0 ┌─────────── eid[16] ───────────┐
 * 16 │ uasid u32     │ id u32        │
 * 24 └───────────────────────────────┘
 * ```
 */
export const URMA_JETTY_ID = {
  $struct: "urma_jetty_id_t",
  $size: 24,
  eid: 0,
  uasid: 16,
  id: 20,
} as const;

/** struct urma_eid_info — 24 B: eid @0, eid_index u32 @16 */
export const URMA_EID_INFO = {
  $struct: "urma_eid_info_t",
  $size: 24,
  eid: 0,
  eid_index: 16,
} as const;

/**
 * struct urma_sge — 32 B (24.12: 24 B, no user_tseg)
 * ```
 *  0 addr u64 | 8 len u32 | 16 tseg* (urma_target_seg_t) | 24 user_tseg*
 * ```
 */
export const URMA_SGE = {
  $struct: "urma_sge_t",
  $size: 32,
  addr: 0,
  len: 8,
  tseg: 16,
  user_tseg: 24,
} as const;

/** struct urma_sg — 16 B: sge* @0, num_sge u32 @8 */
export const URMA_SG = { $struct: "urma_sg_t", $size: 16, sge: 0, num_sge: 8 } as const;

/**
 * struct urma_jfs_wr — 80 B
 * ```
 *  0 opcode u32 | 4 flag u32 (urma_jfs_wr_flag_t)
 *  8 tjetty* (urma_target_jetty_t)
 * 16 user_ctx u64 (returned in the completion)
 * 24 union ┬ rw:   src sg @24 | dst sg @40 | target_hint u8 @56 | notify_data u64 @64 (WRITE_IMM imm)
 *          └ send: src sg @24 | target_hint u8 @40 | imm_data u64 @48 | tseg* @56
 * 72 next*
 * ```
 */
export const URMA_JFS_WR = {
  $struct: "urma_jfs_wr_t",
  $size: 80,
  opcode: 0,
  flag: 4,
  tjetty: 8,
  user_ctx: 16,
  "rw.src": 24,
  "rw.dst": 40,
  "rw.target_hint": 56,
  "rw.notify_data": 64,
  "send.src": 24,
  "send.target_hint": 40,
  "send.imm_data": 48,
  "send.tseg": 56,
  next: 72,
} as const;

/** urma_jfs_wr_flag_t bit positions (pseudo-struct: "offset" = bit, checked like offsets). */
export const URMA_JFS_WR_FLAG_BITS = {
  $struct: "urma_jfs_wr_flag_t.bits",
  $size: 32,
  place_order: 0,
  comp_order: 2,
  fence: 3,
  solicited_enable: 4,
  complete_enable: 5,
  inline_flag: 6,
} as const;

/** struct urma_jfr_wr — 32 B: src sg @0, user_ctx u64 @16, next* @24 */
export const URMA_JFR_WR = {
  $struct: "urma_jfr_wr_t",
  $size: 32,
  src: 0,
  user_ctx: 16,
  next: 24,
} as const;

/**
 * struct urma_cr — 80 B (one completion record)
 * ```
 *  0 status u32 (urma_cr_status_t)  | 8 user_ctx u64
 * 16 opcode u32 (recv only)         | 20 flag u8 (bit0 s_r: 0 send, 1 recv; bit1 jetty)
 * 24 completion_len u32             | 28 local_id u32
 * 32 remote_id (urma_jetty_id_t, 24 B: eid @32, uasid @48, id @52)
 * 56 imm_data u64 (host order)      | 64 tpn u32 | 72 user_data u64
 * ```
 */
export const URMA_CR = {
  $struct: "urma_cr_t",
  $size: 80,
  status: 0,
  user_ctx: 8,
  opcode: 16,
  flag: 20,
  completion_len: 24,
  local_id: 28,
  remote_id: 32,
  imm_data: 56,
  tpn: 64,
  user_data: 72,
} as const;

/** urma_cr_flag_t bit positions. */
export const URMA_CR_FLAG_BITS = {
  $struct: "urma_cr_flag_t.bits",
  $size: 8,
  s_r: 0,
  jetty: 1,
} as const;

/** struct urma_jfc_cfg — 32 B: depth @0, flag @4, ceqn @8, jfce* @16, user_ctx @24 */
export const URMA_JFC_CFG = {
  $struct: "urma_jfc_cfg_t",
  $size: 32,
  depth: 0,
  flag: 4,
  ceqn: 8,
  jfce: 16,
  user_ctx: 24,
} as const;

/**
 * struct urma_jfs_cfg — 40 B
 * ```
 *  0 depth u32 | 4 flag u32 | 8 trans_mode u32 | 12 priority u8, 13 max_sge u8, 14 max_rsge u8
 * 16 max_inline_data u32 | 20 rnr_retry u8, 21 err_timeout u8 | 24 jfc* | 32 user_ctx u64
 * ```
 */
export const URMA_JFS_CFG = {
  $struct: "urma_jfs_cfg_t",
  $size: 40,
  depth: 0,
  flag: 4,
  trans_mode: 8,
  priority: 12,
  max_sge: 13,
  max_rsge: 14,
  max_inline_data: 16,
  rnr_retry: 20,
  err_timeout: 21,
  jfc: 24,
  user_ctx: 32,
} as const;

/**
 * struct urma_jfr_cfg — 48 B
 * ```
 *  0 id u32 | 4 depth u32 | 8 flag u32 | 12 trans_mode u32 | 16 max_sge u8, 17 min_rnr_timer u8
 * 24 jfc* | 32 token_value u32 | 40 user_ctx u64
 * ```
 */
export const URMA_JFR_CFG = {
  $struct: "urma_jfr_cfg_t",
  $size: 48,
  id: 0,
  depth: 4,
  flag: 8,
  trans_mode: 12,
  max_sge: 16,
  min_rnr_timer: 17,
  jfc: 24,
  token_value: 32,
  user_ctx: 40,
} as const;

/**
 * struct urma_jetty_cfg — 80 B
 * ```
 *  0 id u32 | 4 flag u32 (bit0 share_jfr) | 8 jfs_cfg (40 B)
 * 48 shared.jfr* | 56 shared.jfc* | 64 jetty_grp* | 72 user_ctx u64
 * ```
 */
export const URMA_JETTY_CFG = {
  $struct: "urma_jetty_cfg_t",
  $size: 80,
  id: 0,
  flag: 4,
  jfs_cfg: 8,
  "shared.jfr": 48,
  "shared.jfc": 56,
  jetty_grp: 64,
  user_ctx: 72,
} as const;

/** urma_jetty_flag_t bit positions. */
export const URMA_JETTY_FLAG_BITS = {
  $struct: "urma_jetty_flag_t.bits",
  $size: 32,
  share_jfr: 0,
} as const;

/**
 * struct urma_seg_cfg — 48 B
 * ```
 *  0 va u64 | 8 len u64 | 16 token_id* | 24 token_value u32 | 28 flag u32 | 32 user_ctx | 40 iova
 * ```
 */
export const URMA_SEG_CFG = {
  $struct: "urma_seg_cfg_t",
  $size: 48,
  va: 0,
  len: 8,
  token_id: 16,
  token_value: 24,
  flag: 28,
  user_ctx: 32,
  iova: 40,
} as const;

/** urma_reg_seg_flag_t bit positions: token_policy:3 cacheable dsva access:6 non_pin user_iova token_id_valid. */
export const URMA_REG_SEG_FLAG_BITS = {
  $struct: "urma_reg_seg_flag_t.bits",
  $size: 32,
  token_policy: 0,
  cacheable: 3,
  dsva: 4,
  access: 5,
  non_pin: 11,
  user_iova: 12,
  token_id_valid: 13,
} as const;

/** struct urma_ubva — 28 B packed: eid @0, uasid u32 @16, va u64 @20 */
export const URMA_UBVA = { $struct: "urma_ubva_t", $size: 28, eid: 0, uasid: 16, va: 20 } as const;

/**
 * struct urma_seg — 48 B (what a peer needs to import a segment; sent in the handshake)
 * ```
 *  0 ubva (28 B packed: eid, uasid, va) | 32 len u64 | 40 attr u32 | 44 token_id u32
 * ```
 */
export const URMA_SEG = {
  $struct: "urma_seg_t",
  $size: 48,
  ubva: 0,
  len: 32,
  attr: 40,
  token_id: 44,
} as const;

/** struct urma_target_seg — 88 B: seg @0, user_ctx @48, mva @56, urma_ctx* @64, token_id* @72, handle @80 */
export const URMA_TARGET_SEG = {
  $struct: "urma_target_seg_t",
  $size: 88,
  seg: 0,
  user_ctx: 48,
  mva: 56,
  urma_ctx: 64,
  token_id: 72,
  handle: 80,
} as const;

/**
 * struct urma_rjetty — 48 B (24.12: 40 B, no tp_type)
 * ```
 *  0 jetty_id (24 B) | 24 trans_mode u32 | 28 policy u32 | 32 type u32 | 36 flag u32 | 40 tp_type u32
 * ```
 */
export const URMA_RJETTY = {
  $struct: "urma_rjetty_t",
  $size: 48,
  jetty_id: 0,
  trans_mode: 24,
  policy: 28,
  type: 32,
  flag: 36,
  tp_type: 40,
} as const;

/** Leading fields of opaque objects (their sizes differ between releases: no $size check). */
type Leading = { readonly $struct: string; readonly [field: string]: number | string };
/** urma_jetty_t: urma_ctx* @0, jetty_id @8 */
export const URMA_JETTY_LEAD: Leading = { $struct: "urma_jetty_t", urma_ctx: 0, jetty_id: 8 };
/** urma_jfr_t: urma_ctx* @0, jfr_id @8 */
export const URMA_JFR_LEAD: Leading = { $struct: "urma_jfr_t", urma_ctx: 0, jfr_id: 8 };
/** urma_context_t: async_fd i32 @20 (readable while async events wait) */
export const URMA_CONTEXT_LEAD: Leading = { $struct: "urma_context_t", async_fd: 20 };
/** urma_jfce_t: urma_ctx* @0, fd i32 @8 (pollable) */
export const URMA_JFCE_LEAD: Leading = { $struct: "urma_jfce_t", urma_ctx: 0, fd: 8 };
/** urma_jfc_t: urma_ctx* @0, jfc_id @8 */
export const URMA_JFC_LEAD: Leading = { $struct: "urma_jfc_t", urma_ctx: 0, jfc_id: 8 };
/** urma_device_t: name[64] @0 */
export const URMA_DEVICE_LEAD: Leading = { $struct: "urma_device_t", name: 0 };
/** urma_device_attr_t: guid @0 and the leading capabilities of dev_cap @16. */
export const URMA_DEVICE_ATTR_LEAD: Leading = {
  $struct: "urma_device_attr_t",
  guid: 0,
  "dev_cap.max_jfc": 20,
  "dev_cap.max_jfs": 24,
  "dev_cap.max_jfr": 28,
  "dev_cap.max_jetty": 32,
  "dev_cap.max_jfc_depth": 44,
  "dev_cap.max_jfs_depth": 48,
  "dev_cap.max_jfr_depth": 52,
  "dev_cap.max_jfs_inline_len": 56,
  "dev_cap.max_jfs_sge": 60,
  "dev_cap.max_jfs_rsge": 64,
  "dev_cap.max_jfr_sge": 68,
  "dev_cap.max_msg_size": 72,
};
/** A buffer large enough for urma_device_attr_t of any supported release. */
export const URMA_DEVICE_ATTR_BUFFER = 4096;

/** Every fixed-size layout (sizes and offsets checked). */
export const URMA_LAYOUTS: readonly Layout[] = [
  URMA_EID,
  URMA_TOKEN,
  URMA_INIT_ATTR,
  URMA_JETTY_ID,
  URMA_EID_INFO,
  URMA_SGE,
  URMA_SG,
  URMA_JFS_WR,
  URMA_JFS_WR_FLAG_BITS,
  URMA_JFR_WR,
  URMA_CR,
  URMA_CR_FLAG_BITS,
  URMA_JFC_CFG,
  URMA_JFS_CFG,
  URMA_JFR_CFG,
  URMA_JETTY_CFG,
  URMA_JETTY_FLAG_BITS,
  URMA_SEG_CFG,
  URMA_REG_SEG_FLAG_BITS,
  URMA_UBVA,
  URMA_SEG,
  URMA_TARGET_SEG,
  URMA_RJETTY,
];

/** Leading fields of opaque objects (offsets checked, sizes not). */
export const URMA_LEADING: readonly Leading[] = [
  URMA_CONTEXT_LEAD,
  URMA_JETTY_LEAD,
  URMA_JFR_LEAD,
  URMA_JFCE_LEAD,
  URMA_JFC_LEAD,
  URMA_DEVICE_LEAD,
  URMA_DEVICE_ATTR_LEAD,
];
