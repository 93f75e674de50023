/*
 * verbs_batch.c — the batched wrappers around verbs' static inline calls.
 * Work requests are built on the stack from the caller's flat descriptors; SGE arrays are used
 * in place (vb_sge has ibv_sge's layout), so nothing is allocated and nothing is copied twice.
 */
#include "verbus_helper.h"

#include <errno.h>
#include <stddef.h>
#include <string.h>
#include <arpa/inet.h>
#include <infiniband/verbs.h>

_Static_assert(sizeof(struct vb_sge) == sizeof(struct ibv_sge), "vb_sge must match ibv_sge");
_Static_assert(offsetof(struct vb_sge, addr) == offsetof(struct ibv_sge, addr), "vb_sge.addr");
_Static_assert(offsetof(struct vb_sge, length) == offsetof(struct ibv_sge, length), "vb_sge.length");
_Static_assert(offsetof(struct vb_sge, lkey) == offsetof(struct ibv_sge, lkey), "vb_sge.lkey");

/* Builds the chain for descs[0..n). Returns 0, or EINVAL with *bad_index set. */
static int build_send_chain(struct ibv_send_wr *wrs, const struct vb_send_desc *descs,
			    struct vb_sge *sges, uint32_t n, uint32_t *bad_index)
{
	for (uint32_t i = 0; i < n; i++) {
		const struct vb_send_desc *d = &descs[i];
		struct ibv_send_wr *wr = &wrs[i];
		memset(wr, 0, sizeof(*wr));
		wr->wr_id = d->wr_id;
		wr->next = i + 1 < n ? &wrs[i + 1] : NULL;
		wr->sg_list = d->num_sge ? (struct ibv_sge *)&sges[d->sge_index] : NULL;
		wr->num_sge = (int)d->num_sge;
		wr->opcode = (enum ibv_wr_opcode)d->opcode;
		wr->send_flags = d->send_flags;
		switch (d->opcode) {
		case IBV_WR_RDMA_WRITE_WITH_IMM:
			wr->imm_data = htonl(d->imm);
			/* fall through */
		case IBV_WR_RDMA_WRITE:
		case IBV_WR_RDMA_READ:
			wr->wr.rdma.remote_addr = d->remote_addr;
			wr->wr.rdma.rkey = d->rkey;
			break;
		case IBV_WR_SEND_WITH_IMM:
			wr->imm_data = htonl(d->imm);
			break;
		case IBV_WR_SEND:
			break;
		default:
			if (bad_index)
				*bad_index = i;
			return EINVAL;
		}
	}
	return 0;
}

int vb_post_send(struct ibv_qp *qp, const struct vb_send_desc *descs, struct vb_sge *sges,
		 uint32_t n, uint32_t *bad_index)
{
	struct ibv_send_wr wrs[VB_MAX_BATCH];
	struct ibv_send_wr *bad = NULL;
	if (bad_index)
		*bad_index = n;
	if (!qp || n == 0 || n > VB_MAX_BATCH)
		return n == 0 ? 0 : EINVAL;
	int rc = build_send_chain(wrs, descs, sges, n, bad_index);
	if (rc)
		return rc;
	rc = ibv_post_send(qp, wrs, &bad);
	if (rc && bad && bad_index)
		*bad_index = (uint32_t)(bad - wrs);
	return rc;
}

int vb_post_recv(struct ibv_qp *qp, const struct vb_recv_desc *descs, struct vb_sge *sges,
		 uint32_t n, uint32_t *bad_index)
{
	struct ibv_recv_wr wrs[VB_MAX_BATCH];
	struct ibv_recv_wr *bad = NULL;
	if (bad_index)
		*bad_index = n;
	if (!qp || n == 0 || n > VB_MAX_BATCH)
		return n == 0 ? 0 : EINVAL;
	for (uint32_t i = 0; i < n; i++) {
		wrs[i].wr_id = descs[i].wr_id;
		wrs[i].next = i + 1 < n ? &wrs[i + 1] : NULL;
		wrs[i].sg_list = descs[i].num_sge ? (struct ibv_sge *)&sges[descs[i].sge_index] : NULL;
		wrs[i].num_sge = (int)descs[i].num_sge;
	}
	int rc = ibv_post_recv(qp, wrs, &bad);
	if (rc && bad && bad_index)
		*bad_index = (uint32_t)(bad - wrs);
	return rc;
}

int vb_poll_cq(struct ibv_cq *cq, int max, struct vb_wc *out)
{
	struct ibv_wc wc[32];
	int total = 0;
	if (!cq || max < 0)
		return -EINVAL;
	if (max > VB_MAX_POLL)
		max = VB_MAX_POLL;
	while (total < max) {
		int want = max - total < 32 ? max - total : 32;
		int got = ibv_poll_cq(cq, want, wc);
		if (got < 0)
			return total ? total : got;
		for (int i = 0; i < got; i++) {
			struct vb_wc *o = &out[total + i];
			o->wr_id = wc[i].wr_id;
			o->status = (uint32_t)wc[i].status;
			o->opcode = (uint32_t)wc[i].opcode;
			o->byte_len = wc[i].byte_len;
			o->imm = (wc[i].wc_flags & IBV_WC_WITH_IMM) ? ntohl(wc[i].imm_data) : 0;
			o->qp_num = wc[i].qp_num;
			o->wc_flags = wc[i].wc_flags;
			o->vendor_err = wc[i].vendor_err;
			o->src_qp = wc[i].src_qp;
		}
		total += got;
		if (got < want)
			break;
	}
	return total;
}

int vb_req_notify_cq(struct ibv_cq *cq, int solicited_only)
{
	return cq ? ibv_req_notify_cq(cq, solicited_only) : EINVAL;
}

/* A sink that "posts" by walking the chain: measures building a batch without a device. */
static int64_t sink_post(const struct ibv_send_wr *wr)
{
	int64_t bytes = 0;
	for (; wr; wr = wr->next)
		for (int s = 0; s < wr->num_sge; s++)
			bytes += wr->sg_list[s].length;
	return bytes;
}

int64_t vb_bench_sink_post_send(const struct vb_send_desc *descs, struct vb_sge *sges, uint32_t n)
{
	struct ibv_send_wr wrs[VB_MAX_BATCH];
	uint32_t bad = 0;
	if (n == 0 || n > VB_MAX_BATCH)
		return -EINVAL;
	if (build_send_chain(wrs, descs, sges, n, &bad))
		return -EINVAL;
	return sink_post(wrs);
}

int vb_noop(void)
{
	return 0;
}
