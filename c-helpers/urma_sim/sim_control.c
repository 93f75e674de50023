/*
 * sim_control.c — the control path of the simulated liburma: contexts, JFS, JFR, jetties
 * (create / import / bind) and segments (register / import). Every create has its delete;
 * a parent refuses to go while children are open; every pointer is checked against the
 * handle table first.
 *
 * "Segment before jetty": the real UB stack sets up the transport when a jetty is imported and
 * sends through a jetty imported before the peer's segment fail with RNR_RETRY_CNT_EXC. The
 * simulator reproduces it: a jetty imported while its owner has registered segments of which
 * this process imported none is marked incomplete, and every request through it completes with
 * URMA_CR_RNR_RETRY_CNT_EXC_ERR. Segments are in sim_seg.c.
 */
#define _GNU_SOURCE
#include "sim_internal.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- context ---- */

urma_context_t *urma_create_context(urma_device_t *dev, uint32_t eid_index)
{
	if (!sim_initialized()) return sim_set_error_null(URMA_EINVAL, "urma_create_context: call urma_init first");
	if (dev != &sim_device || eid_index != 0) return sim_set_error_null(URMA_EINVAL, "urma_create_context: bad device or eid index");
	struct sim_ctx *c = calloc(1, sizeof(*c));
	if (!c) return sim_set_error_null(URMA_ENOMEM, "out of memory");
	c->pub.dev = dev;
	c->pub.dev_fd = -1;
	c->pub.async_fd = sim_async_fd_open();
	if (c->pub.async_fd < 0) {
		free(c);
		return sim_set_error_null(URMA_FAIL, "urma_create_context: eventfd failed");
	}
	pthread_mutex_init(&c->pub.mutex, NULL);
	c->pub.eid = sim_eid;
	c->pub.uasid = (uint32_t)getpid();
	if (sim_handle_add(c, K_CTX) != 0) {
		sim_async_ctx_gone(&c->pub);
		free(c);
		return sim_set_error_null(URMA_ENOMEM, "too many objects");
	}
	return &c->pub;
}

urma_status_t urma_delete_context(urma_context_t *ctx)
{
	if (!sim_handle_is(ctx, K_CTX)) return sim_set_error(URMA_EINVAL, "urma_delete_context: invalid context");
	struct sim_ctx *c = (struct sim_ctx *)ctx;
	if (c->children > 0) return sim_set_error(URMA_FAIL, "urma_delete_context: %d objects still open", c->children);
	sim_handle_del(c);
	sim_async_ctx_gone(ctx);
	pthread_mutex_destroy(&c->pub.mutex);
	free(c);
	return URMA_SUCCESS;
}

/* ---- send side (JFS, and the send half of a jetty) ---- */

static int sendq_init(struct sim_sendq *q, urma_context_t *ctx, const urma_jfs_cfg_t *cfg, uint32_t id)
{
	if (cfg->depth == 0 || cfg->depth > SIM_RING) return sim_set_error(URMA_EINVAL, "jfs depth %u not in 1..%d", cfg->depth, SIM_RING);
	if (cfg->trans_mode != URMA_TM_RM && cfg->trans_mode != URMA_TM_RC)
		return sim_set_error(URMA_EINVAL, "trans_mode %d not supported (RM = 1, RC = 2)", (int)cfg->trans_mode);
	if (cfg->max_sge > SIM_MAX_SGE || cfg->max_inline_data > SIM_MAX_INLINE)
		return sim_set_error(URMA_EINVAL, "max_sge ≤ %d and max_inline_data ≤ %d", SIM_MAX_SGE, SIM_MAX_INLINE);
	if (!sim_handle_is(cfg->jfc, K_JFC) || cfg->jfc->urma_ctx != ctx) return sim_set_error(URMA_EINVAL, "jfs_cfg.jfc is not a JFC of this context");
	q->ctx = (struct sim_ctx *)ctx;
	q->jfc = (struct sim_jfc *)cfg->jfc;
	q->trans_mode = cfg->trans_mode;
	q->max_sge = cfg->max_sge ? cfg->max_sge : SIM_MAX_SGE;
	q->max_inline = cfg->max_inline_data;
	q->id = id;
	q->self.eid = sim_eid;
	q->self.uasid = (uint32_t)getpid();
	q->self.id = id;
	return 0;
}

static uint32_t new_id(void)
{
	sim_lock();
	uint32_t id = sim_next_id_locked();
	sim_unlock();
	return id;
}

urma_jfs_t *urma_create_jfs(urma_context_t *ctx, urma_jfs_cfg_t *cfg)
{
	if (!sim_handle_is(ctx, K_CTX) || !cfg) return sim_set_error_null(URMA_EINVAL, "urma_create_jfs: invalid context or cfg");
	struct sim_jfs *j = calloc(1, sizeof(*j));
	if (!j) return sim_set_error_null(URMA_ENOMEM, "out of memory");
	if (sendq_init(&j->sq, ctx, cfg, new_id()) != 0 || sim_handle_add(j, K_JFS) != 0) {
		free(j);
		return sim_set_error_null(errno ? errno : URMA_ENOMEM, "urma_create_jfs: %s", urma_sim_last_error());
	}
	j->pub.urma_ctx = ctx;
	j->pub.jfs_id = j->sq.self;
	j->pub.jfs_cfg = *cfg;
	j->sq.jfc->users++;
	j->sq.ctx->children++;
	return &j->pub;
}

urma_status_t urma_delete_jfs(urma_jfs_t *jfs)
{
	if (!sim_handle_is(jfs, K_JFS)) return sim_set_error(URMA_EINVAL, "urma_delete_jfs: invalid jfs");
	struct sim_jfs *j = (struct sim_jfs *)jfs;
	sim_handle_del(j);
	j->sq.jfc->users--;
	j->sq.ctx->children--;
	free(j);
	return URMA_SUCCESS;
}

/* ---- JFR ---- */

urma_jfr_t *urma_create_jfr(urma_context_t *ctx, urma_jfr_cfg_t *cfg)
{
	if (!sim_handle_is(ctx, K_CTX) || !cfg) return sim_set_error_null(URMA_EINVAL, "urma_create_jfr: invalid context or cfg");
	if (cfg->depth == 0 || cfg->depth > SIM_JFR_RING || cfg->max_sge > SIM_MAX_RECV_SGE)
		return sim_set_error_null(URMA_EINVAL, "urma_create_jfr: depth 1..%d, max_sge ≤ %d", SIM_JFR_RING, SIM_MAX_RECV_SGE);
	if (!sim_handle_is(cfg->jfc, K_JFC) || cfg->jfc->urma_ctx != ctx)
		return sim_set_error_null(URMA_EINVAL, "urma_create_jfr: jfr_cfg.jfc is not a JFC of this context");
	if (cfg->trans_mode != URMA_TM_RM && cfg->trans_mode != URMA_TM_RC)
		return sim_set_error_null(URMA_EINVAL, "urma_create_jfr: trans_mode %d not supported", (int)cfg->trans_mode);
	struct sim_jfr *r = calloc(1, sizeof(*r));
	if (!r) return sim_set_error_null(URMA_ENOMEM, "out of memory");
	sim_lock();
	int slot = -1;
	for (int pass = 0; pass < 2 && slot < 0; pass++) {
		if (pass) sim_gc_locked();
		for (int i = 0; i < SIM_MAX_JFR && slot < 0; i++) if (!sim_reg->jfrs[i].used) slot = i;
	}
	if (slot < 0) {
		sim_unlock();
		free(r);
		return sim_set_error_null(URMA_ENOMEM, "urma_create_jfr: all %d JFRs in use", SIM_MAX_JFR);
	}
	struct sim_jfr_slot *s = &sim_reg->jfrs[slot];
	s->used = 1;
	s->gen++;
	s->id = sim_next_id_locked();
	s->owner = sim_self();
	s->depth = cfg->depth;
	s->max_sge = cfg->max_sge ? cfg->max_sge : SIM_MAX_RECV_SGE;
	s->token = cfg->token_value.token;
	s->head = s->tail = 0;
	r->slot = slot;
	r->gen = s->gen;
	r->pub.jfr_id.id = s->id;
	sim_unlock();
	r->pub.urma_ctx = ctx;
	r->pub.jfr_id.eid = sim_eid;
	r->pub.jfr_id.uasid = (uint32_t)getpid();
	r->pub.jfr_cfg = *cfg;
	r->ctx = (struct sim_ctx *)ctx;
	r->jfc = (struct sim_jfc *)cfg->jfc;
	if (sim_handle_add(r, K_JFR) != 0) {
		sim_lock();
		s->used = 0;
		s->gen++;
		sim_unlock();
		free(r);
		return sim_set_error_null(URMA_ENOMEM, "too many objects");
	}
	r->jfc->users++;
	r->ctx->children++;
	return &r->pub;
}

urma_status_t urma_delete_jfr(urma_jfr_t *jfr)
{
	if (!sim_handle_is(jfr, K_JFR)) return sim_set_error(URMA_EINVAL, "urma_delete_jfr: invalid jfr");
	struct sim_jfr *r = (struct sim_jfr *)jfr;
	if (r->users > 0) return sim_set_error(URMA_FAIL, "urma_delete_jfr: %d jetties still use it", r->users);
	sim_handle_del(r);
	sim_lock();
	if (sim_reg->jfrs[r->slot].gen == r->gen) {
		sim_reg->jfrs[r->slot].used = 0;
		sim_reg->jfrs[r->slot].gen++;
	}
	sim_unlock();
	r->jfc->users--;
	r->ctx->children--;
	free(r);
	return URMA_SUCCESS;
}

/* ---- jetty ---- */

urma_jetty_t *urma_create_jetty(urma_context_t *ctx, urma_jetty_cfg_t *cfg)
{
	if (!sim_handle_is(ctx, K_CTX) || !cfg) return sim_set_error_null(URMA_EINVAL, "urma_create_jetty: invalid context or cfg");
	if (!cfg->flag.bs.share_jfr || !sim_handle_is(cfg->shared.jfr, K_JFR) || cfg->shared.jfr->urma_ctx != ctx)
		return sim_set_error_null(URMA_EINVAL, "urma_create_jetty: set flag.share_jfr and shared.jfr to a JFR of this context");
	struct sim_jfr *jfr = (struct sim_jfr *)cfg->shared.jfr;
	struct sim_jfc *rjfc = jfr->jfc;
	if (cfg->shared.jfc) {
		if (!sim_handle_is(cfg->shared.jfc, K_JFC) || cfg->shared.jfc->urma_ctx != ctx)
			return sim_set_error_null(URMA_EINVAL, "urma_create_jetty: shared.jfc is not a JFC of this context");
		rjfc = (struct sim_jfc *)cfg->shared.jfc;
	}
	if (jfr->pub.jfr_cfg.trans_mode != cfg->jfs_cfg.trans_mode)
		return sim_set_error_null(URMA_EINVAL, "urma_create_jetty: the JFR's trans_mode differs from the jetty's");
	struct sim_jetty *j = calloc(1, sizeof(*j));
	if (!j) return sim_set_error_null(URMA_ENOMEM, "out of memory");
	if (sendq_init(&j->sq, ctx, &cfg->jfs_cfg, 0) != 0) {
		free(j);
		return sim_set_error_null(errno, "urma_create_jetty: %s", urma_sim_last_error());
	}
	sim_lock();
	int slot = -1;
	for (int pass = 0; pass < 2 && slot < 0; pass++) {
		if (pass) sim_gc_locked();
		for (int i = 0; i < SIM_MAX_JETTY && slot < 0; i++) if (!sim_reg->jettys[i].used) slot = i;
	}
	if (slot < 0) {
		sim_unlock();
		free(j);
		return sim_set_error_null(URMA_ENOMEM, "urma_create_jetty: all %d jetties in use", SIM_MAX_JETTY);
	}
	struct sim_jetty_slot *s = &sim_reg->jettys[slot];
	s->used = 1;
	s->gen++;
	s->id = sim_next_id_locked();
	s->trans_mode = cfg->jfs_cfg.trans_mode;
	s->owner = sim_self();
	s->jfr = jfr->slot;
	s->jfr_gen = jfr->gen;
	s->jfc = rjfc->slot;
	s->jfc_gen = rjfc->gen;
	j->slot = slot;
	j->gen = s->gen;
	j->sq.id = j->sq.self.id = s->id;
	sim_unlock();
	j->pub.urma_ctx = ctx;
	j->pub.jetty_id = j->sq.self;
	j->pub.jetty_cfg = *cfg;
	j->state = URMA_JETTY_STATE_READY;
	j->jfr = jfr;
	j->rjfc = rjfc;
	if (sim_handle_add(j, K_JETTY) != 0) {
		sim_lock();
		s->used = 0;
		s->gen++;
		sim_unlock();
		free(j);
		return sim_set_error_null(URMA_ENOMEM, "too many objects");
	}
	j->sq.jfc->users++;
	rjfc->users++;
	jfr->users++;
	j->sq.ctx->children++;
	return &j->pub;
}

urma_status_t urma_delete_jetty(urma_jetty_t *jetty)
{
	if (!sim_handle_is(jetty, K_JETTY)) return sim_set_error(URMA_EINVAL, "urma_delete_jetty: invalid jetty");
	struct sim_jetty *j = (struct sim_jetty *)jetty;
	if (j->sq.bound) urma_unbind_jetty(jetty);
	sim_handle_del(j);
	sim_lock();
	if (sim_reg->jettys[j->slot].gen == j->gen) {
		sim_reg->jettys[j->slot].used = 0;
		sim_reg->jettys[j->slot].gen++;
	}
	sim_unlock();
	j->sq.jfc->users--;
	j->rjfc->users--;
	j->jfr->users--;
	j->sq.ctx->children--;
	free(j);
	return URMA_SUCCESS;
}

urma_target_jetty_t *urma_import_jetty(urma_context_t *ctx, urma_rjetty_t *rjetty, urma_token_t *token_value)
{
	if (!sim_handle_is(ctx, K_CTX) || !rjetty) return sim_set_error_null(URMA_EINVAL, "urma_import_jetty: invalid context or rjetty");
	/* A caller with another ABI's (shorter) urma_rjetty_t leaves tp_type as whatever follows it. */
	if ((unsigned)rjetty->tp_type > URMA_UTP)
		return sim_set_error_null(URMA_EINVAL, "urma_import_jetty: tp_type %u is not a urma_tp_type_t (is the caller's urma_rjetty_t the %zu-byte one of ABI %s?)",
					  (unsigned)rjetty->tp_type, sizeof(urma_rjetty_t), URMA_SIM_ABI_NAME);
	if (sim_check_rjetty_info(rjetty) != 0) return NULL;
	if (memcmp(rjetty->jetty_id.eid.raw, sim_eid.raw, URMA_EID_SIZE) != 0)
		return sim_set_error_null(URMA_EINVAL, "urma_import_jetty: EID is not on this (simulated) fabric");
	struct sim_tjetty *t = calloc(1, sizeof(*t));
	if (!t) return sim_set_error_null(URMA_ENOMEM, "out of memory");
	sim_lock();
	int slot = -1, owner_segs = 0;
	for (int i = 0; i < SIM_MAX_JETTY && slot < 0; i++) {
		struct sim_jetty_slot *s = &sim_reg->jettys[i];
		if (s->used && s->id == rjetty->jetty_id.id && (uint32_t)s->owner.pid == rjetty->jetty_id.uasid) slot = i;
	}
	if (slot >= 0 && !sim_owner_alive(&sim_reg->jettys[slot].owner)) { /* its owner died: reclaim it */
		sim_reg->jettys[slot].used = 0;
		sim_reg->jettys[slot].gen++;
		slot = -1;
	}
	if (slot >= 0) {
		for (int i = 0; i < SIM_MAX_SEG; i++)
			if (sim_reg->segs[i].used && sim_reg->segs[i].owner.pid == sim_reg->jettys[slot].owner.pid) owner_segs++;
		t->gen = sim_reg->jettys[slot].gen;
		t->owner = sim_reg->jettys[slot].owner;
		t->trans_mode = sim_reg->jettys[slot].trans_mode;
	}
	sim_unlock();
	if (slot < 0) {
		free(t);
		return sim_set_error_null(URMA_EINVAL, "urma_import_jetty: no jetty %u of uasid %u", rjetty->jetty_id.id, rjetty->jetty_id.uasid);
	}
	if (t->trans_mode != (uint32_t)rjetty->trans_mode) {
		uint32_t mode = t->trans_mode;
		free(t);
		return sim_set_error_null(URMA_EINVAL, "urma_import_jetty: jetty %u is trans_mode %u, not %d", rjetty->jetty_id.id,
					  mode, (int)rjetty->trans_mode);
	}
	t->incomplete = owner_segs > 0 && sim_imported_from(t->owner.pid) == 0;
	t->slot = slot;
	t->token = token_value ? token_value->token : 0;
	t->ctx = (struct sim_ctx *)ctx;
	t->pub.urma_ctx = ctx;
	t->pub.id = rjetty->jetty_id;
	t->pub.handle = (uint64_t)slot;
	t->pub.trans_mode = rjetty->trans_mode;
	t->pub.tp.tpn = (uint32_t)slot;
	t->pub.type = rjetty->type;
	t->pub.flag = rjetty->flag;
	t->pub.policy = rjetty->policy;
	t->pub.tp_type = rjetty->tp_type;
	if (sim_handle_add(t, K_TJETTY) != 0) {
		free(t);
		return sim_set_error_null(URMA_ENOMEM, "too many objects");
	}
	t->ctx->children++;
	return &t->pub;
}

urma_status_t urma_unimport_jetty(urma_target_jetty_t *tjetty)
{
	if (!sim_handle_is(tjetty, K_TJETTY)) return sim_set_error(URMA_EINVAL, "urma_unimport_jetty: invalid target jetty");
	struct sim_tjetty *t = (struct sim_tjetty *)tjetty;
	if (t->bound_by > 0) return sim_set_error(URMA_FAIL, "urma_unimport_jetty: still bound to %d jetties", t->bound_by);
	sim_handle_del(t);
	t->ctx->children--;
	free(t);
	return URMA_SUCCESS;
}

urma_status_t urma_bind_jetty(urma_jetty_t *jetty, urma_target_jetty_t *tjetty)
{
	if (!sim_handle_is(jetty, K_JETTY) || !sim_handle_is(tjetty, K_TJETTY))
		return sim_set_error(URMA_EINVAL, "urma_bind_jetty: invalid jetty or target jetty");
	struct sim_jetty *j = (struct sim_jetty *)jetty;
	struct sim_tjetty *t = (struct sim_tjetty *)tjetty;
	if (j->sq.trans_mode != URMA_TM_RC || t->trans_mode != URMA_TM_RC)
		return sim_set_error(URMA_EINVAL, "urma_bind_jetty: both jetties must be URMA_TM_RC");
	if (j->sq.bound) return sim_set_error(URMA_EEXIST, "urma_bind_jetty: already bound");
	j->sq.bound = t;
	t->bound_by++;
	j->pub.remote_jetty = tjetty;
	return URMA_SUCCESS;
}

urma_status_t urma_unbind_jetty(urma_jetty_t *jetty)
{
	if (!sim_handle_is(jetty, K_JETTY)) return sim_set_error(URMA_EINVAL, "urma_unbind_jetty: invalid jetty");
	struct sim_jetty *j = (struct sim_jetty *)jetty;
	if (!j->sq.bound) return sim_set_error(URMA_EINVAL, "urma_unbind_jetty: not bound");
	j->sq.bound->bound_by--;
	j->sq.bound = NULL;
	j->pub.remote_jetty = NULL;
	return URMA_SUCCESS;
}
