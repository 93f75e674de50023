/**
 * liburma layouts of asynchronous events and queue attributes (x86_64, the same in every named
 * ABI: checked, compiled, against openeuler-mirror/umdk urma_types.h at v25.12.0, v25.12.0.B081,
 * a3b44bfb and master 00cc16f1, and against the simulator's table by tests/urma/abi_test.ts).
 * @module
 */

/**
 * struct urma_async_event — 32 B
 * ```
 *  0 urma_ctx*  |  8 element (union: jfc* / jfs* / jfr* / jetty* / jetty_grp*, or port_id u32 /
 *  eid_idx u32) | 16 event_type u32 (urma_async_event_type_t) | 24 priv*
 * ```
 */
export const URMA_ASYNC_EVENT = {
  $struct: "urma_async_event_t",
  $size: 32,
  urma_ctx: 0,
  element: 8,
  "element.port_id": 8,
  event_type: 16,
  priv: 24,
} as const;

/** struct urma_jetty_attr — 12 B: mask u32 @0 (JETTY_STATE = 2), rx_threshold @4, state @8 */
export const URMA_JETTY_ATTR = {
  $struct: "urma_jetty_attr_t",
  $size: 12,
  mask: 0,
  rx_threshold: 4,
  state: 8,
} as const;

/** struct urma_jfs_attr — 8 B: mask u32 @0 (JFS_STATE = 1), state @4 */
export const URMA_JFS_ATTR = { $struct: "urma_jfs_attr_t", $size: 8, mask: 0, state: 4 } as const;

/** struct urma_jfr_attr — 12 B: mask u32 @0 (JFR_STATE = 2), rx_threshold @4, state @8 */
export const URMA_JFR_ATTR = {
  $struct: "urma_jfr_attr_t",
  $size: 12,
  mask: 0,
  rx_threshold: 4,
  state: 8,
} as const;

/** Every event / attribute layout (sizes and offsets checked). */
export const URMA_EVENT_LAYOUTS = [URMA_ASYNC_EVENT, URMA_JETTY_ATTR, URMA_JFS_ATTR, URMA_JFR_ATTR];

/** urma_async_event_type_t, by value (urma_opcode.h). */
export const URMA_EVENT_TYPES = [
  "URMA_EVENT_JFC_ERR",
  "URMA_EVENT_JFS_ERR",
  "URMA_EVENT_JFR_ERR",
  "URMA_EVENT_JFR_LIMIT",
  "URMA_EVENT_JETTY_ERR",
  "URMA_EVENT_JETTY_LIMIT",
  "URMA_EVENT_JETTY_GRP_ERR",
  "URMA_EVENT_PORT_ACTIVE",
  "URMA_EVENT_PORT_DOWN",
  "URMA_EVENT_DEV_FATAL",
  "URMA_EVENT_EID_CHANGE",
  "URMA_EVENT_ELR_ERR",
  "URMA_EVENT_ELR_DONE",
] as const;

/** urma_jetty_state_t (JFS states are the same). */
export const URMA_JETTY_STATE = { RESET: 0, READY: 1, SUSPENDED: 2, ERROR: 3 } as const;
/** urma_jetty_attr_mask_t bits. */
export const URMA_JETTY_ATTR_MASK = { RX_THRESHOLD: 1, STATE: 2 } as const;
