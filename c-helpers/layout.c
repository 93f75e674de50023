/*
 * layout.c — the sizeof/offsetof table of every struct TypeScript touches.
 *
 * vb_layout_table() returns one line per entry, built once:
 *     "<struct> <sizeof>\n"                      for a whole struct
 *     "<struct>.<field path> <offset> <size>\n"  for a field
 * TypeScript (ffi/layouts/check.ts) compares its named offset constants against it at load and
 * refuses to run on any mismatch, naming the field.
 */
#include "verbus_helper.h"

#include <netinet/in.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/socket.h>
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#define MEMBER_SIZE(T, f) sizeof(((T *)0)->f)
#define S(s) { #s, (size_t)-1, sizeof(struct s) },
#define U(s) { #s, (size_t)-1, sizeof(union s) },
#define F(s, f) { #s "." #f, offsetof(struct s, f), MEMBER_SIZE(struct s, f) },

struct entry {
	const char *name;
	size_t offset; /* (size_t)-1 for a whole struct */
	size_t size;
};

static const struct entry entries[] = {
	/* helper's own flat formats */
	S(vb_sge) F(vb_sge, addr) F(vb_sge, length) F(vb_sge, lkey)
	S(vb_send_desc) F(vb_send_desc, wr_id) F(vb_send_desc, remote_addr) F(vb_send_desc, rkey)
	F(vb_send_desc, imm) F(vb_send_desc, opcode) F(vb_send_desc, send_flags)
	F(vb_send_desc, sge_index) F(vb_send_desc, num_sge)
	S(vb_recv_desc) F(vb_recv_desc, wr_id) F(vb_recv_desc, sge_index) F(vb_recv_desc, num_sge)
	S(vb_wc) F(vb_wc, wr_id) F(vb_wc, status) F(vb_wc, opcode) F(vb_wc, byte_len) F(vb_wc, imm)
	F(vb_wc, qp_num) F(vb_wc, wc_flags) F(vb_wc, vendor_err) F(vb_wc, src_qp)
	S(vb_ubring_block) F(vb_ubring_block, payload) F(vb_ubring_block, flag)
	F(vb_ubring_block, len) F(vb_ubring_block, cur)
	S(vb_ubring_gather) F(vb_ubring_gather, blocks) F(vb_ubring_gather, bytes)
	F(vb_ubring_gather, pos) F(vb_ubring_gather, bad_block) F(vb_ubring_gather, flag)
	F(vb_ubring_gather, len) F(vb_ubring_gather, cur)

	/* libibverbs */
	S(ibv_sge) F(ibv_sge, addr) F(ibv_sge, length) F(ibv_sge, lkey)
	S(ibv_wc) F(ibv_wc, wr_id) F(ibv_wc, status) F(ibv_wc, opcode) F(ibv_wc, vendor_err)
	F(ibv_wc, byte_len) F(ibv_wc, imm_data) F(ibv_wc, qp_num) F(ibv_wc, src_qp) F(ibv_wc, wc_flags)
	S(ibv_send_wr) F(ibv_send_wr, wr_id) F(ibv_send_wr, next) F(ibv_send_wr, sg_list)
	F(ibv_send_wr, num_sge) F(ibv_send_wr, opcode) F(ibv_send_wr, send_flags)
	F(ibv_send_wr, imm_data) F(ibv_send_wr, wr.rdma.remote_addr) F(ibv_send_wr, wr.rdma.rkey)
	S(ibv_recv_wr) F(ibv_recv_wr, wr_id) F(ibv_recv_wr, next) F(ibv_recv_wr, sg_list)
	F(ibv_recv_wr, num_sge)
	S(ibv_qp_cap) F(ibv_qp_cap, max_send_wr) F(ibv_qp_cap, max_recv_wr) F(ibv_qp_cap, max_send_sge)
	F(ibv_qp_cap, max_recv_sge) F(ibv_qp_cap, max_inline_data)
	S(ibv_qp_init_attr) F(ibv_qp_init_attr, qp_context) F(ibv_qp_init_attr, send_cq)
	F(ibv_qp_init_attr, recv_cq) F(ibv_qp_init_attr, srq) F(ibv_qp_init_attr, cap)
	F(ibv_qp_init_attr, qp_type) F(ibv_qp_init_attr, sq_sig_all)
	S(ibv_global_route) F(ibv_global_route, dgid) F(ibv_global_route, flow_label)
	F(ibv_global_route, sgid_index) F(ibv_global_route, hop_limit) F(ibv_global_route, traffic_class)
	S(ibv_ah_attr) F(ibv_ah_attr, grh) F(ibv_ah_attr, dlid) F(ibv_ah_attr, sl)
	F(ibv_ah_attr, src_path_bits) F(ibv_ah_attr, static_rate) F(ibv_ah_attr, is_global)
	F(ibv_ah_attr, port_num)
	S(ibv_qp_attr) F(ibv_qp_attr, qp_state) F(ibv_qp_attr, cur_qp_state) F(ibv_qp_attr, path_mtu)
	F(ibv_qp_attr, qkey) F(ibv_qp_attr, rq_psn) F(ibv_qp_attr, sq_psn) F(ibv_qp_attr, dest_qp_num)
	F(ibv_qp_attr, qp_access_flags) F(ibv_qp_attr, cap) F(ibv_qp_attr, ah_attr)
	F(ibv_qp_attr, pkey_index) F(ibv_qp_attr, max_rd_atomic) F(ibv_qp_attr, max_dest_rd_atomic)
	F(ibv_qp_attr, min_rnr_timer) F(ibv_qp_attr, port_num) F(ibv_qp_attr, timeout)
	F(ibv_qp_attr, retry_cnt) F(ibv_qp_attr, rnr_retry)
	S(ibv_port_attr) F(ibv_port_attr, state) F(ibv_port_attr, max_mtu) F(ibv_port_attr, active_mtu)
	F(ibv_port_attr, gid_tbl_len) F(ibv_port_attr, port_cap_flags) F(ibv_port_attr, max_msg_sz)
	F(ibv_port_attr, lid) F(ibv_port_attr, active_width) F(ibv_port_attr, active_speed)
	F(ibv_port_attr, phys_state) F(ibv_port_attr, link_layer)
	S(ibv_device_attr) F(ibv_device_attr, fw_ver) F(ibv_device_attr, node_guid)
	F(ibv_device_attr, max_mr_size) F(ibv_device_attr, vendor_id) F(ibv_device_attr, vendor_part_id)
	F(ibv_device_attr, hw_ver) F(ibv_device_attr, max_qp) F(ibv_device_attr, max_qp_wr)
	F(ibv_device_attr, max_sge) F(ibv_device_attr, max_cq) F(ibv_device_attr, max_cqe)
	F(ibv_device_attr, max_mr) F(ibv_device_attr, max_pd) F(ibv_device_attr, max_qp_rd_atom)
	F(ibv_device_attr, phys_port_cnt)
	U(ibv_gid)
	S(ibv_mr) F(ibv_mr, context) F(ibv_mr, pd) F(ibv_mr, addr) F(ibv_mr, length)
	F(ibv_mr, handle) F(ibv_mr, lkey) F(ibv_mr, rkey)
	S(ibv_comp_channel) F(ibv_comp_channel, context) F(ibv_comp_channel, fd)
	S(ibv_cq) F(ibv_cq, context) F(ibv_cq, channel) F(ibv_cq, cqe)
	S(ibv_qp) F(ibv_qp, context) F(ibv_qp, pd) F(ibv_qp, qp_num) F(ibv_qp, state) F(ibv_qp, qp_type)
	S(ibv_context) F(ibv_context, device) F(ibv_context, cmd_fd) F(ibv_context, async_fd)
	F(ibv_context, num_comp_vectors)

	/* librdmacm */
	S(rdma_event_channel) F(rdma_event_channel, fd)
	S(rdma_cm_id) F(rdma_cm_id, verbs) F(rdma_cm_id, channel) F(rdma_cm_id, context)
	F(rdma_cm_id, qp) F(rdma_cm_id, port_num) F(rdma_cm_id, pd) F(rdma_cm_id, send_cq)
	F(rdma_cm_id, recv_cq)
	S(rdma_conn_param) F(rdma_conn_param, private_data) F(rdma_conn_param, private_data_len)
	F(rdma_conn_param, responder_resources) F(rdma_conn_param, initiator_depth)
	F(rdma_conn_param, flow_control) F(rdma_conn_param, retry_count)
	F(rdma_conn_param, rnr_retry_count) F(rdma_conn_param, srq) F(rdma_conn_param, qp_num)
	S(rdma_cm_event) F(rdma_cm_event, id) F(rdma_cm_event, listen_id) F(rdma_cm_event, event)
	F(rdma_cm_event, status) F(rdma_cm_event, param.conn)

	/* sockets */
	S(sockaddr_in) F(sockaddr_in, sin_family) F(sockaddr_in, sin_port) F(sockaddr_in, sin_addr)
	S(sockaddr_in6) F(sockaddr_in6, sin6_family) F(sockaddr_in6, sin6_port)
	F(sockaddr_in6, sin6_flowinfo) F(sockaddr_in6, sin6_addr) F(sockaddr_in6, sin6_scope_id)
	S(sockaddr_storage)
};

static char table[16384];
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void build(void)
{
	size_t used = 0;
	for (size_t i = 0; i < sizeof(entries) / sizeof(entries[0]); i++) {
		const struct entry *e = &entries[i];
		int n = e->offset == (size_t)-1
			? snprintf(table + used, sizeof(table) - used, "%s %zu\n", e->name, e->size)
			: snprintf(table + used, sizeof(table) - used, "%s %zu %zu\n", e->name, e->offset, e->size);
		if (n < 0 || (size_t)n >= sizeof(table) - used) {
			table[used] = '\0'; /* truncated: TypeScript reports the missing entries */
			return;
		}
		used += (size_t)n;
	}
}

const char *vb_layout_table(void)
{
	pthread_once(&once, build);
	return table;
}

const char *vb_version(void)
{
	return VB_HELPER_VERSION;
}
