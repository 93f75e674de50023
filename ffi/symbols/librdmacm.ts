/**
 * librdmacm: connection management. `rdma_get_local_addr` / `rdma_get_peer_addr` are static
 * inline (they read `id->route.addr`): read those through the rdma_cm_id layout instead.
 * @module
 */
import type { LibrarySpec } from "../loader.ts";

/** The librdmacm symbols verbus binds. */
export const LIBRDMACM_SYMBOLS = {
  /** struct rdma_event_channel *rdma_create_event_channel(void); */
  rdma_create_event_channel: { args: [], result: "pointer" },
  /** void rdma_destroy_event_channel(struct rdma_event_channel *channel); */
  rdma_destroy_event_channel: { args: ["pointer"], result: "void" },
  /** int rdma_create_id(struct rdma_event_channel *channel, struct rdma_cm_id **id, void *context, enum rdma_port_space ps); */
  rdma_create_id: { args: ["pointer", "buffer", "pointer", "i32"], result: "i32" },
  /** int rdma_destroy_id(struct rdma_cm_id *id); */
  rdma_destroy_id: { args: ["pointer"], result: "i32" },
  /** int rdma_bind_addr(struct rdma_cm_id *id, struct sockaddr *addr); */
  rdma_bind_addr: { args: ["pointer", "buffer"], result: "i32" },
  /** int rdma_resolve_addr(struct rdma_cm_id *id, struct sockaddr *src_addr, struct sockaddr *dst_addr, int timeout_ms); */
  rdma_resolve_addr: { args: ["pointer", "buffer", "buffer", "i32"], result: "i32" },
  /** int rdma_resolve_route(struct rdma_cm_id *id, int timeout_ms); */
  rdma_resolve_route: { args: ["pointer", "i32"], result: "i32" },
  /** int rdma_create_qp(struct rdma_cm_id *id, struct ibv_pd *pd, struct ibv_qp_init_attr *qp_init_attr); */
  rdma_create_qp: { args: ["pointer", "pointer", "buffer"], result: "i32" },
  /** void rdma_destroy_qp(struct rdma_cm_id *id); */
  rdma_destroy_qp: { args: ["pointer"], result: "void" },
  /** int rdma_connect(struct rdma_cm_id *id, struct rdma_conn_param *conn_param); */
  rdma_connect: { args: ["pointer", "buffer"], result: "i32" },
  /** int rdma_listen(struct rdma_cm_id *id, int backlog); */
  rdma_listen: { args: ["pointer", "i32"], result: "i32" },
  /** int rdma_accept(struct rdma_cm_id *id, struct rdma_conn_param *conn_param); */
  rdma_accept: { args: ["pointer", "buffer"], result: "i32" },
  /** int rdma_reject(struct rdma_cm_id *id, const void *private_data, uint8_t private_data_len); */
  rdma_reject: { args: ["pointer", "buffer", "u8"], result: "i32" },
  /** int rdma_get_cm_event(struct rdma_event_channel *channel, struct rdma_cm_event **event);  blocks unless the fd is O_NONBLOCK */
  rdma_get_cm_event: { args: ["pointer", "buffer"], result: "i32" },
  /** int rdma_ack_cm_event(struct rdma_cm_event *event); */
  rdma_ack_cm_event: { args: ["pointer"], result: "i32" },
  /** int rdma_disconnect(struct rdma_cm_id *id); */
  rdma_disconnect: { args: ["pointer"], result: "i32" },
  /** const char *rdma_event_str(enum rdma_cm_event_type event); */
  rdma_event_str: { args: ["i32"], result: "pointer" },
  /** __be16 rdma_get_src_port(struct rdma_cm_id *id); */
  rdma_get_src_port: { args: ["pointer"], result: "u16" },
  /** __be16 rdma_get_dst_port(struct rdma_cm_id *id); */
  rdma_get_dst_port: { args: ["pointer"], result: "u16" },
  /** int rdma_set_option(struct rdma_cm_id *id, int level, int optname, void *optval, size_t optlen); */
  rdma_set_option: { args: ["pointer", "i32", "i32", "buffer", "usize"], result: "i32" },
  /** int rdma_migrate_id(struct rdma_cm_id *id, struct rdma_event_channel *channel); */
  rdma_migrate_id: { args: ["pointer", "pointer"], result: "i32" },
  /** int rdma_init_qp_attr(struct rdma_cm_id *id, struct ibv_qp_attr *qp_attr, int *qp_attr_mask);  attrs for a user-created QP */
  rdma_init_qp_attr: { args: ["pointer", "buffer", "buffer"], result: "i32" },
  /** int rdma_establish(struct rdma_cm_id *id);  active side with a user-created QP, after CONNECT_RESPONSE */
  rdma_establish: { args: ["pointer"], result: "i32" },
} as const;

/** Where to find librdmacm. */
export const LIBRDMACM_SPEC: LibrarySpec<typeof LIBRDMACM_SYMBOLS> = {
  name: "librdmacm",
  envVar: "VERBUS_LIBRDMACM",
  sonames: ["librdmacm.so.1"],
  table: LIBRDMACM_SYMBOLS,
};

/** enum rdma_port_space */
export const RDMA_PS_TCP = 0x0106;
/** enum rdma_cm_event_type, by value. */
export const RDMA_CM_EVENT = [
  "ADDR_RESOLVED",
  "ADDR_ERROR",
  "ROUTE_RESOLVED",
  "ROUTE_ERROR",
  "CONNECT_REQUEST",
  "CONNECT_RESPONSE",
  "CONNECT_ERROR",
  "UNREACHABLE",
  "REJECTED",
  "ESTABLISHED",
  "DISCONNECTED",
  "DEVICE_REMOVAL",
  "MULTICAST_JOIN",
  "MULTICAST_ERROR",
  "ADDR_CHANGE",
  "TIMEWAIT_EXIT",
] as const;
