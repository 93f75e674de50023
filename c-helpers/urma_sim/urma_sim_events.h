/*
 * urma_sim_events.h — part of urma_sim.h (included by it, not on its own): the types and calls
 * of asynchronous events, queue states (modify / query / flush) and the descriptions "for proxy
 * transmission" of the SIMULATED liburma, with UMDK's layouts (urma_types.h, urma_opcode.h,
 * urma_api.h; checked by abi_check.c against the real headers).
 */
#ifndef VERBUS_URMA_SIM_EVENTS_H
#define VERBUS_URMA_SIM_EVENTS_H

/* ---- asynchronous events and queue states (urma_opcode.h, urma_types.h) ---- */
typedef enum urma_async_event_type {
	URMA_EVENT_JFC_ERR, URMA_EVENT_JFS_ERR, URMA_EVENT_JFR_ERR, URMA_EVENT_JFR_LIMIT,
	URMA_EVENT_JETTY_ERR, URMA_EVENT_JETTY_LIMIT, URMA_EVENT_JETTY_GRP_ERR, URMA_EVENT_PORT_ACTIVE,
	URMA_EVENT_PORT_DOWN, URMA_EVENT_DEV_FATAL, URMA_EVENT_EID_CHANGE, URMA_EVENT_ELR_ERR,
	URMA_EVENT_ELR_DONE
} urma_async_event_type_t;

/* 32 bytes: urma_ctx@0 element@8 (a pointer, or port_id / eid_idx u32) event_type@16 priv@24 */
typedef struct urma_async_event {
	const urma_context_t *urma_ctx;
	union { urma_jfc_t *jfc; urma_jfs_t *jfs; urma_jfr_t *jfr; urma_jetty_t *jetty;
		urma_jetty_grp_t *jetty_grp; uint32_t port_id; uint32_t eid_idx; } element;
	urma_async_event_type_t event_type;
	void *priv;
} urma_async_event_t;

typedef enum urma_jetty_state { URMA_JETTY_STATE_RESET = 0, URMA_JETTY_STATE_READY, URMA_JETTY_STATE_SUSPENDED,
				URMA_JETTY_STATE_ERROR } urma_jetty_state_t;
typedef urma_jetty_state_t urma_jfs_state_t;
typedef enum urma_jfr_state { URMA_JFR_STATE_RESET = 0, URMA_JFR_STATE_READY, URMA_JFR_STATE_ERROR } urma_jfr_state_t;
typedef enum urma_jetty_attr_mask { JETTY_RX_THRESHOLD = 0x1, JETTY_STATE = 0x1 << 1 } urma_jetty_attr_mask_t;
typedef enum urma_jfs_attr_mask { JFS_STATE = 0x1 } urma_jfs_attr_mask_t;
typedef enum urma_jfr_attr_mask { JFR_RX_THRESHOLD = 0x1, JFR_STATE = 0x1 << 1 } urma_jfr_attr_mask_t;
/* 12 bytes: mask@0 rx_threshold@4 state@8 */
typedef struct urma_jetty_attr { uint32_t mask; uint32_t rx_threshold; urma_jetty_state_t state; } urma_jetty_attr_t;
/* 8 bytes: mask@0 state@4 */
typedef struct urma_jfs_attr { uint32_t mask; urma_jfs_state_t state; } urma_jfs_attr_t;
/* 12 bytes: mask@0 rx_threshold@4 state@8 */
typedef struct urma_jfr_attr { uint32_t mask; uint32_t rx_threshold; urma_jfr_state_t state; } urma_jfr_attr_t;

urma_status_t urma_get_async_event(urma_context_t *ctx, urma_async_event_t *event);
void urma_ack_async_event(urma_async_event_t *event);
int urma_flush_jetty(urma_jetty_t *jetty, int cr_cnt, urma_cr_t *cr);
int urma_flush_jfs(urma_jfs_t *jfs, int cr_cnt, urma_cr_t *cr);
urma_status_t urma_modify_jetty(urma_jetty_t *jetty, urma_jetty_attr_t *attr);
urma_status_t urma_query_jetty(urma_jetty_t *jetty, urma_jetty_cfg_t *cfg, urma_jetty_attr_t *attr);
urma_status_t urma_modify_jfs(urma_jfs_t *jfs, urma_jfs_attr_t *attr);
urma_status_t urma_modify_jfr(urma_jfr_t *jfr, urma_jfr_attr_t *attr);
#if URMA_SIM_ABI != URMA_SIM_ABI_B081
/* Descriptions "for proxy transmission" (struct + user info; sim_blob.c). */
urma_status_t urma_get_seg_ctx(urma_target_seg_t *tseg, urma_seg_t **seg, uint32_t *size);
void urma_put_seg_ctx(urma_seg_t *seg);
urma_status_t urma_get_rjetty(urma_jetty_t *jetty, urma_rjetty_t **rjetty, uint32_t *length);
void urma_put_rjetty(urma_rjetty_t *rjetty);
#endif

/* SIMULATOR-ONLY fault injection: queues async event `event_type` on ctx (element: the jetty /
 * JFC / JFS / JFR pointer, or the port id / eid index as an integer) and makes ctx->async_fd
 * readable; URMA_EVENT_JETTY_ERR also moves the jetty to the ERROR state. 0 or a status. */
int urma_sim_inject_async_event(urma_context_t *ctx, void *element, uint32_t event_type);

#endif
