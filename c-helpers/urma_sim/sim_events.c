/*
 * sim_events.c — asynchronous events, error states, flush and modify of the SIMULATED liburma.
 *
 * Each context has an async_fd (an eventfd in semaphore mode, readable while events wait), like
 * the real context's fd of the device's async event file. Events are queued per process (a
 * small ring tagged with the context); urma_get_async_event takes the oldest of its context.
 * The only source of events is the simulator-only urma_sim_inject_async_event (tests and demos:
 * "this jetty failed", "the port went down"); a jetty error also moves the jetty to the ERROR
 * state, in which urma_post_jetty_send_wr fails until urma_modify_jetty sets it READY again.
 * The simulator executes work requests as they are posted, so there is never an outstanding
 * send: urma_flush_jfs returns 0, urma_flush_jetty of a jetty in the ERROR state returns the
 * receives still posted to its JFR, as WR_FLUSH_ERR records (and they are gone).
 */
#include "sim_internal.h"

#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#define SIM_EVENTS 256

struct sim_event { urma_context_t *ctx; void *element; uint32_t type; };
static pthread_mutex_t ev_lock = PTHREAD_MUTEX_INITIALIZER;
static struct sim_event ev_ring[SIM_EVENTS];
static unsigned ev_count;

int sim_async_fd_open(void)
{
	return eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK | EFD_SEMAPHORE);
}

void sim_async_ctx_gone(urma_context_t *ctx)
{
	pthread_mutex_lock(&ev_lock);
	unsigned k = 0;
	for (unsigned i = 0; i < ev_count; i++)
		if (ev_ring[i].ctx != ctx) ev_ring[k++] = ev_ring[i];
	ev_count = k;
	pthread_mutex_unlock(&ev_lock);
	if (ctx->async_fd >= 0) close(ctx->async_fd);
	ctx->async_fd = -1;
}

int urma_sim_inject_async_event(urma_context_t *ctx, void *element, uint32_t event_type)
{
	if (!sim_handle_is(ctx, K_CTX)) return sim_set_error(URMA_EINVAL, "urma_sim_inject_async_event: invalid context");
	if (event_type > URMA_EVENT_ELR_DONE) return sim_set_error(URMA_EINVAL, "urma_sim_inject_async_event: event %u", event_type);
	if (event_type == URMA_EVENT_JETTY_ERR) {
		if (!sim_handle_is(element, K_JETTY)) return sim_set_error(URMA_EINVAL, "urma_sim_inject_async_event: not a jetty");
		((struct sim_jetty *)element)->state = URMA_JETTY_STATE_ERROR;
	}
	pthread_mutex_lock(&ev_lock);
	if (ev_count == SIM_EVENTS) {
		pthread_mutex_unlock(&ev_lock);
		return sim_set_error(URMA_ENOMEM, "urma_sim_inject_async_event: %d events not taken", SIM_EVENTS);
	}
	ev_ring[ev_count++] = (struct sim_event){ ctx, element, event_type };
	pthread_mutex_unlock(&ev_lock);
	uint64_t one = 1;
	if (write(ctx->async_fd, &one, sizeof(one)) != sizeof(one)) return sim_set_error(URMA_FAIL, "async_fd write failed");
	return URMA_SUCCESS;
}

urma_status_t urma_get_async_event(urma_context_t *ctx, urma_async_event_t *event)
{
	if (!sim_handle_is(ctx, K_CTX) || !event) return sim_set_error(URMA_EINVAL, "urma_get_async_event: invalid context or event");
	pthread_mutex_lock(&ev_lock);
	unsigned i = 0;
	while (i < ev_count && ev_ring[i].ctx != ctx) i++;
	if (i == ev_count) {
		pthread_mutex_unlock(&ev_lock);
		return sim_set_error(URMA_EAGAIN, "urma_get_async_event: no event");
	}
	struct sim_event e = ev_ring[i];
	for (; i + 1 < ev_count; i++) ev_ring[i] = ev_ring[i + 1];
	ev_count--;
	pthread_mutex_unlock(&ev_lock);
	uint64_t one;
	if (read(ctx->async_fd, &one, sizeof(one)) != sizeof(one)) { /* already drained: nothing to undo */ }
	memset(event, 0, sizeof(*event));
	event->urma_ctx = ctx;
	event->event_type = (urma_async_event_type_t)e.type;
	if (e.type == URMA_EVENT_PORT_ACTIVE || e.type == URMA_EVENT_PORT_DOWN)
		event->element.port_id = (uint32_t)(uintptr_t)e.element;
	else if (e.type == URMA_EVENT_EID_CHANGE)
		event->element.eid_idx = (uint32_t)(uintptr_t)e.element;
	else
		event->element.jetty = e.element;
	return URMA_SUCCESS;
}

void urma_ack_async_event(urma_async_event_t *event)
{
	if (event && event->event_type == URMA_EVENT_JETTY_ERR && sim_handle_is(event->element.jetty, K_JETTY))
		event->element.jetty->async_events_acked++;
}

/* A jetty in the ERROR state gives back its JFR's posted receives as WR_FLUSH_ERR records. */
int urma_flush_jetty(urma_jetty_t *jetty, int cr_cnt, urma_cr_t *cr)
{
	if (!sim_handle_is(jetty, K_JETTY) || cr_cnt < 0 || (cr_cnt > 0 && !cr)) return -1;
	struct sim_jetty *j = (struct sim_jetty *)jetty;
	if (j->state != URMA_JETTY_STATE_ERROR || !j->jfr) return 0;
	int n = 0;
	sim_lock();
	struct sim_jfr_slot *s = &sim_reg->jfrs[j->jfr->slot];
	while (n < cr_cnt && s->used && s->gen == j->jfr->gen && s->head != s->tail) {
		struct sim_recv rv = sim_reg->jfr_rings[j->jfr->slot][s->head++ % SIM_JFR_RING];
		memset(&cr[n], 0, sizeof(cr[n]));
		cr[n].status = URMA_CR_WR_FLUSH_ERR;
		cr[n].user_ctx = rv.user_ctx;
		cr[n].flag.value = 0x3; /* s_r = recv, jetty */
		cr[n].local_id = jetty->jetty_id.id;
		n++;
	}
	sim_unlock();
	return n;
}

int urma_flush_jfs(urma_jfs_t *jfs, int cr_cnt, urma_cr_t *cr)
{
	(void)cr;
	if (!sim_handle_is(jfs, K_JFS) || cr_cnt < 0) return -1;
	return 0;
}

urma_status_t urma_modify_jetty(urma_jetty_t *jetty, urma_jetty_attr_t *attr)
{
	if (!sim_handle_is(jetty, K_JETTY) || !attr) return sim_set_error(URMA_EINVAL, "urma_modify_jetty: invalid jetty or attr");
	if (attr->mask & JETTY_STATE) {
		if (attr->state > URMA_JETTY_STATE_ERROR) return sim_set_error(URMA_EINVAL, "urma_modify_jetty: state %d", (int)attr->state);
		((struct sim_jetty *)jetty)->state = attr->state;
	}
	return URMA_SUCCESS;
}

urma_status_t urma_query_jetty(urma_jetty_t *jetty, urma_jetty_cfg_t *cfg, urma_jetty_attr_t *attr)
{
	if (!sim_handle_is(jetty, K_JETTY) || !attr) return sim_set_error(URMA_EINVAL, "urma_query_jetty: invalid jetty or attr");
	if (cfg) *cfg = jetty->jetty_cfg;
	memset(attr, 0, sizeof(*attr));
	attr->mask = JETTY_STATE;
	attr->state = ((struct sim_jetty *)jetty)->state;
	return URMA_SUCCESS;
}

urma_status_t urma_modify_jfs(urma_jfs_t *jfs, urma_jfs_attr_t *attr)
{
	if (!sim_handle_is(jfs, K_JFS) || !attr) return sim_set_error(URMA_EINVAL, "urma_modify_jfs: invalid jfs or attr");
	return URMA_SUCCESS;
}

urma_status_t urma_modify_jfr(urma_jfr_t *jfr, urma_jfr_attr_t *attr)
{
	if (!sim_handle_is(jfr, K_JFR) || !attr) return sim_set_error(URMA_EINVAL, "urma_modify_jfr: invalid jfr or attr");
	return URMA_SUCCESS;
}
