/*
 * abi_check.c — prints the sizeof/offsetof table of the simulated liburma's public structs in
 * the format of vb_layout_table() (c-helpers/layout.c):
 *     "<type> <sizeof>\n"                    for a whole struct
 *     "<type>.<field path> <offset> <size>\n" for a field
 * plus, for the bit-field flag words, a pseudo-struct "<flag type>.bits" whose "offset" is the
 * bit position and "size" the width in bits (e.g. "urma_jfs_wr_flag_t.bits.complete_enable 5 1").
 * TypeScript (tests/urma/abi_test.ts) checks ffi/layouts/urma.ts against this output.
 *
 * Built twice over: with the simulator's header (one table per simulated ABI, next to each
 * build's liburma.so.0 as urma_layout.txt), and — when the UMDK headers are installed
 * (/usr/include/ub/umdk/urma/urma_types.h) — with -DURMA_REAL_HEADERS against them, into
 * build/urma_layout.txt. verbus picks its named ABI from such a table (transport/urma/abi.ts).
 */
#ifdef URMA_REAL_HEADERS
#include <urma_types.h>
#include <urma_api.h>
#else
#include "urma_sim.h"
#endif

#include <stddef.h>
#include <stdio.h>
#include <string.h>

#define MSZ(T, f) sizeof(((T *)0)->f)
#define S(T) printf("%s %zu\n", #T, sizeof(T));
#define F(T, f) printf("%s.%s %zu %zu\n", #T, #f, offsetof(T, f), MSZ(T, f));

/* Bit position and width of a bit-field, found by setting it in a zeroed union. */
#define B(U, f)                                                                             \
	do {                                                                                \
		U u;                                                                        \
		memset(&u, 0, sizeof(u));                                                   \
		u.bs.f = 1;                                                                 \
		unsigned pos = (unsigned)__builtin_ctz((unsigned)u.value);                  \
		memset(&u, 0, sizeof(u));                                                   \
		u.bs.f--; /* unsigned bit-field: wraps to all ones */                    \
		printf("%s.bits.%s %u %d\n", #U, #f, pos, __builtin_popcount((unsigned)u.value)); \
	} while (0);
#define BITS(U) printf("%s.bits %zu\n", #U, sizeof(U) * 8);

int main(void)
{
	S(urma_eid_t) S(urma_token_t) F(urma_token_t, token)
	S(urma_init_attr_t) F(urma_init_attr_t, token) F(urma_init_attr_t, uasid)
	S(urma_jetty_id_t) F(urma_jetty_id_t, eid) F(urma_jetty_id_t, uasid) F(urma_jetty_id_t, id)
	S(urma_eid_info_t) F(urma_eid_info_t, eid) F(urma_eid_info_t, eid_index)
	S(urma_sge_t) F(urma_sge_t, addr) F(urma_sge_t, len) F(urma_sge_t, tseg) F(urma_sge_t, user_tseg)
	S(urma_sg_t) F(urma_sg_t, sge) F(urma_sg_t, num_sge)
	S(urma_jfs_wr_t) F(urma_jfs_wr_t, opcode) F(urma_jfs_wr_t, flag) F(urma_jfs_wr_t, tjetty)
	F(urma_jfs_wr_t, user_ctx) F(urma_jfs_wr_t, rw.src) F(urma_jfs_wr_t, rw.dst)
	F(urma_jfs_wr_t, rw.target_hint) F(urma_jfs_wr_t, rw.notify_data) F(urma_jfs_wr_t, send.src)
	F(urma_jfs_wr_t, send.target_hint) F(urma_jfs_wr_t, send.imm_data) F(urma_jfs_wr_t, send.tseg)
	F(urma_jfs_wr_t, next)
	S(urma_jfr_wr_t) F(urma_jfr_wr_t, src) F(urma_jfr_wr_t, user_ctx) F(urma_jfr_wr_t, next)
	S(urma_cr_t) F(urma_cr_t, status) F(urma_cr_t, user_ctx) F(urma_cr_t, opcode) F(urma_cr_t, flag)
	F(urma_cr_t, completion_len) F(urma_cr_t, local_id) F(urma_cr_t, remote_id) F(urma_cr_t, imm_data)
	F(urma_cr_t, tpn) F(urma_cr_t, user_data)
	S(urma_jfc_cfg_t) F(urma_jfc_cfg_t, depth) F(urma_jfc_cfg_t, flag) F(urma_jfc_cfg_t, ceqn)
	F(urma_jfc_cfg_t, jfce) F(urma_jfc_cfg_t, user_ctx)
	S(urma_jfs_cfg_t) F(urma_jfs_cfg_t, depth) F(urma_jfs_cfg_t, flag) F(urma_jfs_cfg_t, trans_mode)
	F(urma_jfs_cfg_t, priority) F(urma_jfs_cfg_t, max_sge) F(urma_jfs_cfg_t, max_rsge)
	F(urma_jfs_cfg_t, max_inline_data) F(urma_jfs_cfg_t, rnr_retry) F(urma_jfs_cfg_t, err_timeout)
	F(urma_jfs_cfg_t, jfc) F(urma_jfs_cfg_t, user_ctx)
	S(urma_jfr_cfg_t) F(urma_jfr_cfg_t, id) F(urma_jfr_cfg_t, depth) F(urma_jfr_cfg_t, flag)
	F(urma_jfr_cfg_t, trans_mode) F(urma_jfr_cfg_t, max_sge) F(urma_jfr_cfg_t, min_rnr_timer)
	F(urma_jfr_cfg_t, jfc) F(urma_jfr_cfg_t, token_value) F(urma_jfr_cfg_t, user_ctx)
	S(urma_jetty_cfg_t) F(urma_jetty_cfg_t, id) F(urma_jetty_cfg_t, flag) F(urma_jetty_cfg_t, jfs_cfg)
	F(urma_jetty_cfg_t, shared.jfr) F(urma_jetty_cfg_t, shared.jfc) F(urma_jetty_cfg_t, jetty_grp)
	F(urma_jetty_cfg_t, user_ctx)
	S(urma_seg_cfg_t) F(urma_seg_cfg_t, va) F(urma_seg_cfg_t, len) F(urma_seg_cfg_t, token_id)
	F(urma_seg_cfg_t, token_value) F(urma_seg_cfg_t, flag) F(urma_seg_cfg_t, user_ctx) F(urma_seg_cfg_t, iova)
	S(urma_ubva_t) F(urma_ubva_t, eid) F(urma_ubva_t, uasid) F(urma_ubva_t, va)
	S(urma_seg_t) F(urma_seg_t, ubva) F(urma_seg_t, len) F(urma_seg_t, attr) F(urma_seg_t, token_id)
	S(urma_target_seg_t) F(urma_target_seg_t, seg) F(urma_target_seg_t, user_ctx) F(urma_target_seg_t, mva)
	F(urma_target_seg_t, urma_ctx) F(urma_target_seg_t, token_id) F(urma_target_seg_t, handle)
	S(urma_rjetty_t) F(urma_rjetty_t, jetty_id) F(urma_rjetty_t, trans_mode) F(urma_rjetty_t, policy)
	F(urma_rjetty_t, type) F(urma_rjetty_t, flag) F(urma_rjetty_t, tp_type)
	S(urma_async_event_t) F(urma_async_event_t, urma_ctx) F(urma_async_event_t, element)
	F(urma_async_event_t, element.port_id) F(urma_async_event_t, event_type) F(urma_async_event_t, priv)
	S(urma_jetty_attr_t) F(urma_jetty_attr_t, mask) F(urma_jetty_attr_t, rx_threshold) F(urma_jetty_attr_t, state)
	S(urma_jfs_attr_t) F(urma_jfs_attr_t, mask) F(urma_jfs_attr_t, state)
	S(urma_jfr_attr_t) F(urma_jfr_attr_t, mask) F(urma_jfr_attr_t, rx_threshold) F(urma_jfr_attr_t, state)
	F(urma_context_t, async_fd)
	F(urma_jetty_t, urma_ctx) F(urma_jetty_t, jetty_id)
	F(urma_jfr_t, urma_ctx) F(urma_jfr_t, jfr_id)
	F(urma_jfce_t, urma_ctx) F(urma_jfce_t, fd)
	F(urma_jfc_t, urma_ctx) F(urma_jfc_t, jfc_id)
	F(urma_device_t, name)
	F(urma_device_attr_t, guid) F(urma_device_attr_t, dev_cap.max_jfc) F(urma_device_attr_t, dev_cap.max_jfs)
	F(urma_device_attr_t, dev_cap.max_jfr) F(urma_device_attr_t, dev_cap.max_jetty)
	F(urma_device_attr_t, dev_cap.max_jfc_depth) F(urma_device_attr_t, dev_cap.max_jfs_depth)
	F(urma_device_attr_t, dev_cap.max_jfr_depth) F(urma_device_attr_t, dev_cap.max_jfs_inline_len)
	F(urma_device_attr_t, dev_cap.max_jfs_sge) F(urma_device_attr_t, dev_cap.max_jfs_rsge)
	F(urma_device_attr_t, dev_cap.max_jfr_sge) F(urma_device_attr_t, dev_cap.max_msg_size)

	BITS(urma_jfs_wr_flag_t) B(urma_jfs_wr_flag_t, place_order) B(urma_jfs_wr_flag_t, comp_order)
	B(urma_jfs_wr_flag_t, fence) B(urma_jfs_wr_flag_t, solicited_enable)
	B(urma_jfs_wr_flag_t, complete_enable) B(urma_jfs_wr_flag_t, inline_flag)
	BITS(urma_reg_seg_flag_t) B(urma_reg_seg_flag_t, token_policy) B(urma_reg_seg_flag_t, cacheable)
	B(urma_reg_seg_flag_t, dsva) B(urma_reg_seg_flag_t, access) B(urma_reg_seg_flag_t, non_pin)
	B(urma_reg_seg_flag_t, user_iova) B(urma_reg_seg_flag_t, token_id_valid)
	BITS(urma_jetty_flag_t) B(urma_jetty_flag_t, share_jfr)
	BITS(urma_cr_flag_t) B(urma_cr_flag_t, s_r) B(urma_cr_flag_t, jetty)
	return 0;
}
