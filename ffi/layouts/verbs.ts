/**
 * libibverbs struct layouts (x86_64, rdma-core's <infiniband/verbs.h>), checked at load against
 * the helper's sizeof/offsetof table. Only the fields verbus reads or writes are named.
 * @module
 */

/** struct ibv_sge — 16 B: addr u64 @0, length u32 @8, lkey u32 @12 */
export const IBV_SGE = { $struct: "ibv_sge", $size: 16, addr: 0, length: 8, lkey: 12 } as const;

/**
 * struct ibv_wc — 48 B
 * ```
 *  0 wr_id u64 | 8 status | 12 opcode | 16 vendor_err | 20 byte_len | 24 imm_data (be32)
 * 28 qp_num | 32 src_qp | 36 wc_flags | 40 pkey_index u16, slid u16, sl u8, dlid_path_bits u8
 * ```
 */
export const IBV_WC = {
  $struct: "ibv_wc",
  $size: 48,
  wr_id: 0,
  status: 8,
  opcode: 12,
  vendor_err: 16,
  byte_len: 20,
  imm_data: 24,
  qp_num: 28,
  src_qp: 32,
  wc_flags: 36,
} as const;

/**
 * struct ibv_send_wr — 128 B
 * ```
 *  0 wr_id u64 | 8 next* | 16 sg_list* | 24 num_sge i32 | 28 opcode | 32 send_flags | 36 imm_data
 * 40 wr (union): rdma.remote_addr u64 @40, rdma.rkey u32 @48 | ... | qp_type, bind_mw / tso
 * ```
 */
export const IBV_SEND_WR = {
  $struct: "ibv_send_wr",
  $size: 128,
  wr_id: 0,
  next: 8,
  sg_list: 16,
  num_sge: 24,
  opcode: 28,
  send_flags: 32,
  imm_data: 36,
  "wr.rdma.remote_addr": 40,
  "wr.rdma.rkey": 48,
} as const;

/** struct ibv_recv_wr — 32 B: wr_id @0, next* @8, sg_list* @16, num_sge @24 */
export const IBV_RECV_WR = {
  $struct: "ibv_recv_wr",
  $size: 32,
  wr_id: 0,
  next: 8,
  sg_list: 16,
  num_sge: 24,
} as const;

/** struct ibv_qp_cap — 20 B: max_send_wr, max_recv_wr, max_send_sge, max_recv_sge, max_inline_data (u32 each) */
export const IBV_QP_CAP = {
  $struct: "ibv_qp_cap",
  $size: 20,
  max_send_wr: 0,
  max_recv_wr: 4,
  max_send_sge: 8,
  max_recv_sge: 12,
  max_inline_data: 16,
} as const;

/**
 * struct ibv_qp_init_attr — 64 B
 * ```
 *  0 qp_context* | 8 send_cq* | 16 recv_cq* | 24 srq* | 32 cap (ibv_qp_cap, 20 B)
 * 52 qp_type | 56 sq_sig_all
 * ```
 */
export const IBV_QP_INIT_ATTR = {
  $struct: "ibv_qp_init_attr",
  $size: 64,
  qp_context: 0,
  send_cq: 8,
  recv_cq: 16,
  srq: 24,
  cap: 32,
  qp_type: 52,
  sq_sig_all: 56,
} as const;

/** struct ibv_global_route — 24 B: dgid[16] @0, flow_label @16, sgid_index u8 @20, hop_limit u8 @21, traffic_class u8 @22 */
export const IBV_GLOBAL_ROUTE = {
  $struct: "ibv_global_route",
  $size: 24,
  dgid: 0,
  flow_label: 16,
  sgid_index: 20,
  hop_limit: 21,
  traffic_class: 22,
} as const;

/** struct ibv_ah_attr — 32 B: grh @0, dlid u16 @24, sl @26, src_path_bits @27, static_rate @28, is_global @29, port_num @30 */
export const IBV_AH_ATTR = {
  $struct: "ibv_ah_attr",
  $size: 32,
  grh: 0,
  dlid: 24,
  sl: 26,
  src_path_bits: 27,
  static_rate: 28,
  is_global: 29,
  port_num: 30,
} as const;

/**
 * struct ibv_qp_attr — 144 B
 * ```
 *   0 qp_state | 4 cur_qp_state | 8 path_mtu | 12 path_mig_state | 16 qkey | 20 rq_psn
 *  24 sq_psn | 28 dest_qp_num | 32 qp_access_flags | 36 cap (20 B) | 56 ah_attr (32 B)
 *  88 alt_ah_attr | 120 pkey_index u16 | 122 alt_pkey_index | 124 en_sqd_async_notify u8
 * 125 sq_draining | 126 max_rd_atomic | 127 max_dest_rd_atomic | 128 min_rnr_timer
 * 129 port_num | 130 timeout | 131 retry_cnt | 132 rnr_retry | 133 alt_port_num | 134 alt_timeout
 * 136 rate_limit u32
 * ```
 */
export const IBV_QP_ATTR = {
  $struct: "ibv_qp_attr",
  $size: 144,
  qp_state: 0,
  cur_qp_state: 4,
  path_mtu: 8,
  qkey: 16,
  rq_psn: 20,
  sq_psn: 24,
  dest_qp_num: 28,
  qp_access_flags: 32,
  cap: 36,
  ah_attr: 56,
  pkey_index: 120,
  max_rd_atomic: 126,
  max_dest_rd_atomic: 127,
  min_rnr_timer: 128,
  port_num: 129,
  timeout: 130,
  retry_cnt: 131,
  rnr_retry: 132,
} as const;

/**
 * struct ibv_port_attr — 52 B
 * ```
 *  0 state | 4 max_mtu | 8 active_mtu | 12 gid_tbl_len | 16 port_cap_flags | 20 max_msg_sz
 * 24 bad_pkey_cntr | 28 qkey_viol_cntr | 32 pkey_tbl_len u16 | 34 lid u16 | 36 sm_lid u16
 * 38 lmc .. 43 active_width u8 | 44 active_speed | 45 phys_state | 46 link_layer | 47 flags
 * 48 port_cap_flags2 u16
 * ```
 */
export const IBV_PORT_ATTR = {
  $struct: "ibv_port_attr",
  $size: 52,
  state: 0,
  max_mtu: 4,
  active_mtu: 8,
  gid_tbl_len: 12,
  port_cap_flags: 16,
  max_msg_sz: 20,
  lid: 34,
  active_width: 43,
  active_speed: 44,
  phys_state: 45,
  link_layer: 46,
} as const;

/**
 * struct ibv_device_attr — 232 B
 * ```
 *   0 fw_ver[64] | 64 node_guid | 72 sys_image_guid | 80 max_mr_size | 88 page_size_cap
 *  96 vendor_id | 100 vendor_part_id | 104 hw_ver | 108 max_qp | 112 max_qp_wr
 * 116 device_cap_flags | 120 max_sge | 124 max_sge_rd | 128 max_cq | 132 max_cqe | 136 max_mr
 * 140 max_pd | 144 max_qp_rd_atom | ... | 224 max_pkeys u16 | 226 local_ca_ack_delay | 227 phys_port_cnt
 * ```
 */
export const IBV_DEVICE_ATTR = {
  $struct: "ibv_device_attr",
  $size: 232,
  fw_ver: 0,
  node_guid: 64,
  max_mr_size: 80,
  vendor_id: 96,
  vendor_part_id: 100,
  hw_ver: 104,
  max_qp: 108,
  max_qp_wr: 112,
  max_sge: 120,
  max_cq: 128,
  max_cqe: 132,
  max_mr: 136,
  max_pd: 140,
  max_qp_rd_atom: 144,
  phys_port_cnt: 227,
} as const;

/** union ibv_gid — 16 B (raw[16]) */
export const IBV_GID = { $struct: "ibv_gid", $size: 16 } as const;

/** struct ibv_mr — 48 B: context* @0, pd* @8, addr* @16, length @24, handle @32, lkey @36, rkey @40 */
export const IBV_MR = {
  $struct: "ibv_mr",
  $size: 48,
  context: 0,
  pd: 8,
  addr: 16,
  length: 24,
  handle: 32,
  lkey: 36,
  rkey: 40,
} as const;

/** struct ibv_comp_channel — 16 B: context* @0, fd @8, refcnt @12 */
export const IBV_COMP_CHANNEL = {
  $struct: "ibv_comp_channel",
  $size: 16,
  context: 0,
  fd: 8,
} as const;

/** struct ibv_cq — 128 B: context* @0, channel* @8, cq_context* @16, handle @24, cqe @28, ... */
export const IBV_CQ = { $struct: "ibv_cq", $size: 128, context: 0, channel: 8, cqe: 28 } as const;

/** struct ibv_qp — 160 B: context* @0, qp_context* @8, pd* @16, ..., qp_num @52, state @56, qp_type @60 */
export const IBV_QP = {
  $struct: "ibv_qp",
  $size: 160,
  context: 0,
  pd: 16,
  qp_num: 52,
  state: 56,
  qp_type: 60,
} as const;

/** struct ibv_context — 328 B: device* @0, ops @8, cmd_fd @264, async_fd @268, num_comp_vectors @272 */
export const IBV_CONTEXT = {
  $struct: "ibv_context",
  $size: 328,
  device: 0,
  cmd_fd: 264,
  async_fd: 268,
  num_comp_vectors: 272,
} as const;

/** Every verbs layout, for the load-time check. */
export const VERBS_LAYOUTS = [
  IBV_SGE,
  IBV_WC,
  IBV_SEND_WR,
  IBV_RECV_WR,
  IBV_QP_CAP,
  IBV_QP_INIT_ATTR,
  IBV_GLOBAL_ROUTE,
  IBV_AH_ATTR,
  IBV_QP_ATTR,
  IBV_PORT_ATTR,
  IBV_DEVICE_ATTR,
  IBV_GID,
  IBV_MR,
  IBV_COMP_CHANNEL,
  IBV_CQ,
  IBV_QP,
  IBV_CONTEXT,
] as const;
