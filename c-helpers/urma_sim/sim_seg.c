/*
 * sim_seg.c — segments of the simulated liburma: register (token, access, bounds recorded in
 * the shm registry), import by a peer (matched on token id, ubva and length; the token is NOT
 * checked here but on every access, as hardware does), unregister / unimport. It also counts
 * imports per peer process, for the segment-before-jetty rule (see sim_control.c).
 */
#define _GNU_SOURCE
#include "sim_internal.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Imports per peer process (for the segment-before-jetty rule). */
static pthread_mutex_t imp_lock = PTHREAD_MUTEX_INITIALIZER;
static struct { int32_t pid; int count; } imports[64];

void sim_note_import(int32_t pid, int delta)
{
	pthread_mutex_lock(&imp_lock);
	int free_i = -1;
	for (int i = 0; i < 64; i++) {
		if (imports[i].count > 0 && imports[i].pid == pid) {
			imports[i].count += delta;
			pthread_mutex_unlock(&imp_lock);
			return;
		}
		if (imports[i].count <= 0 && free_i < 0) free_i = i;
	}
	if (delta > 0 && free_i >= 0) imports[free_i].pid = pid, imports[free_i].count = delta;
	pthread_mutex_unlock(&imp_lock);
}

int sim_imported_from(int32_t pid)
{
	pthread_mutex_lock(&imp_lock);
	int n = 0;
	for (int i = 0; i < 64; i++) if (imports[i].count > 0 && imports[i].pid == pid) n = imports[i].count;
	pthread_mutex_unlock(&imp_lock);
	return n;
}

/* ---- segments ---- */

urma_target_seg_t *urma_register_seg(urma_context_t *ctx, urma_seg_cfg_t *cfg)
{
	if (!sim_handle_is(ctx, K_CTX) || !cfg) return sim_set_error_null(URMA_EINVAL, "urma_register_seg: invalid context or cfg");
	uint8_t probe;
	if (cfg->va == 0 || cfg->len == 0 || cfg->len > (1ull << 40) || cfg->va + cfg->len < cfg->va ||
	    sim_safe_read(&probe, cfg->va, 1) != 0 || sim_safe_read(&probe, cfg->va + cfg->len - 1, 1) != 0)
		return sim_set_error_null(URMA_EINVAL, "urma_register_seg: [va, va+len) is empty, too long or not mapped");
	struct sim_tseg *g = calloc(1, sizeof(*g));
	if (!g) return sim_set_error_null(URMA_ENOMEM, "out of memory");
	sim_lock();
	int slot = -1;
	for (int pass = 0; pass < 2 && slot < 0; pass++) {
		if (pass) sim_gc_locked();
		for (int i = 0; i < SIM_MAX_SEG && slot < 0; i++) if (!sim_reg->segs[i].used) slot = i;
	}
	if (slot < 0) {
		sim_unlock();
		free(g);
		return sim_set_error_null(URMA_ENOMEM, "urma_register_seg: all %d segments in use", SIM_MAX_SEG);
	}
	struct sim_seg_slot *s = &sim_reg->segs[slot];
	s->used = 1;
	s->gen++;
	s->token_id = ++sim_reg->next_token_id;
	s->uasid = (uint32_t)getpid();
	s->owner = sim_self();
	s->va = cfg->va;
	s->len = cfg->len;
	s->token = cfg->token_value.token;
	s->access = cfg->flag.bs.access;
	g->slot = slot;
	g->gen = s->gen;
	g->pub.seg.token_id = s->token_id;
	sim_unlock();
	g->local = 1;
	g->token = cfg->token_value.token;
	g->access = cfg->flag.bs.access;
	g->owner = sim_self();
	g->ctx = (struct sim_ctx *)ctx;
	g->pub.seg.ubva.eid = sim_eid;
	g->pub.seg.ubva.uasid = (uint32_t)getpid();
	g->pub.seg.ubva.va = cfg->va;
	g->pub.seg.len = cfg->len;
	g->pub.seg.attr.bs.token_policy = cfg->flag.bs.token_policy;
	g->pub.seg.attr.bs.cacheable = cfg->flag.bs.cacheable;
	g->pub.seg.attr.bs.access = cfg->flag.bs.access;
	g->pub.user_ctx = cfg->user_ctx;
	g->pub.urma_ctx = ctx;
	g->pub.handle = (uint64_t)slot;
	if (sim_handle_add(g, K_TSEG) != 0) {
		sim_lock();
		s->used = 0;
		s->gen++;
		sim_unlock();
		free(g);
		return sim_set_error_null(URMA_ENOMEM, "too many objects");
	}
	g->ctx->children++;
	return &g->pub;
}

static urma_status_t drop_seg(urma_target_seg_t *tseg, int local, const char *fn)
{
	if (!sim_handle_is(tseg, K_TSEG) || ((struct sim_tseg *)tseg)->local != local)
		return sim_set_error(URMA_EINVAL, "%s: not a %s segment", fn, local ? "registered" : "imported");
	struct sim_tseg *g = (struct sim_tseg *)tseg;
	sim_handle_del(g);
	if (local) {
		sim_lock();
		if (sim_reg->segs[g->slot].gen == g->gen) {
			sim_reg->segs[g->slot].used = 0;
			sim_reg->segs[g->slot].gen++;
		}
		sim_unlock();
	} else {
		sim_note_import(g->owner.pid, -1);
	}
	g->ctx->children--;
	free(g);
	return URMA_SUCCESS;
}

urma_status_t urma_unregister_seg(urma_target_seg_t *target_seg)
{
	return drop_seg(target_seg, 1, "urma_unregister_seg");
}

urma_target_seg_t *urma_import_seg(urma_context_t *ctx, urma_seg_t *seg, urma_token_t *token_value, uint64_t addr,
				   urma_import_seg_flag_t flag)
{
	(void)flag;
	if (!sim_handle_is(ctx, K_CTX) || !seg) return sim_set_error_null(URMA_EINVAL, "urma_import_seg: invalid context or seg");
	if (sim_check_seg_info(seg) != 0) return NULL;
	struct sim_tseg *g = calloc(1, sizeof(*g));
	if (!g) return sim_set_error_null(URMA_ENOMEM, "out of memory");
	sim_lock();
	int slot = -1;
	for (int i = 0; i < SIM_MAX_SEG && slot < 0; i++) {
		struct sim_seg_slot *s = &sim_reg->segs[i];
		if (s->used && s->token_id == seg->token_id && s->uasid == seg->ubva.uasid && s->va == seg->ubva.va &&
		    s->len == seg->len)
			slot = i;
	}
	if (slot >= 0 && !sim_owner_alive(&sim_reg->segs[slot].owner)) { /* its owner died: reclaim it */
		sim_reg->segs[slot].used = 0;
		sim_reg->segs[slot].gen++;
		slot = -1;
	}
	if (slot >= 0) {
		g->gen = sim_reg->segs[slot].gen;
		g->owner = sim_reg->segs[slot].owner;
		g->access = sim_reg->segs[slot].access;
	}
	sim_unlock();
	if (slot < 0) {
		free(g);
		return sim_set_error_null(URMA_EINVAL, "urma_import_seg: no segment with token id %u at that ubva and length", seg->token_id);
	}
	g->slot = slot;
	g->local = 0;
	g->token = token_value ? token_value->token : 0; /* checked on every access, like hardware */
	g->ctx = (struct sim_ctx *)ctx;
	g->pub.seg = *seg;
	g->pub.mva = addr;
	g->pub.urma_ctx = ctx;
	g->pub.handle = (uint64_t)slot;
	if (sim_handle_add(g, K_TSEG) != 0) {
		free(g);
		return sim_set_error_null(URMA_ENOMEM, "too many objects");
	}
	sim_note_import(g->owner.pid, 1);
	g->ctx->children++;
	return &g->pub;
}

urma_status_t urma_unimport_seg(urma_target_seg_t *tseg)
{
	return drop_seg(tseg, 0, "urma_unimport_seg");
}
