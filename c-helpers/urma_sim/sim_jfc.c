/*
 * sim_jfc.c — completion: JFCE (an abstract AF_UNIX datagram socket, so any process of the user
 * can make its fd readable), JFC (a ring of urma_cr_t in the registry), polling, arming, waiting.
 */
#define _GNU_SOURCE
#include "sim_internal.h"

#include <poll.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

static pthread_mutex_t jfce_lock = PTHREAD_MUTEX_INITIALIZER; /* guards jfce ↔ jfc links */

/* A JFC's link to its JFCE: lookup by registry slot when a doorbell datagram arrives. */
#define MAX_LINKS SIM_MAX_JFC
static struct { struct sim_jfce *jfce; struct sim_jfc *jfc; } links[MAX_LINKS];

static socklen_t abstract_addr(struct sockaddr_un *a, const char *name)
{
	memset(a, 0, sizeof(*a));
	a->sun_family = AF_UNIX;
	size_t n = strnlen(name, SIM_SOCK_NAME - 1);
	memcpy(a->sun_path + 1, name, n); /* sun_path[0] = '\0': abstract namespace */
	return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + n);
}

static int bell_fd = -1;
static void make_bell(void)
{
	bell_fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
}

void sim_ring_doorbell(const char *name, uint32_t slot)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	pthread_once(&once, make_bell);
	int fd = bell_fd;
	if (fd < 0) return;
	struct sockaddr_un a;
	socklen_t len = abstract_addr(&a, name);
	/* EAGAIN (receiver's queue full) is fine: its fd is readable already. */
	(void)sendto(fd, &slot, sizeof(slot), MSG_DONTWAIT, (struct sockaddr *)&a, len);
}

int sim_push_cr_locked(int slot, const urma_cr_t *cr, int solicited)
{
	if (slot < 0 || slot >= SIM_MAX_JFC) return -1;
	struct sim_jfc_slot *s = &sim_reg->jfcs[slot];
	if (s->depth > SIM_JFC_RING || s->tail - s->head >= s->depth) {
		/* An overrun puts the JFC in error (as a device does) and is reported to its owner: the
		 * next poll returns what fit, then fails; a JFCE is told at once, armed or not (the
		 * device's asynchronous JFC error event), so a sleeping owner finds out. */
		if (!s->overflow && s->has_jfce) sim_ring_doorbell(s->jfce_name, (uint32_t)slot);
		s->overflow = 1;
		return -1;
	}
	sim_reg->jfc_rings[slot][s->tail % SIM_JFC_RING] = *cr;
	__atomic_store_n(&s->tail, s->tail + 1, __ATOMIC_RELEASE); /* after the record: read without the lock by poll */
	if (s->armed && s->has_jfce && (!s->solicited_only || solicited)) {
		s->armed = 0;
		sim_ring_doorbell(s->jfce_name, (uint32_t)slot);
	}
	return 0;
}

/*
 * A JFCE's socket. The kernel picks its abstract name (autobind: an unused one), so no other
 * process can take the name first; SO_PASSCRED lets urma_wait_jfc drop doorbells that another
 * user sent. Returns the fd with the name in name, or -1 with the error set.
 */
static int bind_doorbell(char name[SIM_SOCK_NAME])
{
	const size_t at = offsetof(struct sockaddr_un, sun_path) + 1; /* after the leading NUL */
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	socklen_t len = sizeof(a);
	int on = 1, fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_PASSCRED, &on, sizeof(on)) != 0 ||
	    bind(fd, (struct sockaddr *)&a, sizeof(sa_family_t)) != 0 ||
	    getsockname(fd, (struct sockaddr *)&a, &len) != 0) {
		int e = errno;
		if (fd >= 0) close(fd);
		return sim_set_error(URMA_FAIL, "urma_create_jfce: socket: %s", strerror(e)), -1;
	}
	if (len <= at || a.sun_path[0] != '\0' || len - at >= SIM_SOCK_NAME) {
		close(fd);
		return sim_set_error(URMA_FAIL, "urma_create_jfce: the kernel gave no abstract name"), -1;
	}
	memset(name, 0, SIM_SOCK_NAME);
	memcpy(name, a.sun_path + 1, len - at);
	return fd;
}

urma_jfce_t *urma_create_jfce(urma_context_t *ctx)
{
	if (!sim_handle_is(ctx, K_CTX)) return sim_set_error_null(URMA_EINVAL, "urma_create_jfce: invalid context");
	struct sim_jfce *j = calloc(1, sizeof(*j));
	if (!j) return sim_set_error_null(URMA_ENOMEM, "out of memory");
	int fd = bind_doorbell(j->name);
	if (fd < 0) {
		free(j);
		return NULL;
	}
	j->pub.urma_ctx = ctx;
	j->pub.fd = fd;
	j->ctx = (struct sim_ctx *)ctx;
	if (sim_handle_add(j, K_JFCE) != 0) {
		close(fd);
		free(j);
		return sim_set_error_null(URMA_ENOMEM, "too many objects");
	}
	j->ctx->children++;
	return &j->pub;
}

urma_status_t urma_delete_jfce(urma_jfce_t *jfce)
{
	if (!sim_handle_is(jfce, K_JFCE)) return sim_set_error(URMA_EINVAL, "urma_delete_jfce: invalid jfce");
	struct sim_jfce *j = (struct sim_jfce *)jfce;
	if (j->jfcs > 0) return sim_set_error(URMA_FAIL, "urma_delete_jfce: %d JFCs still use it", j->jfcs);
	sim_handle_del(j);
	close(j->pub.fd);
	j->ctx->children--;
	free(j);
	return URMA_SUCCESS;
}

urma_jfc_t *urma_create_jfc(urma_context_t *ctx, urma_jfc_cfg_t *cfg)
{
	if (!sim_handle_is(ctx, K_CTX) || !cfg) return sim_set_error_null(URMA_EINVAL, "urma_create_jfc: invalid context or cfg");
	if (cfg->depth == 0 || cfg->depth > SIM_JFC_RING)
		return sim_set_error_null(URMA_EINVAL, "urma_create_jfc: depth %u not in 1..%d", cfg->depth, SIM_JFC_RING);
	struct sim_jfce *jfce = (struct sim_jfce *)cfg->jfce;
	if (jfce && (!sim_handle_is(jfce, K_JFCE) || jfce->pub.urma_ctx != ctx))
		return sim_set_error_null(URMA_EINVAL, "urma_create_jfc: invalid jfce");
	struct sim_jfc *c = calloc(1, sizeof(*c));
	if (!c) return sim_set_error_null(URMA_ENOMEM, "out of memory");
	sim_lock();
	int slot = -1;
	for (int i = 0; i < SIM_MAX_JFC && slot < 0; i++) if (!sim_reg->jfcs[i].used) slot = i;
	if (slot < 0) {
		sim_gc_locked();
		for (int i = 0; i < SIM_MAX_JFC && slot < 0; i++) if (!sim_reg->jfcs[i].used) slot = i;
	}
	if (slot < 0) {
		sim_unlock();
		free(c);
		return sim_set_error_null(URMA_ENOMEM, "urma_create_jfc: all %d JFCs in use", SIM_MAX_JFC);
	}
	struct sim_jfc_slot *s = &sim_reg->jfcs[slot];
	s->used = 1;
	s->gen++;
	s->id = sim_next_id_locked();
	s->owner = sim_self();
	s->depth = cfg->depth;
	s->head = s->tail = 0;
	s->armed = s->solicited_only = s->overflow = 0;
	s->has_jfce = jfce != NULL;
	memset(s->jfce_name, 0, sizeof(s->jfce_name));
	if (jfce) memcpy(s->jfce_name, jfce->name, sizeof(s->jfce_name));
	c->slot = slot;
	c->gen = s->gen;
	c->pub.jfc_id.id = s->id;
	sim_unlock();
	c->pub.urma_ctx = ctx;
	c->pub.jfc_id.eid = sim_eid;
	c->pub.jfc_id.uasid = (uint32_t)getpid();
	c->pub.jfc_cfg = *cfg;
	c->ctx = (struct sim_ctx *)ctx;
	c->jfce = jfce;
	if (sim_handle_add(c, K_JFC) != 0) {
		sim_lock();
		s->used = 0;
		s->gen++;
		sim_unlock();
		free(c);
		return sim_set_error_null(URMA_ENOMEM, "too many objects");
	}
	if (jfce) {
		pthread_mutex_lock(&jfce_lock);
		links[slot].jfce = jfce;
		links[slot].jfc = c;
		jfce->jfcs++;
		pthread_mutex_unlock(&jfce_lock);
	}
	c->ctx->children++;
	return &c->pub;
}

urma_status_t urma_delete_jfc(urma_jfc_t *jfc)
{
	if (!sim_handle_is(jfc, K_JFC)) return sim_set_error(URMA_EINVAL, "urma_delete_jfc: invalid jfc");
	struct sim_jfc *c = (struct sim_jfc *)jfc;
	if (c->users > 0) return sim_set_error(URMA_FAIL, "urma_delete_jfc: %d queues still use it", c->users);
	sim_handle_del(c);
	sim_lock();
	if (sim_reg->jfcs[c->slot].gen == c->gen) {
		sim_reg->jfcs[c->slot].used = 0;
		sim_reg->jfcs[c->slot].gen++;
	}
	sim_unlock();
	if (c->jfce) {
		pthread_mutex_lock(&jfce_lock);
		links[c->slot].jfce = NULL;
		links[c->slot].jfc = NULL;
		c->jfce->jfcs--;
		pthread_mutex_unlock(&jfce_lock);
	}
	c->ctx->children--;
	free(c);
	return URMA_SUCCESS;
}

int urma_poll_jfc(urma_jfc_t *jfc, int cr_cnt, urma_cr_t *cr)
{
	if (!sim_handle_is(jfc, K_JFC) || cr_cnt < 0 || (cr_cnt > 0 && !cr)) {
		sim_set_error(URMA_EINVAL, "urma_poll_jfc: invalid jfc, count or buffer");
		return -1;
	}
	struct sim_jfc *c = (struct sim_jfc *)jfc;
	int n = 0;
	struct sim_jfc_slot *s = &sim_reg->jfcs[c->slot];
	/* Empty and healthy: answer without the registry lock, as a device's poll reads its CQ ring
	 * without a system call (a poller spinning on an empty JFC must not slow the processes
	 * that post). Only the owner moves head; tail and overflow are read atomically. */
	if (__atomic_load_n(&s->tail, __ATOMIC_ACQUIRE) == s->head && !__atomic_load_n(&s->overflow, __ATOMIC_ACQUIRE) &&
	    __atomic_load_n(&s->gen, __ATOMIC_RELAXED) == c->gen)
		return 0;
	sim_lock();
	if (s->gen != c->gen || !s->used) {
		sim_unlock();
		sim_set_error(URMA_EINVAL, "urma_poll_jfc: the JFC's registry slot was reclaimed");
		return -1;
	}
	while (n < cr_cnt && s->head < s->tail) {
		cr[n++] = sim_reg->jfc_rings[c->slot][s->head % SIM_JFC_RING];
		s->head++;
	}
	int overflow = n == 0 && s->overflow;
	sim_unlock();
	if (overflow) {
		sim_set_error(URMA_ENOMEM, "urma_poll_jfc: completions were lost (JFC overrun)");
		return -1;
	}
	return n;
}

urma_status_t urma_rearm_jfc(urma_jfc_t *jfc, bool solicited_only)
{
	if (!sim_handle_is(jfc, K_JFC)) return sim_set_error(URMA_EINVAL, "urma_rearm_jfc: invalid jfc");
	struct sim_jfc *c = (struct sim_jfc *)jfc;
	if (!c->jfce) return sim_set_error(URMA_EINVAL, "urma_rearm_jfc: the JFC has no JFCE");
	sim_lock();
	struct sim_jfc_slot *s = &sim_reg->jfcs[c->slot];
	if (s->gen == c->gen) {
		s->armed = 1;
		s->solicited_only = solicited_only;
	}
	sim_unlock();
	return URMA_SUCCESS;
}

int urma_wait_jfc(urma_jfce_t *jfce, uint32_t jfc_cnt, int time_out, urma_jfc_t *jfc[])
{
	if (!sim_handle_is(jfce, K_JFCE) || jfc_cnt == 0 || !jfc) {
		sim_set_error(URMA_EINVAL, "urma_wait_jfc: invalid jfce, count or array");
		return -1;
	}
	struct pollfd p = { .fd = jfce->fd, .events = POLLIN };
	int r = poll(&p, 1, time_out < 0 ? -1 : time_out);
	if (r <= 0) return r < 0 && errno != EINTR ? -1 : 0;
	int n = 0;
	while ((uint32_t)n < jfc_cnt) {
		uint32_t slot;
		union { struct cmsghdr h; char buf[CMSG_SPACE(sizeof(struct ucred))]; } ctl;
		struct iovec iov = { &slot, sizeof(slot) };
		struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.buf,
				    .msg_controllen = sizeof(ctl.buf) };
		ssize_t got = recvmsg(jfce->fd, &m, MSG_DONTWAIT);
		if (got < 0) break;
		struct cmsghdr *c0 = CMSG_FIRSTHDR(&m);
		struct ucred who = { .uid = (uid_t)-1 };
		if (c0 && c0->cmsg_level == SOL_SOCKET && c0->cmsg_type == SCM_CREDENTIALS)
			memcpy(&who, CMSG_DATA(c0), sizeof(who));
		/* Only this user's processes ring: another user's datagram is dropped unread. */
		if (got != (ssize_t)sizeof(slot) || who.uid != geteuid() || slot >= MAX_LINKS) continue;
		pthread_mutex_lock(&jfce_lock);
		struct sim_jfc *c = links[slot].jfce == (struct sim_jfce *)jfce ? links[slot].jfc : NULL;
		pthread_mutex_unlock(&jfce_lock);
		if (c) jfc[n++] = &c->pub;
	}
	return n;
}

void urma_ack_jfc(urma_jfc_t *jfc[], uint32_t nevents[], uint32_t jfc_cnt)
{
	if (!jfc || !nevents) return;
	for (uint32_t i = 0; i < jfc_cnt && i < 1024; i++)
		if (sim_handle_is(jfc[i], K_JFC)) jfc[i]->comp_events_acked += nevents[i];
}
