/**
 * libibverbs: the exported control-path calls. The data-path calls (`ibv_post_send`,
 * `ibv_post_recv`, `ibv_poll_cq`, `ibv_req_notify_cq`) and `ibv_query_port` are `static inline`
 * in verbs.h and are NOT bound here: the C helper wraps them (ffi/symbols/helper.ts).
 * @module
 */
import type { LibrarySpec } from "../loader.ts";

/** The libibverbs symbols verbus binds. */
export const LIBIBVERBS_SYMBOLS = {
  /** struct ibv_device **ibv_get_device_list(int *num_devices);  NULL + errno (ENOSYS: no kernel support) */
  ibv_get_device_list: { args: ["buffer"], result: "pointer" },
  /** void ibv_free_device_list(struct ibv_device **list);  never with NULL: it crashes */
  ibv_free_device_list: { args: ["pointer"], result: "void" },
  /** const char *ibv_get_device_name(struct ibv_device *device); */
  ibv_get_device_name: { args: ["pointer"], result: "pointer" },
  /** __be64 ibv_get_device_guid(struct ibv_device *device); */
  ibv_get_device_guid: { args: ["pointer"], result: "u64" },
  /** struct ibv_context *ibv_open_device(struct ibv_device *device); */
  ibv_open_device: { args: ["pointer"], result: "pointer" },
  /** int ibv_close_device(struct ibv_context *context); */
  ibv_close_device: { args: ["pointer"], result: "i32" },
  /** int ibv_query_device(struct ibv_context *context, struct ibv_device_attr *device_attr); */
  ibv_query_device: { args: ["pointer", "buffer"], result: "i32" },
  /** int ibv_query_gid(struct ibv_context *context, uint8_t port_num, int index, union ibv_gid *gid); */
  ibv_query_gid: { args: ["pointer", "u8", "i32", "buffer"], result: "i32" },
  /** struct ibv_pd *ibv_alloc_pd(struct ibv_context *context); */
  ibv_alloc_pd: { args: ["pointer"], result: "pointer" },
  /** int ibv_dealloc_pd(struct ibv_pd *pd); */
  ibv_dealloc_pd: { args: ["pointer"], result: "i32" },
  /** struct ibv_mr *ibv_reg_mr(struct ibv_pd *pd, void *addr, size_t length, int access);  (exported form) */
  ibv_reg_mr: { args: ["pointer", "pointer", "usize", "i32"], result: "pointer" },
  /** int ibv_dereg_mr(struct ibv_mr *mr); */
  ibv_dereg_mr: { args: ["pointer"], result: "i32" },
  /** struct ibv_comp_channel *ibv_create_comp_channel(struct ibv_context *context); */
  ibv_create_comp_channel: { args: ["pointer"], result: "pointer" },
  /** int ibv_destroy_comp_channel(struct ibv_comp_channel *channel); */
  ibv_destroy_comp_channel: { args: ["pointer"], result: "i32" },
  /** struct ibv_cq *ibv_create_cq(struct ibv_context *ctx, int cqe, void *cq_context, struct ibv_comp_channel *channel, int comp_vector); */
  ibv_create_cq: { args: ["pointer", "i32", "pointer", "pointer", "i32"], result: "pointer" },
  /** int ibv_destroy_cq(struct ibv_cq *cq); */
  ibv_destroy_cq: { args: ["pointer"], result: "i32" },
  /** int ibv_get_cq_event(struct ibv_comp_channel *channel, struct ibv_cq **cq, void **cq_context); */
  ibv_get_cq_event: { args: ["pointer", "buffer", "buffer"], result: "i32" },
  /** void ibv_ack_cq_events(struct ibv_cq *cq, unsigned int nevents); */
  ibv_ack_cq_events: { args: ["pointer", "u32"], result: "void" },
  /** struct ibv_qp *ibv_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *qp_init_attr); */
  ibv_create_qp: { args: ["pointer", "buffer"], result: "pointer" },
  /** int ibv_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int attr_mask); */
  ibv_modify_qp: { args: ["pointer", "buffer", "i32"], result: "i32" },
  /** int ibv_query_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int attr_mask, struct ibv_qp_init_attr *init_attr); */
  ibv_query_qp: { args: ["pointer", "buffer", "i32", "buffer"], result: "i32" },
  /** int ibv_destroy_qp(struct ibv_qp *qp); */
  ibv_destroy_qp: { args: ["pointer"], result: "i32" },
  /** int ibv_get_async_event(struct ibv_context *context, struct ibv_async_event *event); */
  ibv_get_async_event: { args: ["pointer", "buffer"], result: "i32" },
  /** void ibv_ack_async_event(struct ibv_async_event *event); */
  ibv_ack_async_event: { args: ["buffer"], result: "void" },
  /** const char *ibv_wc_status_str(enum ibv_wc_status status); */
  ibv_wc_status_str: { args: ["i32"], result: "pointer" },
  /** const char *ibv_port_state_str(enum ibv_port_state port_state); */
  ibv_port_state_str: { args: ["i32"], result: "pointer" },
  /** const char *ibv_event_type_str(enum ibv_event_type event); */
  ibv_event_type_str: { args: ["i32"], result: "pointer" },
  /** int ibv_fork_init(void); */
  ibv_fork_init: { args: [], result: "i32" },
} as const;

/** Where to find libibverbs. */
export const LIBIBVERBS_SPEC: LibrarySpec<typeof LIBIBVERBS_SYMBOLS> = {
  name: "libibverbs",
  envVar: "VERBUS_LIBIBVERBS",
  sonames: ["libibverbs.so.1"],
  table: LIBIBVERBS_SYMBOLS,
};

/** enum ibv_access_flags */
export const IBV_ACCESS = {
  LOCAL_WRITE: 1,
  REMOTE_WRITE: 2,
  REMOTE_READ: 4,
  REMOTE_ATOMIC: 8,
} as const;
/** enum ibv_qp_type */
export const IBV_QPT = { RC: 2, UC: 3, UD: 4 } as const;
/** enum ibv_qp_state */
export const IBV_QPS = { RESET: 0, INIT: 1, RTR: 2, RTS: 3, SQD: 4, SQE: 5, ERR: 6 } as const;
/** enum ibv_qp_attr_mask */
export const IBV_QP_ATTR_MASK = {
  STATE: 1 << 0,
  CUR_STATE: 1 << 1,
  EN_SQD_ASYNC_NOTIFY: 1 << 2,
  ACCESS_FLAGS: 1 << 3,
  PKEY_INDEX: 1 << 4,
  PORT: 1 << 5,
  QKEY: 1 << 6,
  AV: 1 << 7,
  PATH_MTU: 1 << 8,
  TIMEOUT: 1 << 9,
  RETRY_CNT: 1 << 10,
  RNR_RETRY: 1 << 11,
  RQ_PSN: 1 << 12,
  MAX_QP_RD_ATOMIC: 1 << 13,
  ALT_PATH: 1 << 14,
  MIN_RNR_TIMER: 1 << 15,
  SQ_PSN: 1 << 16,
  MAX_DEST_RD_ATOMIC: 1 << 17,
  PATH_MIG_STATE: 1 << 18,
  CAP: 1 << 19,
  DEST_QPN: 1 << 20,
} as const;
/** enum ibv_wr_opcode */
export const IBV_WR = {
  RDMA_WRITE: 0,
  RDMA_WRITE_WITH_IMM: 1,
  SEND: 2,
  SEND_WITH_IMM: 3,
  RDMA_READ: 4,
} as const;
/** enum ibv_send_flags */
export const IBV_SEND = { FENCE: 1, SIGNALED: 2, SOLICITED: 4, INLINE: 8 } as const;
/** enum ibv_wc_opcode */
export const IBV_WC_OPCODE = {
  SEND: 0,
  RDMA_WRITE: 1,
  RDMA_READ: 2,
  COMP_SWAP: 3,
  FETCH_ADD: 4,
  BIND_MW: 5,
  RECV: 128,
  RECV_RDMA_WITH_IMM: 129,
} as const;
/** enum ibv_wc_status: IBV_WC_WR_FLUSH_ERR — a WR flushed because the QP is in error (a consequence). */
export const IBV_WC_WR_FLUSH_ERR = 5;
/** enum ibv_wc_flags */
export const IBV_WC_WITH_IMM = 2;
/** enum ibv_port_state */
export const IBV_PORT_STATE = ["NOP", "DOWN", "INIT", "ARMED", "ACTIVE", "ACTIVE_DEFER"] as const;
/** enum ibv_mtu → bytes */
export const IBV_MTU_BYTES: Readonly<Record<number, number>> = {
  1: 256,
  2: 512,
  3: 1024,
  4: 2048,
  5: 4096,
};
/** IBV_LINK_LAYER_* */
export const IBV_LINK_LAYER: Readonly<Record<number, string>> = {
  0: "unspecified",
  1: "InfiniBand",
  2: "Ethernet",
};
