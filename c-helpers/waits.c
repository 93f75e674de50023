/*
 * waits.c — blocking waits for nonblocking FFI calls / workers, and the run-time binding of the
 * few exported libibverbs calls the helper uses (so the helper itself never links libibverbs).
 */
#define _GNU_SOURCE
#include "verbus_helper.h"

#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <infiniband/verbs.h>

typedef int (*get_cq_event_fn)(struct ibv_comp_channel *, struct ibv_cq **, void **);
typedef void (*ack_cq_events_fn)(struct ibv_cq *, unsigned int);
typedef int (*query_port_fn)(struct ibv_context *, uint8_t, struct _compat_ibv_port_attr *);

static get_cq_event_fn p_get_cq_event;
static ack_cq_events_fn p_ack_cq_events;
static query_port_fn p_query_port;
static char bind_error[512] = "vb_verbs_bind was not called";

int vb_verbs_bind(const char *path)
{
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		snprintf(bind_error, sizeof(bind_error), "dlopen(%s): %s", path, dlerror());
		return -1;
	}
	get_cq_event_fn g = (get_cq_event_fn)dlsym(h, "ibv_get_cq_event");
	ack_cq_events_fn a = (ack_cq_events_fn)dlsym(h, "ibv_ack_cq_events");
	query_port_fn q = (query_port_fn)dlsym(h, "ibv_query_port");
	if (!g || !a || !q) {
		snprintf(bind_error, sizeof(bind_error), "%s lacks %s", path,
			 !g ? "ibv_get_cq_event" : !a ? "ibv_ack_cq_events" : "ibv_query_port");
		dlclose(h);
		return -1;
	}
	/* The handle stays open: the helper keeps using the library for the process's life. */
	p_get_cq_event = g;
	p_ack_cq_events = a;
	p_query_port = q;
	bind_error[0] = '\0';
	return 0;
}

const char *vb_bind_error(void)
{
	return bind_error;
}

int vb_query_port(struct ibv_context *ctx, uint8_t port, struct ibv_port_attr *attr)
{
	if (!ctx || !attr)
		return EINVAL;
	/* What ___ibv_query_port does, with the compat fallback through the bound symbol. */
	struct verbs_context *vctx = verbs_get_ctx_op(ctx, query_port);
	if (vctx)
		return vctx->query_port(ctx, port, attr, sizeof(*attr));
	if (!p_query_port)
		return ENOSYS;
	memset(attr, 0, sizeof(*attr));
	return p_query_port(ctx, port, (struct _compat_ibv_port_attr *)attr);
}

int vb_wait_fd(int fd, int timeout_ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN, .revents = 0 };
	for (;;) {
		int rc = poll(&p, 1, timeout_ms);
		if (rc > 0)
			return (p.revents & POLLNVAL) ? -EBADF : 1;
		if (rc == 0)
			return 0;
		if (errno != EINTR)
			return -errno;
	}
}

/* The channel is readable: take its event and ack it. 1, 0 (spurious), or -errno. */
static int take_cq_event(struct ibv_comp_channel *channel, struct ibv_cq **cq_out)
{
	struct ibv_cq *cq = NULL;
	void *cq_ctx = NULL;
	if (p_get_cq_event(channel, &cq, &cq_ctx))
		return errno == EAGAIN ? 0 : -errno;
	p_ack_cq_events(cq, 1);
	*cq_out = cq;
	return 1;
}

int vb_get_cq_event(struct ibv_comp_channel *channel, int timeout_ms, struct ibv_cq **cq_out)
{
	if (!channel || !cq_out)
		return -EINVAL;
	if (!p_get_cq_event)
		return -ENOSYS;
	int rc = vb_wait_fd(channel->fd, timeout_ms);
	return rc <= 0 ? rc : take_cq_event(channel, cq_out);
}

int vb_eventfd(void)
{
	int fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

int vb_eventfd_signal(int fd)
{
	uint64_t one = 1;
	return write(fd, &one, sizeof(one)) == (ssize_t)sizeof(one) ? 0 : -errno;
}

int vb_wait_fd_or_wake(int fd, int wake_fd, int timeout_ms)
{
	struct pollfd p[2] = {
		{ .fd = fd, .events = POLLIN, .revents = 0 },
		{ .fd = wake_fd, .events = POLLIN, .revents = 0 },
	};
	int rc;
	for (;;) {
		rc = poll(p, 2, timeout_ms);
		if (rc >= 0 || errno != EINTR)
			break;
	}
	if (rc < 0)
		return -errno;
	if (rc == 0)
		return 0;
	if ((p[0].revents | p[1].revents) & POLLNVAL)
		return -EBADF;
	if (p[0].revents & POLLIN)
		return 1;
	uint64_t n;
	if (read(wake_fd, &n, sizeof(n)) < 0 && errno != EAGAIN)
		return -errno;
	return 2;
}

int vb_get_cq_event_or_wake(struct ibv_comp_channel *channel, int wake_fd, int timeout_ms,
			    struct ibv_cq **cq_out)
{
	if (!channel || !cq_out)
		return -EINVAL;
	if (!p_get_cq_event)
		return -ENOSYS;
	int rc = vb_wait_fd_or_wake(channel->fd, wake_fd, timeout_ms);
	return rc == 1 ? take_cq_event(channel, cq_out) : rc;
}

/* One shared futex wait (no FUTEX_PRIVATE_FLAG: the word lives in memory mapped by several
 * processes) until `tsp` (NULL: forever): 0 woken, 1 changed, 2 timeout, -errno. */
static int futex_wait_for(uint32_t *addr, uint32_t expected, const struct timespec *tsp)
{
	long rc = syscall(SYS_futex, addr, FUTEX_WAIT, expected, tsp, NULL, 0);
	if (rc == 0)
		return 0;
	if (errno == EAGAIN)
		return 1;
	if (errno == ETIMEDOUT)
		return 2;
	if (errno == EINTR)
		return 0;
	return -errno;
}

int vb_futex_wait(uint32_t *addr, uint32_t expected, int timeout_ms)
{
	struct timespec ts, *tsp = NULL;
	if (!addr)
		return -EINVAL;
	if (timeout_ms >= 0) {
		ts.tv_sec = timeout_ms / 1000;
		ts.tv_nsec = (long)(timeout_ms % 1000) * 1000000L;
		tsp = &ts;
	}
	return futex_wait_for(addr, expected, tsp);
}

/*
 * vb_futex_wait with a timeout in microseconds, for a caller that blocks its own thread for a short
 * nap (the progress engine after a quiet spell): 0 woken, 1 changed, 2 timeout, -errno.
 */
int vb_futex_wait_us(uint32_t *addr, uint32_t expected, int timeout_us)
{
	struct timespec ts;
	if (!addr || timeout_us < 0)
		return -EINVAL;
	ts.tv_sec = timeout_us / 1000000;
	ts.tv_nsec = (long)(timeout_us % 1000000) * 1000L;
	return futex_wait_for(addr, expected, &ts);
}

int vb_futex_wake(uint32_t *addr, int count)
{
	if (!addr)
		return -EINVAL;
	long rc = syscall(SYS_futex, addr, FUTEX_WAKE, count <= 0 ? INT_MAX : count, NULL, NULL, 0);
	return rc < 0 ? -errno : (int)rc;
}
