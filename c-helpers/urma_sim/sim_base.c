/*
 * sim_base.c — process state of the simulated liburma: the handle table (every pointer the API
 * accepts is checked against it, so a stale or forged pointer is EINVAL, never a crash), the
 * last-error text, the registry's lock and garbage collection of dead owners (finding and mapping
 * the registry: sim_registry.c), urma_init / urma_uninit and the one simulated device "sim_ub0".
 */
#define _GNU_SOURCE
#include "sim_internal.h"

#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

struct sim_registry *sim_reg;
urma_device_t sim_device = { .name = "sim_ub0", .path = "/sys/class/ubcore/sim_ub0 (simulated)",
			     .type = URMA_TRANSPORT_UB };
/* One EID for the host: the IPv4-mapped 127.0.0.1 (every process on the host shares the device). */
urma_eid_t sim_eid = { .raw = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 127, 0, 0, 1 } };

static __thread char last_error[256];
static pthread_mutex_t proc_lock = PTHREAD_MUTEX_INITIALIZER;
static int initialized;

/* ---- errors ---- */

static void verror(const char *fmt, va_list ap)
{
	vsnprintf(last_error, sizeof(last_error), fmt, ap);
}

int sim_set_error(int status, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	verror(fmt, ap);
	va_end(ap);
	errno = status;
	return status;
}

void *sim_set_error_null(int status, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	verror(fmt, ap);
	va_end(ap);
	errno = status;
	return NULL;
}

const char *urma_sim_last_error(void)
{
	return last_error;
}

const char *urma_sim_abi_version(void)
{
	return URMA_SIM_ABI_NAME "-sim";
}

/* ---- handle table: open addressing on the pointer value, tombstones on delete ---- */

#define HT_SIZE 65536 /* power of two, well above every object cap combined */
static struct { uintptr_t p; int kind; } ht[HT_SIZE];
static int live[K_KINDS];
#define TOMB ((uintptr_t)1)

static size_t ht_hash(uintptr_t p)
{
	return (size_t)((p >> 4) * 0x9E3779B97F4A7C15ull) & (HT_SIZE - 1);
}

int sim_handle_add(void *p, enum sim_kind k)
{
	pthread_mutex_lock(&proc_lock);
	size_t i = ht_hash((uintptr_t)p);
	for (size_t n = 0; n < HT_SIZE; n++, i = (i + 1) & (HT_SIZE - 1)) {
		if (ht[i].p == 0 || ht[i].p == TOMB) {
			ht[i].p = (uintptr_t)p;
			ht[i].kind = k;
			live[k]++;
			pthread_mutex_unlock(&proc_lock);
			return 0;
		}
	}
	pthread_mutex_unlock(&proc_lock);
	return -1;
}

static size_t ht_find(const void *p)
{
	size_t i = ht_hash((uintptr_t)p);
	for (size_t n = 0; n < HT_SIZE; n++, i = (i + 1) & (HT_SIZE - 1)) {
		if (ht[i].p == 0) return (size_t)-1;
		if (ht[i].p == (uintptr_t)p) return i;
	}
	return (size_t)-1;
}

void sim_handle_del(void *p)
{
	pthread_mutex_lock(&proc_lock);
	size_t i = ht_find(p);
	if (i != (size_t)-1) {
		live[ht[i].kind]--;
		ht[i].p = TOMB;
		ht[i].kind = K_NONE;
	}
	pthread_mutex_unlock(&proc_lock);
}

int sim_handle_is(const void *p, enum sim_kind k)
{
	if (!p || p == (const void *)TOMB) return 0;
	pthread_mutex_lock(&proc_lock);
	size_t i = ht_find(p);
	int ok = i != (size_t)-1 && ht[i].kind == (int)k;
	pthread_mutex_unlock(&proc_lock);
	return ok;
}

int sim_live_count(enum sim_kind k)
{
	pthread_mutex_lock(&proc_lock);
	int n = live[k];
	pthread_mutex_unlock(&proc_lock);
	return n;
}

int urma_sim_live_objects(char *buf, int len)
{
	static const char *names[K_KINDS] = { "none", "contexts", "jfce", "jfc", "jfs", "jfr", "jetty",
					      "tjetty", "seg" };
	int total = 0;
	size_t used = 0;
	pthread_mutex_lock(&proc_lock);
	for (int k = K_CTX; k < K_KINDS; k++) {
		total += live[k];
		if (buf && len > 0 && used < (size_t)len) {
			int n = snprintf(buf + used, (size_t)len - used, "%s%s=%d", used ? " " : "", names[k], live[k]);
			if (n > 0) used += (size_t)n;
		}
	}
	pthread_mutex_unlock(&proc_lock);
	if (buf && len > 0) buf[len - 1 < (int)used ? len - 1 : (int)used] = '\0';
	return total;
}

/* ---- owners: pid + start time (field 22 of /proc/<pid>/stat) so a reused pid is not alive ---- */

static uint64_t start_time_of(pid_t pid, char *state)
{
	char path[64], buf[1024];
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) return 0;
	/* A process of another user is never a peer (not even for root, whom the kernel would let
	 * process_vm_writev into it): seen as gone, its slots are reclaimed, no byte moves to it. */
	struct stat st;
	if (fstat(fd, &st) != 0 || st.st_uid != geteuid()) {
		close(fd);
		return 0;
	}
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0) return 0;
	buf[n] = '\0';
	char *p = strrchr(buf, ')'); /* comm may contain spaces and parentheses */
	if (!p || p[1] == '\0') return 0;
	p += 2;
	if (state) *state = *p;
	/* after ")": field 3 is state; start time is field 22 → skip 19 more fields */
	for (int f = 3; f < 22 && p; f++) {
		p = strchr(p, ' ');
		if (p) p++;
	}
	return p ? strtoull(p, NULL, 10) : 0;
}

struct sim_owner sim_self(void)
{
	static struct sim_owner self;
	static pid_t cached;
	pid_t pid = getpid();
	if (cached != pid) { /* first call, or after fork */
		self.pid = pid;
		self.start = start_time_of(pid, NULL);
		cached = pid;
	}
	return self;
}

int sim_owner_is_self(const struct sim_owner *o)
{
	return o->pid == getpid();
}

int sim_owner_alive(const struct sim_owner *o)
{
	if (o->pid <= 0) return 0;
	if (sim_owner_is_self(o)) return 1;
	char state = '?';
	uint64_t st = start_time_of(o->pid, &state);
	return st != 0 && st == o->start && state != 'Z' && state != 'X';
}

/* ---- registry ---- */

void sim_lock(void)
{
	if (pthread_mutex_lock(&sim_reg->lock) == EOWNERDEAD) pthread_mutex_consistent(&sim_reg->lock);
}

void sim_unlock(void)
{
	pthread_mutex_unlock(&sim_reg->lock);
}

uint32_t sim_next_id_locked(void)
{
	uint32_t id = ++sim_reg->next_id;
	if (id == 0) id = ++sim_reg->next_id;
	return id;
}

/*
 * Owners seen alive or dead during one sim_gc_locked pass: each distinct process is looked up
 * in /proc once per pass, not once per slot (a registry holds thousands of slots of a few
 * processes; a lookup per slot made every import cost O(sessions)).
 */
#define GC_MEMO 64
struct gc_memo { struct sim_owner o; int alive; };

static int gc_alive(const struct sim_owner *o, struct gc_memo *memo, int *n)
{
	if (sim_owner_is_self(o)) return 1;
	for (int i = 0; i < *n; i++)
		if (memo[i].o.pid == o->pid && memo[i].o.start == o->start) return memo[i].alive;
	int alive = sim_owner_alive(o);
	if (*n < GC_MEMO) memo[(*n)++] = (struct gc_memo){ *o, alive };
	return alive;
}

/* Frees every slot whose owner process is gone. Lock held. */
void sim_gc_locked(void)
{
	struct gc_memo memo[GC_MEMO];
	int n = 0;
	for (int i = 0; i < SIM_MAX_SEG; i++)
		if (sim_reg->segs[i].used && !gc_alive(&sim_reg->segs[i].owner, memo, &n)) { sim_reg->segs[i].used = 0; sim_reg->segs[i].gen++; }
	for (int i = 0; i < SIM_MAX_JETTY; i++)
		if (sim_reg->jettys[i].used && !gc_alive(&sim_reg->jettys[i].owner, memo, &n)) { sim_reg->jettys[i].used = 0; sim_reg->jettys[i].gen++; }
	for (int i = 0; i < SIM_MAX_JFR; i++)
		if (sim_reg->jfrs[i].used && !gc_alive(&sim_reg->jfrs[i].owner, memo, &n)) { sim_reg->jfrs[i].used = 0; sim_reg->jfrs[i].gen++; }
	for (int i = 0; i < SIM_MAX_JFC; i++)
		if (sim_reg->jfcs[i].used && !gc_alive(&sim_reg->jfcs[i].owner, memo, &n)) { sim_reg->jfcs[i].used = 0; sim_reg->jfcs[i].gen++; }
}

int sim_initialized(void)
{
	return initialized;
}

urma_status_t urma_init(urma_init_attr_t *conf)
{
	(void)conf; /* the simulator's uasid is the pid */
	pthread_mutex_lock(&proc_lock);
	if (initialized) {
		pthread_mutex_unlock(&proc_lock);
		return sim_set_error(URMA_EEXIST, "urma_init: already initialised");
	}
	int rc = sim_reg ? 0 : sim_registry_open();
	if (rc == 0) initialized = 1;
	pthread_mutex_unlock(&proc_lock);
	if (rc == 0) {
		sim_lock();
		sim_gc_locked();
		sim_unlock();
	}
	return rc;
}

urma_status_t urma_uninit(void)
{
	pthread_mutex_lock(&proc_lock);
	int was = initialized;
	initialized = 0; /* the registry stays mapped: objects still open keep working memory */
	pthread_mutex_unlock(&proc_lock);
	return was ? URMA_SUCCESS : sim_set_error(URMA_EINVAL, "urma_uninit: not initialised");
}

/* ---- the device ---- */

urma_device_t **urma_get_device_list(int *num_devices)
{
	if (!num_devices) return sim_set_error_null(URMA_EINVAL, "num_devices is NULL");
	urma_device_t **list = calloc(2, sizeof(*list));
	if (!list) return sim_set_error_null(URMA_ENOMEM, "out of memory");
	list[0] = &sim_device;
	*num_devices = 1;
	return list;
}

void urma_free_device_list(urma_device_t **device_list)
{
	free(device_list);
}

urma_device_t *urma_get_device_by_name(char *dev_name)
{
	if (dev_name && strncmp(dev_name, sim_device.name, URMA_MAX_NAME) == 0) return &sim_device;
	return sim_set_error_null(URMA_EINVAL, "no device named %.64s", dev_name ? dev_name : "(null)");
}

urma_eid_info_t *urma_get_eid_list(urma_device_t *dev, uint32_t *cnt)
{
	if (dev != &sim_device || !cnt) return sim_set_error_null(URMA_EINVAL, "bad device or cnt");
	urma_eid_info_t *l = calloc(1, sizeof(*l));
	if (!l) return sim_set_error_null(URMA_ENOMEM, "out of memory");
	l[0].eid = sim_eid;
	l[0].eid_index = 0;
	*cnt = 1;
	return l;
}

void urma_free_eid_list(urma_eid_info_t *eid_list)
{
	free(eid_list);
}

urma_status_t urma_query_device(urma_device_t *dev, urma_device_attr_t *a)
{
	if (dev != &sim_device || !a) return sim_set_error(URMA_EINVAL, "bad device or attr");
	memset(a, 0, sizeof(*a));
	memcpy(a->guid.raw, "verbus-urma-sim", 15);
	urma_device_cap_t *c = &a->dev_cap;
	c->max_jfc = SIM_MAX_JFC;
	c->max_jfs = SIM_MAX_JETTY;
	c->max_jfr = SIM_MAX_JFR;
	c->max_jetty = SIM_MAX_JETTY;
	c->max_jfc_depth = SIM_JFC_RING;
	c->max_jfs_depth = SIM_RING;
	c->max_jfr_depth = SIM_JFR_RING;
	c->max_jfs_inline_len = SIM_MAX_INLINE;
	c->max_jfs_sge = c->max_jfs_rsge = SIM_MAX_SGE;
	c->max_jfr_sge = SIM_MAX_RECV_SGE;
	c->max_msg_size = SIM_MAX_MSG;
	c->max_read_size = c->max_write_size = SIM_MAX_MSG;
	c->trans_mode = URMA_TM_RM | URMA_TM_RC;
	c->max_eid_cnt = 1;
	c->page_size_cap = 4096;
	a->port_cnt = 1;
	a->port_attr[0] = (urma_port_attr_t){ URMA_MTU_4096, URMA_PORT_ACTIVE, 1, 0, URMA_MTU_4096 };
	return URMA_SUCCESS;
}
