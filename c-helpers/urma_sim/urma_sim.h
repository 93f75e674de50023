/*
 * urma_sim.h — public types and functions of verbus's SIMULATED liburma.
 *
 * The types reproduce the x86_64 layouts of openEuler UMDK liburma (urma_types.h, urma_opcode.h,
 * urma_api.h) field for field, so code written against the real headers runs unchanged;
 * abi_check.c prints sizeof/offsetof of every struct TypeScript touches, and
 * ffi/layouts/urma.ts + urma_abi.ts are checked against that table. UMDK 24.12 LTS differs
 * (urma_sge_t 24 B without user_tseg, urma_rjetty_t 40 B without tp_type) and is NOT described.
 *
 * One named ABI per build (urma_sim_abi.h; the Makefile passes -DURMA_SIM_ABI=<n>).
 * Object structs (urma_context_t, urma_jfc_t, urma_jetty_t...) grow between UMDK releases:
 * callers must treat them as opaque and read only their leading fields (urma_jfce_t.fd @8,
 * urma_jetty_t.jetty_id @8, urma_jfr_t.jfr_id @8, urma_target_seg_t.seg @0).
 *
 * Besides the liburma API, the simulator exports urma_sim_* functions (bottom of this file);
 * their presence is how verbus knows it is talking to the simulator.
 */
#ifndef VERBUS_URMA_SIM_H
#define VERBUS_URMA_SIM_H

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#include "urma_sim_abi.h" /* which named UMDK ABI this build reproduces */

/* ---- status (urma_opcode.h: errno values, URMA_FAIL 0x1000) ---- */
typedef int urma_status_t;
#define URMA_SUCCESS 0
#define URMA_EAGAIN EAGAIN
#define URMA_ENOMEM ENOMEM
#define URMA_ENOPERM EPERM
#define URMA_ETIMEOUT ETIMEDOUT
#define URMA_EINVAL EINVAL
#define URMA_EEXIST EEXIST
#define URMA_EINPROGRESS EINPROGRESS
#define URMA_FAIL 0x1000

#define URMA_ACCESS_LOCAL_ONLY (0x1 << 0)
#define URMA_ACCESS_READ (0x1 << 1)
#define URMA_ACCESS_WRITE (0x1 << 2)
#define URMA_ACCESS_ATOMIC (0x1 << 3)
#define URMA_TOKEN_NONE 0
#define URMA_TOKEN_PLAIN_TEXT 1

typedef enum urma_opcode {
	URMA_OPC_WRITE = 0x00, URMA_OPC_WRITE_IMM = 0x01, URMA_OPC_WRITE_NOTIFY = 0x02,
	URMA_OPC_READ = 0x10,
	URMA_OPC_CAS = 0x20, URMA_OPC_SWAP = 0x21, URMA_OPC_FADD = 0x22, URMA_OPC_FSUB = 0x23,
	URMA_OPC_FAND = 0x24, URMA_OPC_FOR = 0x25, URMA_OPC_FXOR = 0x26,
	URMA_OPC_SEND = 0x40, URMA_OPC_SEND_IMM = 0x41, URMA_OPC_SEND_INVALIDATE = 0x42,
	URMA_OPC_NOP = 0x51,
} urma_opcode_t;

typedef enum urma_cr_status {
	URMA_CR_SUCCESS = 0, URMA_CR_UNSUPPORTED_OPCODE_ERR, URMA_CR_LOC_LEN_ERR,
	URMA_CR_LOC_OPERATION_ERR, URMA_CR_LOC_ACCESS_ERR, URMA_CR_REM_RESP_LEN_ERR,
	URMA_CR_REM_UNSUPPORTED_REQ_ERR, URMA_CR_REM_OPERATION_ERR, URMA_CR_REM_ACCESS_ABORT_ERR,
	URMA_CR_ACK_TIMEOUT_ERR, URMA_CR_RNR_RETRY_CNT_EXC_ERR, URMA_CR_WR_FLUSH_ERR,
	URMA_CR_WR_SUSPEND_DONE, URMA_CR_WR_FLUSH_ERR_DONE, URMA_CR_WR_UNHANDLED,
	URMA_CR_LOC_DATA_POISON, URMA_CR_REM_DATA_POISON,
} urma_cr_status_t;

typedef enum urma_cr_opcode {
	URMA_CR_OPC_SEND = 0x00, URMA_CR_OPC_SEND_WITH_IMM, URMA_CR_OPC_SEND_WITH_INV,
	URMA_CR_OPC_WRITE_WITH_IMM,
} urma_cr_opcode_t;

typedef enum urma_transport_mode { URMA_TM_RM = 0x1, URMA_TM_RC = 0x2, URMA_TM_UM = 0x4 } urma_transport_mode_t;
typedef enum urma_transport_type { URMA_TRANSPORT_INVALID = -1, URMA_TRANSPORT_UB = 0 } urma_transport_type_t;
typedef enum urma_tp_type { URMA_RTP, URMA_CTP, URMA_UTP } urma_tp_type_t;
typedef enum urma_target_type { URMA_JFR = 0, URMA_JETTY, URMA_JETTY_GROUP } urma_target_type_t;
typedef enum urma_jetty_grp_policy { URMA_JETTY_GRP_POLICY_RR = 0, URMA_JETTY_GRP_POLICY_HASH_HINT } urma_jetty_grp_policy_t;
typedef enum urma_mtu { URMA_MTU_256 = 1, URMA_MTU_512, URMA_MTU_1024, URMA_MTU_2048, URMA_MTU_4096, URMA_MTU_8192 } urma_mtu_t;
typedef enum urma_port_state { URMA_PORT_NOP = 0, URMA_PORT_DOWN, URMA_PORT_INIT, URMA_PORT_ARMED, URMA_PORT_ACTIVE } urma_port_state_t;

/* ---- identities ---- */
#define URMA_EID_SIZE 16
#define URMA_MAX_NAME 64
#define URMA_MAX_PATH 4096
#define MAX_PORT_CNT 8

/* 16 bytes; the u64 members give it 8-byte alignment (which urma_jetty_id_t inherits). */
typedef union urma_eid {
	uint8_t raw[URMA_EID_SIZE];
	struct { uint64_t reserved; uint32_t prefix; uint32_t addr; } in4;
	struct { uint64_t subnet_prefix; uint64_t interface_id; } in6;
} urma_eid_t;

typedef struct urma_init_attr { uint64_t token; uint32_t uasid; } urma_init_attr_t;
typedef struct urma_token { uint32_t token; } urma_token_t;
typedef struct urma_ref { atomic_ulong atomic_cnt; } urma_ref_t;

/* 24 bytes: eid@0 uasid@16 id@20 */
typedef struct urma_jetty_id { urma_eid_t eid; uint32_t uasid; uint32_t id; } urma_jetty_id_t;
typedef struct urma_jetty_id urma_jfs_id_t, urma_jfr_id_t, urma_jfc_id_t;

typedef struct urma_eid_info { urma_eid_t eid; uint32_t eid_index; } urma_eid_info_t;

/* ---- device ---- */
typedef struct urma_port_attr {
	urma_mtu_t max_mtu; urma_port_state_t state; uint32_t active_width; uint32_t active_speed;
	urma_mtu_t active_mtu;
} urma_port_attr_t;

typedef struct urma_device_cap {
	uint32_t feature, max_jfc, max_jfs, max_jfr, max_jetty, max_jetty_grp, max_jetty_in_jetty_grp;
	uint32_t max_jfc_depth, max_jfs_depth, max_jfr_depth, max_jfs_inline_len, max_jfs_sge;
	uint32_t max_jfs_rsge, max_jfr_sge;
	uint64_t max_msg_size;
	uint32_t max_read_size, max_write_size, max_cas_size, max_swap_size, max_fetch_and_add_size;
	uint32_t max_fetch_and_sub_size, max_fetch_and_and_size, max_fetch_and_or_size;
	uint32_t max_fetch_and_xor_size, atomic_feat;
	uint16_t trans_mode, sub_trans_mode_cap, congestion_ctrl_alg;
	uint32_t ceq_cnt, max_tp_in_tpg, max_eid_cnt;
	uint64_t page_size_cap;
	uint32_t max_oor_cnt, mn, max_netaddr_cnt;
	uint32_t rm_order_cap, rc_order_cap, rm_tp_cap, rc_tp_cap, um_tp_cap, tp_feature;
} urma_device_cap_t;

typedef struct urma_guid { uint8_t raw[16]; } urma_guid_t;

typedef struct urma_device_attr {
	urma_guid_t guid;
	urma_device_cap_t dev_cap;
	uint8_t port_cnt;
	struct urma_port_attr port_attr[MAX_PORT_CNT];
	uint32_t reserved_jetty_id_min, reserved_jetty_id_max;
} urma_device_attr_t;

typedef struct urma_device {
	char name[URMA_MAX_NAME];   /* @0 */
	char path[URMA_MAX_PATH];
	urma_transport_type_t type;
	struct urma_provider_ops *ops;
	struct urma_sysfs_dev *sysfs_dev;
} urma_device_t;

typedef struct urma_context {
	struct urma_device *dev; struct urma_ops *ops; int dev_fd; int async_fd;
	pthread_mutex_t mutex;
	urma_eid_t eid; uint32_t eid_index; uint32_t uasid; struct urma_ref ref; uint32_t aggr_mode;
} urma_context_t;

/* ---- completion ---- */
typedef struct urma_jfce { urma_context_t *urma_ctx; int fd; /* @8 */ struct urma_ref ref; } urma_jfce_t;

typedef union urma_jfc_flag { struct { uint32_t lock_free : 1, jfc_inline : 1, reserved : 30; } bs; uint32_t value; } urma_jfc_flag_t;

/* 32 bytes: depth@0 flag@4 ceqn@8 jfce@16 user_ctx@24 */
typedef struct urma_jfc_cfg {
	uint32_t depth; urma_jfc_flag_t flag; uint32_t ceqn; urma_jfce_t *jfce; uint64_t user_ctx;
} urma_jfc_cfg_t;

typedef struct urma_jfc {
	urma_context_t *urma_ctx; urma_jfc_id_t jfc_id; urma_jfc_cfg_t jfc_cfg; uint64_t handle;
	pthread_mutex_t event_mutex; pthread_cond_t event_cond;
	uint32_t comp_events_acked; uint32_t async_events_acked;
} urma_jfc_t;

/* ---- send / receive queues ---- */
typedef union urma_jfs_flag {
	struct { uint32_t lock_free : 1, error_suspend : 1, outorder_comp : 1, order_type : 8,
		 multi_path : 1, ctp_rc_mul_path_mode : 1, reserved : 19; } bs;
	uint32_t value;
} urma_jfs_flag_t;

/* 40 bytes: depth@0 flag@4 trans_mode@8 priority@12 max_sge@13 max_rsge@14 max_inline_data@16
 * rnr_retry@20 err_timeout@21 jfc@24 user_ctx@32 */
typedef struct urma_jfs_cfg {
	uint32_t depth; urma_jfs_flag_t flag; urma_transport_mode_t trans_mode;
	uint8_t priority; uint8_t max_sge; uint8_t max_rsge; uint32_t max_inline_data;
	uint8_t rnr_retry; uint8_t err_timeout; urma_jfc_t *jfc; uint64_t user_ctx;
} urma_jfs_cfg_t;

typedef struct urma_jfs {
	urma_context_t *urma_ctx; urma_jfs_id_t jfs_id; urma_jfs_cfg_t jfs_cfg; uint64_t handle;
	pthread_mutex_t event_mutex; pthread_cond_t event_cond; uint32_t async_events_acked;
} urma_jfs_t;

typedef union urma_jfr_flag {
	struct { uint32_t token_policy : 3, tag_matching : 1, lock_free : 1, order_type : 8, reserved : 19; } bs;
	uint32_t value;
} urma_jfr_flag_t;

/* 48 bytes: id@0 depth@4 flag@8 trans_mode@12 max_sge@16 min_rnr_timer@17 jfc@24
 * token_value@32 user_ctx@40 */
typedef struct urma_jfr_cfg {
	uint32_t id; uint32_t depth; urma_jfr_flag_t flag; urma_transport_mode_t trans_mode;
	uint8_t max_sge; uint8_t min_rnr_timer; urma_jfc_t *jfc; urma_token_t token_value;
	uint64_t user_ctx;
} urma_jfr_cfg_t;

typedef struct urma_jfr {
	urma_context_t *urma_ctx; urma_jfr_id_t jfr_id; urma_jfr_cfg_t jfr_cfg; uint64_t handle;
	pthread_mutex_t event_mutex; pthread_cond_t event_cond; uint32_t async_events_acked;
} urma_jfr_t;

/* ---- jetty ---- */
typedef union urma_import_jetty_flag {
	struct { uint32_t token_policy : 3, order_type : 8, share_tp : 1, has_drv_ext : 1, has_user_info : 1,
		 reserved : 18; } bs;
	uint32_t value;
	URMA_SIM_USER_TAG_FIELD
} urma_import_jetty_flag_t;

/* Extension data at the end of urma_seg_t / urma_rjetty_t (26.06-ext*). */
typedef union urma_ext_flag { struct { uint32_t enable : 1, reserved : 31; } bs; uint32_t value; } urma_ext_flag_t;
typedef struct urma_ext { urma_ext_flag_t flag; uint32_t length; char buf[0]; } urma_ext_t;

typedef struct urma_tp { uint32_t tpn; } urma_tp_t;
typedef union urma_jetty_flag { struct { uint32_t share_jfr : 1, reserved : 31; } bs; uint32_t value; } urma_jetty_flag_t;
typedef struct urma_jetty_grp urma_jetty_grp_t;

/* 80 bytes: id@0 flag@4 jfs_cfg@8 shared.jfr@48 shared.jfc@56 jetty_grp@64 user_ctx@72 */
typedef struct urma_jetty_cfg {
	uint32_t id; urma_jetty_flag_t flag; urma_jfs_cfg_t jfs_cfg;
	union { struct { urma_jfr_t *jfr; urma_jfc_t *jfc; } shared; urma_jfr_cfg_t *jfr_cfg; };
	urma_jetty_grp_t *jetty_grp; uint64_t user_ctx;
} urma_jetty_cfg_t;

/* 25.12: 48 bytes: jetty_id@0 trans_mode@24 policy@28 type@32 flag@36 tp_type@40
 * 25.12-B081: 72 bytes, flag@40 (24 B), tp_type@64; 26.06-ext: 80 (+ ext@68); 26.06-ext56: 56 (+ ext@44) */
typedef struct urma_rjetty {
	urma_jetty_id_t jetty_id; urma_transport_mode_t trans_mode; urma_jetty_grp_policy_t policy;
	urma_target_type_t type; urma_import_jetty_flag_t flag; urma_tp_type_t tp_type; URMA_SIM_EXT_FIELD
} urma_rjetty_t;

typedef struct urma_target_jetty {
	urma_context_t *urma_ctx; urma_jetty_id_t id; uint64_t handle; urma_transport_mode_t trans_mode;
	urma_tp_t tp; urma_target_type_t type; urma_import_jetty_flag_t flag;
	urma_jetty_grp_policy_t policy; urma_tp_type_t tp_type;
} urma_target_jetty_t;

typedef struct urma_jetty {
	urma_context_t *urma_ctx; urma_jetty_id_t jetty_id; /* @8 */
	urma_target_jetty_t *remote_jetty; urma_jetty_cfg_t jetty_cfg; uint64_t handle;
	pthread_mutex_t event_mutex; pthread_cond_t event_cond; uint32_t async_events_acked;
} urma_jetty_t;

/* ---- segments ---- */
typedef struct urma_ubva { urma_eid_t eid; uint32_t uasid; uint64_t va; } __attribute__((packed)) urma_ubva_t;

/* flag bits: token_policy:3 cacheable:1 dsva:1 access:6 non_pin:1 user_iova:1 token_id_valid:1 */
typedef union urma_reg_seg_flag {
	struct { uint32_t token_policy : 3, cacheable : 1, dsva : 1, access : 6, non_pin : 1,
		 user_iova : 1, token_id_valid : 1, reserved : 18; } bs;
	uint32_t value;
} urma_reg_seg_flag_t;

typedef union urma_seg_attr {
	struct { uint32_t token_policy : 3, cacheable : 1, dsva : 1, access : 6, non_pin : 1,
		 user_iova : 1, user_token_id : 1, has_user_info : 1, reserved : 17; } bs;
	uint32_t value;
} urma_seg_attr_t;

typedef union urma_import_seg_flag {
	struct { uint32_t cacheable : 1, access : 6, mapping : 1, reserved : 24; } bs;
	uint32_t value;
} urma_import_seg_flag_t;

typedef struct urma_token_id {
	urma_context_t *urma_ctx; uint32_t token_id; uint64_t handle; urma_ref_t ref; uint32_t flag;
} urma_token_id_t;

/* 48 bytes: va@0 len@8 token_id@16 token_value@24 flag@28 user_ctx@32 iova@40 */
typedef struct urma_seg_cfg {
	uint64_t va; uint64_t len; urma_token_id_t *token_id; urma_token_t token_value;
	urma_reg_seg_flag_t flag; uint64_t user_ctx; uint64_t iova;
} urma_seg_cfg_t;

/* 48 bytes: ubva@0 (packed 28 B) len@32 attr@40 token_id@44 (26.06-ext*: 56, + ext@48) */
typedef struct urma_seg {
	urma_ubva_t ubva; uint64_t len; urma_seg_attr_t attr; uint32_t token_id; URMA_SIM_EXT_FIELD
} urma_seg_t;

/* 88 bytes: seg@0 user_ctx@48 mva@56 urma_ctx@64 token_id@72 handle@80 (26.06-ext*: 96, +8 from user_ctx) */
typedef struct urma_target_seg {
	urma_seg_t seg; uint64_t user_ctx; uint64_t mva; urma_context_t *urma_ctx;
	urma_token_id_t *token_id; uint64_t handle;
} urma_target_seg_t;

typedef struct urma_user_target_seg { urma_seg_attr_t attr; uint32_t token_id; urma_token_t token_value; } urma_user_tseg_t;

/* ---- work requests ---- */
/* 32 bytes: addr@0 len@8 tseg@16 user_tseg@24 */
typedef struct urma_sge { uint64_t addr; uint32_t len; urma_target_seg_t *tseg; urma_user_tseg_t *user_tseg; } urma_sge_t;
/* 16 bytes */
typedef struct urma_sg { urma_sge_t *sge; uint32_t num_sge; } urma_sg_t;

/* bits: place_order:2 comp_order:1 fence:1 solicited_enable:1 complete_enable:1 inline_flag:1 */
typedef union urma_jfs_wr_flag {
	struct { uint32_t place_order : 2, comp_order : 1, fence : 1, solicited_enable : 1,
		 complete_enable : 1, inline_flag : 1, reserved : 25; } bs;
	uint32_t value;
} urma_jfs_wr_flag_t;
#define URMA_SIM_WR_SOLICITED (1u << 4)
#define URMA_SIM_WR_COMPLETE (1u << 5)
#define URMA_SIM_WR_INLINE (1u << 6)

typedef struct urma_rw_wr { urma_sg_t src; urma_sg_t dst; uint8_t target_hint; uint64_t notify_data; } urma_rw_wr_t;
typedef struct urma_send_wr { urma_sg_t src; uint8_t target_hint; uint64_t imm_data; urma_target_seg_t *tseg; } urma_send_wr_t;
typedef struct urma_cas_wr { urma_sge_t *dst; urma_sge_t *src; uint64_t cmp_data; uint64_t swap_data; } urma_cas_wr_t;
typedef struct urma_faa_wr { urma_sge_t *dst; urma_sge_t *src; uint64_t operand; } urma_faa_wr_t;

/* 80 bytes: opcode@0 flag@4 tjetty@8 user_ctx@16 union@24 (rw: src@0 dst@16 target_hint@32
 * notify_data@40; send: src@0 target_hint@16 imm_data@24 tseg@32) next@72 */
typedef struct urma_jfs_wr {
	urma_opcode_t opcode; urma_jfs_wr_flag_t flag; urma_target_jetty_t *tjetty; uint64_t user_ctx;
	union { urma_rw_wr_t rw; urma_send_wr_t send; urma_cas_wr_t cas; urma_faa_wr_t faa; };
	struct urma_jfs_wr *next;
} urma_jfs_wr_t;

/* 32 bytes: src@0 user_ctx@16 next@24 */
typedef struct urma_jfr_wr { urma_sg_t src; uint64_t user_ctx; struct urma_jfr_wr *next; } urma_jfr_wr_t;

typedef union urma_cr_flag { struct { uint8_t s_r : 1, jetty : 1, suspend_done : 1, flush_err_done : 1, reserved : 4; } bs; uint8_t value; } urma_cr_flag_t;
typedef struct urma_cr_token { uint32_t token_id; urma_token_t token_value; } urma_cr_token_t;

/* 80 bytes: status@0 user_ctx@8 opcode@16 flag@20 completion_len@24 local_id@28 remote_id@32
 * imm_data@56 tpn@64 user_data@72 */
typedef struct urma_cr {
	urma_cr_status_t status; uint64_t user_ctx; urma_cr_opcode_t opcode; urma_cr_flag_t flag;
	uint32_t completion_len; uint32_t local_id; urma_jetty_id_t remote_id;
	union { uint64_t imm_data; urma_cr_token_t invalid_token; };
	uint32_t tpn; uintptr_t user_data;
} urma_cr_t;

/* ---- the liburma API the simulator implements ---- */
urma_status_t urma_init(urma_init_attr_t *conf);
urma_status_t urma_uninit(void);
urma_device_t **urma_get_device_list(int *num_devices);
void urma_free_device_list(urma_device_t **device_list);
urma_device_t *urma_get_device_by_name(char *dev_name);
urma_eid_info_t *urma_get_eid_list(urma_device_t *dev, uint32_t *cnt);
void urma_free_eid_list(urma_eid_info_t *eid_list);
urma_status_t urma_query_device(urma_device_t *dev, urma_device_attr_t *dev_attr);
urma_context_t *urma_create_context(urma_device_t *dev, uint32_t eid_index);
urma_status_t urma_delete_context(urma_context_t *ctx);
urma_jfce_t *urma_create_jfce(urma_context_t *ctx);
urma_status_t urma_delete_jfce(urma_jfce_t *jfce);
urma_jfc_t *urma_create_jfc(urma_context_t *ctx, urma_jfc_cfg_t *jfc_cfg);
urma_status_t urma_delete_jfc(urma_jfc_t *jfc);
urma_jfs_t *urma_create_jfs(urma_context_t *ctx, urma_jfs_cfg_t *jfs_cfg);
urma_status_t urma_delete_jfs(urma_jfs_t *jfs);
urma_jfr_t *urma_create_jfr(urma_context_t *ctx, urma_jfr_cfg_t *jfr_cfg);
urma_status_t urma_delete_jfr(urma_jfr_t *jfr);
urma_jetty_t *urma_create_jetty(urma_context_t *ctx, urma_jetty_cfg_t *jetty_cfg);
urma_status_t urma_delete_jetty(urma_jetty_t *jetty);
urma_target_jetty_t *urma_import_jetty(urma_context_t *ctx, urma_rjetty_t *rjetty, urma_token_t *token_value);
urma_status_t urma_unimport_jetty(urma_target_jetty_t *tjetty);
urma_status_t urma_bind_jetty(urma_jetty_t *jetty, urma_target_jetty_t *tjetty);
urma_status_t urma_unbind_jetty(urma_jetty_t *jetty);
urma_target_seg_t *urma_register_seg(urma_context_t *ctx, urma_seg_cfg_t *seg_cfg);
urma_status_t urma_unregister_seg(urma_target_seg_t *target_seg);
urma_target_seg_t *urma_import_seg(urma_context_t *ctx, urma_seg_t *seg, urma_token_t *token_value,
				   uint64_t addr, urma_import_seg_flag_t flag);
urma_status_t urma_unimport_seg(urma_target_seg_t *tseg);
urma_status_t urma_post_jfs_wr(urma_jfs_t *jfs, urma_jfs_wr_t *wr, urma_jfs_wr_t **bad_wr);
urma_status_t urma_post_jfr_wr(urma_jfr_t *jfr, urma_jfr_wr_t *wr, urma_jfr_wr_t **bad_wr);
urma_status_t urma_post_jetty_send_wr(urma_jetty_t *jetty, urma_jfs_wr_t *wr, urma_jfs_wr_t **bad_wr);
urma_status_t urma_post_jetty_recv_wr(urma_jetty_t *jetty, urma_jfr_wr_t *wr, urma_jfr_wr_t **bad_wr);
urma_status_t urma_write(urma_jfs_t *jfs, urma_target_jetty_t *target_jfr, urma_target_seg_t *dst_tseg,
			 urma_target_seg_t *src_tseg, uint64_t dst, uint64_t src, uint32_t len,
			 urma_jfs_wr_flag_t flag, uint64_t user_ctx);
urma_status_t urma_read(urma_jfs_t *jfs, urma_target_jetty_t *target_jfr, urma_target_seg_t *dst_tseg,
			urma_target_seg_t *src_tseg, uint64_t dst, uint64_t src, uint32_t len,
			urma_jfs_wr_flag_t flag, uint64_t user_ctx);
urma_status_t urma_send(urma_jfs_t *jfs, urma_target_jetty_t *target_jfr, urma_target_seg_t *src_tseg,
			uint64_t src, uint32_t len, urma_jfs_wr_flag_t flag, uint64_t user_ctx);
urma_status_t urma_recv(urma_jfr_t *jfr, urma_target_seg_t *recv_tseg, uint64_t buf, uint32_t len, uint64_t user_ctx);
int urma_poll_jfc(urma_jfc_t *jfc, int cr_cnt, urma_cr_t *cr);
urma_status_t urma_rearm_jfc(urma_jfc_t *jfc, bool solicited_only);
int urma_wait_jfc(urma_jfce_t *jfce, uint32_t jfc_cnt, int time_out, urma_jfc_t *jfc[]);
void urma_ack_jfc(urma_jfc_t *jfc[], uint32_t nevents[], uint32_t jfc_cnt);
#include "urma_sim_events.h" /* async events, queue states, descriptions */

/* ---- simulator-only extensions ---- */
/* "<ABI>-sim" (e.g. "25.12-B081-sim"): the named UMDK ABI this build reproduces, marked as simulated. */
const char *urma_sim_abi_version(void);
/* The calling thread's last failure, in words ("" if none). */
const char *urma_sim_last_error(void);
/* Writes "contexts=N jfce=N ... " (this process's live objects) into buf; returns the total. */
int urma_sim_live_objects(char *buf, int len);
/* The registry's POSIX shm name (from URMA_SIM_NAMESPACE, else per-uid default). */
const char *urma_sim_registry_name(void);
/* urma_sim_inject_async_event (SIMULATOR-ONLY fault injection): urma_sim_events.h */

#ifdef __cplusplus
}
#endif
#endif
