/*
 * sim_blob.c — the "for proxy transmission" descriptions of the SIMULATED liburma:
 * urma_get_seg_ctx / urma_get_rjetty return a malloc'ed urma_seg_t / urma_rjetty_t followed by
 * user info, and its length, as UMDK does from master a3b44bfb (2026-06-16) on. Not in the
 * 25.12-B081 build (that tag has no such API). The user info is 16 bytes the simulator derives
 * from the object, so an import can check it arrived whole:
 *   25.12:      seg attr.has_user_info (bit 14) / rjetty flag.has_user_info (bit 13), then
 *               { u32 len = 16; info[16] } after the struct  (urma_user_info_ext_hdr_t)
 *   26.06-ext*: ext.flag.enable = 1, ext.length = 16, info[16] after the struct
 * An import whose struct announces user info checks it (read safely: a truncated description
 * is EINVAL, never a crash).
 */
#include "sim_internal.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#if URMA_SIM_ABI == URMA_SIM_ABI_B081
int sim_check_seg_info(const urma_seg_t *seg)
{
	(void)seg;
	return 0;
}

int sim_check_rjetty_info(const urma_rjetty_t *r)
{
	(void)r;
	return 0;
}
#else
#define SIM_UINFO_MAGIC 0x49554256u /* "VBUI" */
struct sim_uinfo { uint32_t magic, a, b, c; };

static struct sim_uinfo seg_info(const urma_seg_t *s)
{
	return (struct sim_uinfo){ SIM_UINFO_MAGIC, s->token_id, s->ubva.uasid, (uint32_t)s->len };
}

static struct sim_uinfo rjetty_info(const urma_rjetty_t *r)
{
	return (struct sim_uinfo){ SIM_UINFO_MAGIC, r->jetty_id.id, r->jetty_id.uasid, (uint32_t)r->trans_mode };
}

/* Checks the user info after a struct of `base` bytes at p (announced: 1 if its flag says so;
 * ext: the struct's urma_ext_t, in the -ext ABIs). */
static int check_info(const void *p, size_t base, int announced, const void *ext, struct sim_uinfo want,
		      const char *what)
{
	if (!announced) return 0;
	struct sim_uinfo got;
#if URMA_SIM_EXT
	uint32_t len = ((const urma_ext_t *)ext)->length;
	size_t at = base;
#else
	(void)ext;
	uint32_t len;
	if (sim_safe_read(&len, (uint64_t)(uintptr_t)p + base, sizeof(len)) != 0) len = 0;
	size_t at = base + sizeof(len);
#endif
	if (len != sizeof(got) || sim_safe_read(&got, (uint64_t)(uintptr_t)p + at, sizeof(got)) != 0 ||
	    memcmp(&got, &want, sizeof(got)) != 0)
		return sim_set_error(URMA_EINVAL, "%s: its user info is missing or wrong (a truncated description?)", what);
	return 0;
}

int sim_check_seg_info(const urma_seg_t *seg)
{
#if URMA_SIM_EXT
	return check_info(seg, sizeof(*seg), seg->ext.flag.bs.enable, &seg->ext, seg_info(seg), "urma_import_seg");
#else
	return check_info(seg, sizeof(*seg), seg->attr.bs.has_user_info, NULL, seg_info(seg), "urma_import_seg");
#endif
}

int sim_check_rjetty_info(const urma_rjetty_t *r)
{
#if URMA_SIM_EXT
	return check_info(r, sizeof(*r), r->ext.flag.bs.enable, &r->ext, rjetty_info(r), "urma_import_jetty");
#else
	return check_info(r, sizeof(*r), r->flag.bs.has_user_info, NULL, rjetty_info(r), "urma_import_jetty");
#endif
}

/* Allocates struct (base bytes, copied from s) + its user info; returns the total length.
 * ext_at: offset of the struct's urma_ext_t (-ext ABIs). */
static void *with_info(const void *s, size_t base, size_t ext_at, struct sim_uinfo info, uint32_t *total)
{
	(void)ext_at;
#if URMA_SIM_EXT
	size_t n = base + sizeof(info);
#else
	size_t n = base + sizeof(uint32_t) + sizeof(info);
#endif
	char *b = calloc(1, n);
	if (!b) return NULL;
	memcpy(b, s, base);
#if URMA_SIM_EXT
	urma_ext_t *ext = (urma_ext_t *)(b + ext_at);
	ext->flag.bs.enable = 1;
	ext->length = sizeof(info);
	memcpy(b + base, &info, sizeof(info));
#else
	uint32_t len = sizeof(info);
	memcpy(b + base, &len, sizeof(len));
	memcpy(b + base + sizeof(len), &info, sizeof(info));
#endif
	*total = (uint32_t)n;
	return b;
}

urma_status_t urma_get_seg_ctx(urma_target_seg_t *tseg, urma_seg_t **seg, uint32_t *size)
{
	if (!sim_handle_is(tseg, K_TSEG) || !seg || !size) return sim_set_error(URMA_EINVAL, "urma_get_seg_ctx: invalid parameter");
	urma_seg_t s = tseg->seg;
#if URMA_SIM_EXT
	size_t ext_at = offsetof(urma_seg_t, ext);
#else
	size_t ext_at = 0;
	s.attr.bs.has_user_info = 1;
#endif
	*seg = with_info(&s, sizeof(s), ext_at, seg_info(&s), size);
	return *seg ? URMA_SUCCESS : sim_set_error(URMA_ENOMEM, "out of memory");
}

void urma_put_seg_ctx(urma_seg_t *seg)
{
	free(seg);
}

urma_status_t urma_get_rjetty(urma_jetty_t *jetty, urma_rjetty_t **rjetty, uint32_t *length)
{
	if (!sim_handle_is(jetty, K_JETTY) || !rjetty || !length) return sim_set_error(URMA_EINVAL, "urma_get_rjetty: invalid parameter");
	urma_rjetty_t r;
	memset(&r, 0, sizeof(r));
	r.jetty_id = jetty->jetty_id;
	r.trans_mode = jetty->jetty_cfg.jfs_cfg.trans_mode;
	r.type = URMA_JETTY;
#if URMA_SIM_EXT
	size_t ext_at = offsetof(urma_rjetty_t, ext);
#else
	size_t ext_at = 0;
	r.flag.bs.has_user_info = 1;
#endif
	*rjetty = with_info(&r, sizeof(r), ext_at, rjetty_info(&r), length);
	return *rjetty ? URMA_SUCCESS : sim_set_error(URMA_ENOMEM, "out of memory");
}

void urma_put_rjetty(urma_rjetty_t *rjetty)
{
	free(rjetty);
}
#endif
