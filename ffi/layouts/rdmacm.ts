/**
 * librdmacm and socket address layouts (x86_64), checked at load against the helper's table.
 * @module
 */

/** struct rdma_event_channel — 4 B: fd @0 */
export const RDMA_EVENT_CHANNEL = { $struct: "rdma_event_channel", $size: 4, fd: 0 } as const;

/**
 * struct rdma_cm_id — 416 B
 * ```
 *   0 verbs* | 8 channel* | 16 context* | 24 qp* | 32 route (struct rdma_route: addr, path...)
 * 344 ps | 348 port_num u8 | 352 event* | 360 send_cq_channel* | 368 send_cq* | 376 recv_cq_channel*
 * 384 recv_cq* | 392 srq* | 400 pd* | 408 qp_type
 * ```
 */
export const RDMA_CM_ID = {
  $struct: "rdma_cm_id",
  $size: 416,
  verbs: 0,
  channel: 8,
  context: 16,
  qp: 24,
  port_num: 348,
  send_cq: 368,
  recv_cq: 384,
  pd: 400,
} as const;

/**
 * struct rdma_conn_param — 24 B
 * ```
 *  0 private_data* | 8 private_data_len u8 | 9 responder_resources | 10 initiator_depth
 * 11 flow_control | 12 retry_count | 13 rnr_retry_count | 14 srq | 16 qp_num u32
 * ```
 */
export const RDMA_CONN_PARAM = {
  $struct: "rdma_conn_param",
  $size: 24,
  private_data: 0,
  private_data_len: 8,
  responder_resources: 9,
  initiator_depth: 10,
  flow_control: 11,
  retry_count: 12,
  rnr_retry_count: 13,
  srq: 14,
  qp_num: 16,
} as const;

/** struct rdma_cm_event — 80 B: id* @0, listen_id* @8, event @16, status @20, param.conn @24 (rdma_conn_param) */
export const RDMA_CM_EVENT_LAYOUT = {
  $struct: "rdma_cm_event",
  $size: 80,
  id: 0,
  listen_id: 8,
  event: 16,
  status: 20,
  "param.conn": 24,
} as const;

/** struct sockaddr_in — 16 B: sin_family u16 @0, sin_port be16 @2, sin_addr be32 @4 */
export const SOCKADDR_IN = {
  $struct: "sockaddr_in",
  $size: 16,
  sin_family: 0,
  sin_port: 2,
  sin_addr: 4,
} as const;

/** struct sockaddr_in6 — 28 B: family @0, port @2, flowinfo @4, addr[16] @8, scope_id @24 */
export const SOCKADDR_IN6 = {
  $struct: "sockaddr_in6",
  $size: 28,
  sin6_family: 0,
  sin6_port: 2,
  sin6_flowinfo: 4,
  sin6_addr: 8,
  sin6_scope_id: 24,
} as const;

/** struct sockaddr_storage — 128 B */
export const SOCKADDR_STORAGE = { $struct: "sockaddr_storage", $size: 128 } as const;

/** Every rdmacm/socket layout, for the load-time check. */
export const RDMACM_LAYOUTS = [
  RDMA_EVENT_CHANNEL,
  RDMA_CM_ID,
  RDMA_CONN_PARAM,
  RDMA_CM_EVENT_LAYOUT,
  SOCKADDR_IN,
  SOCKADDR_IN6,
  SOCKADDR_STORAGE,
] as const;
