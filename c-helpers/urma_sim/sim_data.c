/*
 * sim_data.c — the data path of the simulated liburma. The posting thread is the "hardware":
 * each work request is validated, executed (bytes copied with process_vm_readv/writev through
 * a bounce buffer; the target's receive WR consumed; its completion appended to the target's
 * JFC) and completed on the local JFC before urma_post_* returns — so completions are in order.
 *
 * Error model (what real UB hardware reports):
 *   malformed request (unknown opcode, bad SGE count, no / invalid target)  → post returns URMA_EINVAL
 *   local JFC has no room for a completion                                   → post returns URMA_EAGAIN
 *   local SGE outside its registered segment, or unreadable                  → CR LOC_ACCESS_ERR
 *   remote range outside the segment, wrong token, access not granted        → CR REM_ACCESS_ABORT_ERR
 *   target jetty / segment owner died or was deleted                         → CR ACK_TIMEOUT_ERR
 *   no receive WR posted at the target, or jetty imported before segments    → CR RNR_RETRY_CNT_EXC_ERR
 *   receive buffer too small                                                 → CR REM_OPERATION_ERR (target: LOC_LEN_ERR)
 */
#define _GNU_SOURCE
#include "sim_internal.h"

#include <signal.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#define BOUNCE (64u << 10)
static __thread uint8_t bounce[BOUNCE];

int sim_safe_read(void *out, uint64_t addr, size_t len)
{
	if (len == 0) return 0;
	if (addr == 0) return -1;
	struct iovec l = { out, len }, r = { (void *)(uintptr_t)addr, len };
	return process_vm_readv(getpid(), &l, 1, &r, 1, 0) == (ssize_t)len ? 0 : -1;
}

static int fault_status(int err, int local_side)
{
	if (err == ESRCH) {
		sim_set_error(URMA_ETIMEOUT, "the peer process is gone");
		return URMA_CR_ACK_TIMEOUT_ERR;
	}
	if (err == EPERM)
		sim_set_error(URMA_ENOPERM, "process_vm_readv/writev: EPERM (ptrace restricted between these processes?)");
	else
		sim_set_error(URMA_EINVAL, "%s address not mapped", local_side ? "local" : "remote");
	return local_side ? URMA_CR_LOC_ACCESS_ERR : URMA_CR_REM_ACCESS_ABORT_ERR;
}

int sim_copy(pid_t src_pid, const struct sim_iov *src, int ns, pid_t dst_pid, const struct sim_iov *dst, int nd,
	     int src_is_local)
{
	int si = 0, di = 0;
	uint64_t so = 0, dof = 0;
	while (si < ns && di < nd) {
		if (so >= src[si].len) { si++; so = 0; continue; }
		if (dof >= dst[di].len) { di++; dof = 0; continue; }
		uint64_t chunk = src[si].len - so;
		if (dst[di].len - dof < chunk) chunk = dst[di].len - dof;
		if (chunk > BOUNCE) chunk = BOUNCE;
		struct iovec b = { bounce, (size_t)chunk };
		struct iovec r = { (void *)(uintptr_t)(src[si].addr + so), (size_t)chunk };
		if (process_vm_readv(src_pid, &b, 1, &r, 1, 0) != (ssize_t)chunk) return fault_status(errno, src_is_local);
		struct iovec w = { (void *)(uintptr_t)(dst[di].addr + dof), (size_t)chunk };
		if (process_vm_writev(dst_pid, &b, 1, &w, 1, 0) != (ssize_t)chunk) return fault_status(errno, !src_is_local);
		so += chunk;
		dof += chunk;
	}
	return URMA_CR_SUCCESS;
}

/* Reads an SGE array from user memory; checks each against its registered (local) segment. */
static int load_local(const urma_sg_t *sg, struct sim_iov *iov, uint32_t max, int is_inline, uint64_t *total, int *bad)
{
	urma_sge_t sge[SIM_MAX_SGE];
	*total = 0;
	*bad = 0;
	if (sg->num_sge > max || (sg->num_sge && sim_safe_read(sge, (uint64_t)(uintptr_t)sg->sge, sg->num_sge * sizeof(urma_sge_t))))
		return -1;
	for (uint32_t i = 0; i < sg->num_sge; i++) {
		iov[i].addr = sge[i].addr;
		iov[i].len = sge[i].len;
		*total += sge[i].len;
		if (is_inline) continue;
		struct sim_tseg *g = (struct sim_tseg *)sge[i].tseg;
		if (!sim_handle_is(g, K_TSEG) || !g->local || sge[i].addr < g->pub.seg.ubva.va ||
		    sge[i].addr + sge[i].len > g->pub.seg.ubva.va + g->pub.seg.len) {
			sim_set_error(URMA_EINVAL, "local SGE %u [0x%llx, +%u) is outside its registered segment", i,
				      (unsigned long long)sge[i].addr, sge[i].len);
			*bad = 1;
		}
	}
	return 0;
}

/* Checks a remote SGE against its imported segment (token, access, bounds, liveness). */
static int check_remote(const urma_sg_t *sg, uint64_t len, uint32_t need, struct sim_iov *iov, struct sim_owner *owner)
{
	urma_sge_t sge;
	if (sg->num_sge != 1 || sim_safe_read(&sge, (uint64_t)(uintptr_t)sg->sge, sizeof(sge))) return URMA_CR_LOC_OPERATION_ERR;
	struct sim_tseg *g = (struct sim_tseg *)sge.tseg;
	if (!sim_handle_is(g, K_TSEG) || g->local) {
		sim_set_error(URMA_EINVAL, "remote SGE has no imported segment");
		return URMA_CR_REM_ACCESS_ABORT_ERR;
	}
	if (len > sge.len) return URMA_CR_LOC_LEN_ERR;
	sim_lock();
	struct sim_seg_slot s = sim_reg->segs[g->slot];
	sim_unlock();
	if (!s.used || s.gen != g->gen) {
		if (!sim_owner_alive(&g->owner)) return fault_status(ESRCH, 0);
		sim_set_error(URMA_EINVAL, "the remote segment was unregistered");
		return URMA_CR_REM_ACCESS_ABORT_ERR;
	}
	if (g->token != s.token || !(s.access & need) || (s.access & URMA_ACCESS_LOCAL_ONLY)) {
		sim_set_error(URMA_ENOPERM, "remote segment refused the access (token or access flags)");
		return URMA_CR_REM_ACCESS_ABORT_ERR;
	}
	if (sge.addr < s.va || sge.addr + len > s.va + s.len || sge.addr + len < sge.addr) {
		sim_set_error(URMA_EINVAL, "remote range [0x%llx, +%llu) is outside the segment", (unsigned long long)sge.addr,
			      (unsigned long long)len);
		return URMA_CR_REM_ACCESS_ABORT_ERR;
	}
	iov->addr = sge.addr;
	iov->len = len;
	*owner = s.owner;
	return URMA_CR_SUCCESS;
}

/* Consumes a receive WR of the target jetty, copies the payload, completes it there. */
static int deliver(struct sim_sendq *q, struct sim_tjetty *t, const struct sim_iov *src, int ns, uint64_t total,
		   int opcode, uint64_t imm, int solicited)
{
	sim_lock();
	struct sim_jetty_slot js = sim_reg->jettys[t->slot];
	/* slot numbers come from shared memory: never index with one unchecked */
	int sane = js.jfr >= 0 && js.jfr < SIM_MAX_JFR && js.jfc >= 0 && js.jfc < SIM_MAX_JFC;
	struct sim_jfr_slot *r = sane ? &sim_reg->jfrs[js.jfr] : NULL;
	if (!sane || !js.used || js.gen != t->gen || !r->used || r->gen != js.jfr_gen) {
		sim_unlock();
		sim_set_error(URMA_ETIMEOUT, "the target jetty is gone");
		return URMA_CR_ACK_TIMEOUT_ERR;
	}
	if (r->token != t->token) {
		sim_unlock();
		sim_set_error(URMA_ENOPERM, "wrong token for the target jetty");
		return URMA_CR_REM_ACCESS_ABORT_ERR;
	}
	if (r->head == r->tail) {
		sim_unlock();
		sim_set_error(URMA_EAGAIN, "no receive posted at the target (RNR)");
		return URMA_CR_RNR_RETRY_CNT_EXC_ERR;
	}
	struct sim_recv rv = sim_reg->jfr_rings[js.jfr][r->head % SIM_JFR_RING];
	r->head++;
	sim_unlock();
	if (rv.nsge > SIM_MAX_RECV_SGE) rv.nsge = SIM_MAX_RECV_SGE;
	urma_cr_t cr = { 0 };
	cr.user_ctx = rv.user_ctx;
	cr.opcode = (urma_cr_opcode_t)opcode;
	cr.flag.value = 0x3; /* s_r = recv, jetty */
	cr.local_id = js.id;
	cr.remote_id = q->self;
	cr.imm_data = imm;
	uint64_t room = 0;
	struct sim_iov dst[SIM_MAX_RECV_SGE];
	for (uint32_t i = 0; i < rv.nsge; i++) {
		dst[i].addr = rv.sge[i].addr;
		dst[i].len = rv.sge[i].len;
		room += rv.sge[i].len;
	}
	int st = URMA_CR_SUCCESS, remote_st = URMA_CR_SUCCESS;
	if (opcode != URMA_CR_OPC_WRITE_WITH_IMM) {
		if (total > room) {
			cr.status = URMA_CR_LOC_LEN_ERR;
			st = URMA_CR_REM_OPERATION_ERR;
			sim_set_error(URMA_EINVAL, "receive buffer of %llu bytes is too small for %llu", (unsigned long long)room,
				      (unsigned long long)total);
		} else if ((st = sim_copy(getpid(), src, ns, js.owner.pid, dst, (int)rv.nsge, 1)) != URMA_CR_SUCCESS) {
			remote_st = st == URMA_CR_REM_ACCESS_ABORT_ERR ? URMA_CR_LOC_ACCESS_ERR : st;
			cr.status = (urma_cr_status_t)remote_st;
		}
	}
	cr.completion_len = st == URMA_CR_SUCCESS ? (uint32_t)total : 0;
	if (st != URMA_CR_ACK_TIMEOUT_ERR) {
		sim_lock();
		struct sim_jfc_slot *c = &sim_reg->jfcs[js.jfc];
		if (c->used && c->gen == js.jfc_gen) (void)sim_push_cr_locked(js.jfc, &cr, solicited);
		sim_unlock();
	}
	return st;
}

static int is_known(uint32_t op)
{
	return op == URMA_OPC_WRITE || op == URMA_OPC_WRITE_IMM || op == URMA_OPC_WRITE_NOTIFY || op == URMA_OPC_READ ||
	       (op >= URMA_OPC_CAS && op <= URMA_OPC_FXOR) || op == URMA_OPC_SEND || op == URMA_OPC_SEND_IMM ||
	       op == URMA_OPC_SEND_INVALIDATE || op == URMA_OPC_NOP;
}

/* Executes one request; returns its CR status and the bytes moved. */
static int exec_wr(struct sim_sendq *q, struct sim_tjetty *t, const urma_jfs_wr_t *w, uint32_t *bytes)
{
	struct sim_iov loc[SIM_MAX_SGE], rem;
	struct sim_owner owner;
	uint64_t total = 0;
	int bad = 0, st;
	int is_inline = (w->flag.value & URMA_SIM_WR_INLINE) != 0;
	*bytes = 0;
	if (t->incomplete) {
		sim_set_error(URMA_EAGAIN, "jetty was imported before the peer's segment (import segments first)");
		return URMA_CR_RNR_RETRY_CNT_EXC_ERR;
	}
	if (!sim_owner_is_self(&t->owner) && kill(t->owner.pid, 0) != 0 && errno == ESRCH) return fault_status(ESRCH, 0);
	switch (w->opcode) {
	case URMA_OPC_WRITE:
	case URMA_OPC_WRITE_IMM:
		if (load_local(&w->rw.src, loc, q->max_sge, is_inline, &total, &bad) != 0) return URMA_CR_LOC_OPERATION_ERR;
		if (bad) return URMA_CR_LOC_ACCESS_ERR;
		if (total > SIM_MAX_MSG) return URMA_CR_LOC_LEN_ERR;
		if ((st = check_remote(&w->rw.dst, total, URMA_ACCESS_WRITE, &rem, &owner)) != URMA_CR_SUCCESS) return st;
		if ((st = sim_copy(getpid(), loc, (int)w->rw.src.num_sge, owner.pid, &rem, 1, 1)) != URMA_CR_SUCCESS) return st;
		if (w->opcode == URMA_OPC_WRITE_IMM &&
		    (st = deliver(q, t, NULL, 0, total, URMA_CR_OPC_WRITE_WITH_IMM, w->rw.notify_data,
				  (w->flag.value & URMA_SIM_WR_SOLICITED) != 0)) != URMA_CR_SUCCESS)
			return st;
		*bytes = (uint32_t)total;
		return URMA_CR_SUCCESS;
	case URMA_OPC_READ:
		if (load_local(&w->rw.dst, loc, q->max_sge, 0, &total, &bad) != 0) return URMA_CR_LOC_OPERATION_ERR;
		if (bad) return URMA_CR_LOC_ACCESS_ERR;
		if (total > SIM_MAX_MSG) return URMA_CR_LOC_LEN_ERR;
		if ((st = check_remote(&w->rw.src, total, URMA_ACCESS_READ, &rem, &owner)) != URMA_CR_SUCCESS) return st;
		if ((st = sim_copy(owner.pid, &rem, 1, getpid(), loc, (int)w->rw.dst.num_sge, 0)) != URMA_CR_SUCCESS) return st;
		*bytes = (uint32_t)total;
		return URMA_CR_SUCCESS;
	case URMA_OPC_SEND:
	case URMA_OPC_SEND_IMM:
		if (load_local(&w->send.src, loc, q->max_sge, is_inline, &total, &bad) != 0) return URMA_CR_LOC_OPERATION_ERR;
		if (bad) return URMA_CR_LOC_ACCESS_ERR;
		if (total > SIM_MAX_MSG) return URMA_CR_LOC_LEN_ERR;
		st = deliver(q, t, loc, (int)w->send.src.num_sge, total,
			     w->opcode == URMA_OPC_SEND ? URMA_CR_OPC_SEND : URMA_CR_OPC_SEND_WITH_IMM,
			     w->opcode == URMA_OPC_SEND ? 0 : w->send.imm_data, (w->flag.value & URMA_SIM_WR_SOLICITED) != 0);
		if (st == URMA_CR_SUCCESS) *bytes = (uint32_t)total;
		return st;
	case URMA_OPC_NOP:
		return URMA_CR_SUCCESS;
	default:
		sim_set_error(URMA_EINVAL, "opcode 0x%x is not supported by the simulator", (unsigned)w->opcode);
		return URMA_CR_UNSUPPORTED_OPCODE_ERR;
	}
}

static urma_status_t post_send(struct sim_sendq *q, int jetty, urma_jfs_wr_t *wr, urma_jfs_wr_t **bad_wr)
{
	uint64_t addr = (uint64_t)(uintptr_t)wr;
	for (int n = 0; addr != 0; n++) {
		urma_jfs_wr_t w;
		int rc = URMA_SUCCESS;
		struct sim_tjetty *t = NULL;
		if (n >= SIM_RING || sim_safe_read(&w, addr, sizeof(w)) != 0) {
			rc = sim_set_error(URMA_EINVAL, "work request %d is unreadable (or the chain is longer than %d)", n, SIM_RING);
		} else if (!is_known((uint32_t)w.opcode)) {
			rc = sim_set_error(URMA_EINVAL, "work request %d: unknown opcode 0x%x", n, (unsigned)w.opcode);
		} else {
			t = (struct sim_tjetty *)(w.tjetty ? w.tjetty : (q->bound ? &q->bound->pub : NULL));
			if (q->trans_mode == URMA_TM_RC && (!q->bound || (w.tjetty && w.tjetty != &q->bound->pub)))
				rc = sim_set_error(URMA_EINVAL, "work request %d: an RC jetty sends only to the jetty it is bound to", n);
			else if (!sim_handle_is(t, K_TJETTY) || t->trans_mode != q->trans_mode)
				rc = sim_set_error(URMA_EINVAL, "work request %d: tjetty is not an imported jetty of the same trans_mode", n);
		}
		if (rc == URMA_SUCCESS) {
			sim_lock();
			struct sim_jfc_slot *c = &sim_reg->jfcs[q->jfc->slot];
			int room = c->gen == q->jfc->gen && c->tail - c->head < c->depth;
			sim_unlock();
			if (!room) rc = sim_set_error(URMA_EAGAIN, "the JFC is full: poll it before posting more");
		}
		if (rc != URMA_SUCCESS) {
			if (bad_wr) *bad_wr = (urma_jfs_wr_t *)(uintptr_t)addr;
			return rc;
		}
		uint32_t bytes;
		int st = exec_wr(q, t, &w, &bytes);
		if (st != URMA_CR_SUCCESS || (w.flag.value & URMA_SIM_WR_COMPLETE)) {
			urma_cr_t cr = { 0 };
			cr.status = (urma_cr_status_t)st;
			cr.user_ctx = w.user_ctx;
			cr.flag.value = jetty ? 0x2 : 0x0; /* s_r = send */
			cr.completion_len = bytes;
			cr.local_id = q->id;
			cr.remote_id = t->pub.id;
			sim_lock();
			(void)sim_push_cr_locked(q->jfc->slot, &cr, 0);
			sim_unlock();
		}
		addr = (uint64_t)(uintptr_t)w.next;
	}
	return URMA_SUCCESS;
}

static urma_status_t post_recv(struct sim_jfr *r, urma_jfr_wr_t *wr, urma_jfr_wr_t **bad_wr)
{
	uint64_t addr = (uint64_t)(uintptr_t)wr;
	for (int n = 0; addr != 0; n++) {
		urma_jfr_wr_t w;
		struct sim_recv rv = { 0 };
		struct sim_iov iov[SIM_MAX_RECV_SGE];
		uint64_t total;
		int bad = 0, rc = URMA_SUCCESS;
		if (n >= SIM_RING || sim_safe_read(&w, addr, sizeof(w)) != 0)
			rc = sim_set_error(URMA_EINVAL, "receive request %d is unreadable", n);
		else if (w.src.num_sge == 0 || load_local(&w.src, iov, SIM_MAX_RECV_SGE, 0, &total, &bad) != 0 || bad)
			rc = sim_set_error(URMA_EINVAL, "receive request %d: SGEs must be 1..%d inside registered segments", n, SIM_MAX_RECV_SGE);
		if (rc == URMA_SUCCESS) {
			rv.user_ctx = w.user_ctx;
			rv.nsge = w.src.num_sge;
			for (uint32_t i = 0; i < rv.nsge; i++) rv.sge[i].addr = iov[i].addr, rv.sge[i].len = iov[i].len;
			sim_lock();
			struct sim_jfr_slot *s = &sim_reg->jfrs[r->slot];
			if (s->gen != r->gen || !s->used) rc = sim_set_error(URMA_EINVAL, "the JFR's registry slot was reclaimed");
			else if (rv.nsge > s->max_sge) rc = sim_set_error(URMA_EINVAL, "more SGEs than the JFR's max_sge");
			else if (s->tail - s->head >= s->depth) rc = sim_set_error(URMA_EAGAIN, "the JFR is full");
			else sim_reg->jfr_rings[r->slot][s->tail++ % SIM_JFR_RING] = rv;
			sim_unlock();
		}
		if (rc != URMA_SUCCESS) {
			if (bad_wr) *bad_wr = (urma_jfr_wr_t *)(uintptr_t)addr;
			return rc;
		}
		addr = (uint64_t)(uintptr_t)w.next;
	}
	return URMA_SUCCESS;
}

urma_status_t urma_post_jfs_wr(urma_jfs_t *jfs, urma_jfs_wr_t *wr, urma_jfs_wr_t **bad_wr)
{
	if (!sim_handle_is(jfs, K_JFS) || !wr) return sim_set_error(URMA_EINVAL, "urma_post_jfs_wr: invalid jfs or wr");
	return post_send(&((struct sim_jfs *)jfs)->sq, 0, wr, bad_wr);
}

urma_status_t urma_post_jetty_send_wr(urma_jetty_t *jetty, urma_jfs_wr_t *wr, urma_jfs_wr_t **bad_wr)
{
	if (!sim_handle_is(jetty, K_JETTY) || !wr) return sim_set_error(URMA_EINVAL, "urma_post_jetty_send_wr: invalid jetty or wr");
	if (((struct sim_jetty *)jetty)->state == URMA_JETTY_STATE_ERROR) return sim_set_error(URMA_FAIL, "urma_post_jetty_send_wr: jetty %u is in the ERROR state", jetty->jetty_id.id);
	return post_send(&((struct sim_jetty *)jetty)->sq, 1, wr, bad_wr);
}

urma_status_t urma_post_jfr_wr(urma_jfr_t *jfr, urma_jfr_wr_t *wr, urma_jfr_wr_t **bad_wr)
{
	if (!sim_handle_is(jfr, K_JFR) || !wr) return sim_set_error(URMA_EINVAL, "urma_post_jfr_wr: invalid jfr or wr");
	return post_recv((struct sim_jfr *)jfr, wr, bad_wr);
}

urma_status_t urma_post_jetty_recv_wr(urma_jetty_t *jetty, urma_jfr_wr_t *wr, urma_jfr_wr_t **bad_wr)
{
	if (!sim_handle_is(jetty, K_JETTY) || !wr) return sim_set_error(URMA_EINVAL, "urma_post_jetty_recv_wr: invalid jetty or wr");
	return post_recv(((struct sim_jetty *)jetty)->jfr, wr, bad_wr);
}

/* The one-call forms build a single request on the stack. */
static urma_status_t one_rw(urma_jfs_t *jfs, urma_target_jetty_t *t, urma_opcode_t op, urma_target_seg_t *dst_tseg,
			    urma_target_seg_t *src_tseg, uint64_t dst, uint64_t src, uint32_t len, urma_jfs_wr_flag_t flag,
			    uint64_t user_ctx)
{
	if (!sim_handle_is(jfs, K_JFS)) return sim_set_error(URMA_EINVAL, "invalid jfs");
	urma_sge_t s = { .addr = src, .len = len, .tseg = src_tseg }, d = { .addr = dst, .len = len, .tseg = dst_tseg };
	urma_jfs_wr_t w = { .opcode = op, .flag = flag, .tjetty = t, .user_ctx = user_ctx };
	w.rw.src = (urma_sg_t){ &s, 1 };
	w.rw.dst = (urma_sg_t){ &d, 1 };
	return post_send(&((struct sim_jfs *)jfs)->sq, 0, &w, NULL);
}

urma_status_t urma_write(urma_jfs_t *jfs, urma_target_jetty_t *target_jfr, urma_target_seg_t *dst_tseg,
			 urma_target_seg_t *src_tseg, uint64_t dst, uint64_t src, uint32_t len, urma_jfs_wr_flag_t flag,
			 uint64_t user_ctx)
{
	return one_rw(jfs, target_jfr, URMA_OPC_WRITE, dst_tseg, src_tseg, dst, src, len, flag, user_ctx);
}

urma_status_t urma_read(urma_jfs_t *jfs, urma_target_jetty_t *target_jfr, urma_target_seg_t *dst_tseg,
			urma_target_seg_t *src_tseg, uint64_t dst, uint64_t src, uint32_t len, urma_jfs_wr_flag_t flag,
			uint64_t user_ctx)
{
	return one_rw(jfs, target_jfr, URMA_OPC_READ, dst_tseg, src_tseg, dst, src, len, flag, user_ctx);
}

urma_status_t urma_send(urma_jfs_t *jfs, urma_target_jetty_t *target_jfr, urma_target_seg_t *src_tseg, uint64_t src,
			uint32_t len, urma_jfs_wr_flag_t flag, uint64_t user_ctx)
{
	if (!sim_handle_is(jfs, K_JFS)) return sim_set_error(URMA_EINVAL, "urma_send: invalid jfs");
	urma_sge_t s = { .addr = src, .len = len, .tseg = src_tseg };
	urma_jfs_wr_t w = { .opcode = URMA_OPC_SEND, .flag = flag, .tjetty = target_jfr, .user_ctx = user_ctx };
	w.send.src = (urma_sg_t){ &s, 1 };
	return post_send(&((struct sim_jfs *)jfs)->sq, 0, &w, NULL);
}

urma_status_t urma_recv(urma_jfr_t *jfr, urma_target_seg_t *recv_tseg, uint64_t buf, uint32_t len, uint64_t user_ctx)
{
	if (!sim_handle_is(jfr, K_JFR)) return sim_set_error(URMA_EINVAL, "urma_recv: invalid jfr");
	urma_sge_t s = { .addr = buf, .len = len, .tseg = recv_tseg };
	urma_jfr_wr_t w = { .src = { &s, 1 }, .user_ctx = user_ctx };
	return post_recv((struct sim_jfr *)jfr, &w, NULL);
}
