/*
 * sim_internal.h — the simulator's private state.
 *
 * DESIGN. The "hardware" of the simulator is the thread that posts a work request: it executes
 * the request synchronously (copies the bytes, consumes the target's receive buffer, writes the
 * completion records) before urma_post_* returns, so completions are produced in posting order.
 * Everything two processes must both see lives in ONE shared object per user and namespace, the
 * registry: a sealed memfd (fixed size, its pages reserved at creation) that every process of the
 * user calling urma_init maps, found through a 0700 directory of that user in /dev/shm
 * (sim_registry.c says why and how). Bytes move between processes with process_vm_readv/writev
 * through a bounce buffer — also within one process, so a bad address in a work request becomes
 * a completion error (EFAULT) instead of a crash; the kernel checks ptrace permission on each,
 * and a process of another uid is never taken for a live owner (sim_base.c).
 *
 * Registry layout (fixed size):
 *
 *   ┌ sim_registry ───────────────────────────────────────────────────────────┐
 *   │ magic u32 │ version u32 │ state u32 (0 new, 1 initialising, 2 ready)  │
 *   │ lock: pthread_mutex_t (PROCESS_SHARED | ROBUST) — guards everything below│
 *   │ next_id u32 (jetty / jfs / jfr / jfc ids) │ next_token_id u32          │
 *   │ segs[SIM_MAX_SEG]     { used, gen, token_id, owner pid+start, uasid,     │
 *   │                         va, len, token, access }                         │
 *   │ jettys[SIM_MAX_JETTY] { used, gen, id, owner, trans_mode, jfr slot,      │
 *   │                         recv jfc slot }                                  │
 *   │ jfrs[SIM_MAX_JFR]     { used, gen, id, owner, depth, max_sge, token,     │
 *   │                         head, tail }                                     │
 *   │ jfcs[SIM_MAX_JFC]     { used, gen, id, owner, depth, head, tail, armed,  │
 *   │                         solicited_only, overflow, jfce socket name }     │
 *   │ jfr_rings[SIM_MAX_JFR][SIM_JFR_RING] of recv WRs                        │
 *   │ jfc_rings[SIM_MAX_JFC][SIM_JFC_RING] of urma_cr_t                       │
 *   └─────────────────────────────────────────────────────────────────────────┘
 *
 * The rings live apart from their slots, so a scan of the slots (allocation, garbage collection)
 * reads a few compact arrays instead of touching a page of every ring.
 * Slots are addressed by index + generation; a handle whose generation no longer matches sees
 * its target as gone. An entry whose owner process died (pid gone, or pid reused: start time
 * differs) is reclaimed when an allocation finds no free slot (sim_gc, every slot) or when an
 * import finds it (that slot only: imports stay O(1) in /proc lookups).
 *
 * Doorbell: a JFCE is an AF_UNIX datagram socket bound to an abstract name recorded in each of
 * its JFCs' registry slots. Whoever appends a completion to an armed JFC sends one datagram (the
 * JFC id) to that name, so the owner's JFCE fd becomes readable in any process.
 */
#ifndef VERBUS_URMA_SIM_INTERNAL_H
#define VERBUS_URMA_SIM_INTERNAL_H

#include "urma_sim.h"

#include <stddef.h>
#include <sys/types.h>

#define SIM_MAGIC 0x55524d53u /* "URMS" */
#define SIM_LAYOUT_VERSION 4
/*
 * Limits, enforced like a device's (urma_query_device reports them). Many jetties share one JFC
 * (one per process is the intended use), so JFCs are few and deep, jetties and JFRs many.
 */
#define SIM_MAX_SEG 16384
#define SIM_MAX_JETTY 4096
#define SIM_MAX_JFR 4096
#define SIM_MAX_JFC 32
#define SIM_RING 1024	    /* max depth of a JFS / jetty send queue; longest WR chain */
#define SIM_JFR_RING 512    /* max depth of a JFR */
#define SIM_JFC_RING 65536 /* max depth of a JFC */
#define SIM_MAX_SGE 16
#define SIM_MAX_RECV_SGE 4
#define SIM_MAX_MSG (64u << 20)
#define SIM_MAX_INLINE 1024
#define SIM_SOCK_NAME 64

struct sim_owner { int32_t pid; uint32_t pad; uint64_t start; };

struct sim_seg_slot {
	uint32_t used, gen, token_id, uasid;
	struct sim_owner owner;
	uint64_t va, len;
	uint32_t token, access;
};

struct sim_jetty_slot {
	uint32_t used, gen, id, trans_mode;
	struct sim_owner owner;
	int32_t jfr, jfc; /* slots of its receive queue and of the JFC its receives complete on */
	uint32_t jfr_gen, jfc_gen;
};

struct sim_recv { uint64_t user_ctx; uint32_t nsge, pad; struct { uint64_t addr; uint64_t len; } sge[SIM_MAX_RECV_SGE]; };

struct sim_jfr_slot {
	uint32_t used, gen, id, depth, max_sge, token;
	struct sim_owner owner;
	uint64_t head, tail; /* tail − head receive WRs posted (in jfr_rings[slot]) */
};

struct sim_jfc_slot {
	uint32_t used, gen, id, depth;
	struct sim_owner owner;
	uint64_t head, tail;
	uint32_t armed, solicited_only, overflow, has_jfce;
	char jfce_name[SIM_SOCK_NAME]; /* its records are in jfc_rings[slot] */
};

struct sim_registry {
	uint32_t magic, version;
	_Atomic uint32_t state;
	uint32_t pad;
	pthread_mutex_t lock;
	uint32_t next_id, next_token_id;
	struct sim_seg_slot segs[SIM_MAX_SEG];
	struct sim_jetty_slot jettys[SIM_MAX_JETTY];
	struct sim_jfr_slot jfrs[SIM_MAX_JFR];
	struct sim_jfc_slot jfcs[SIM_MAX_JFC];
	struct sim_recv jfr_rings[SIM_MAX_JFR][SIM_JFR_RING];
	urma_cr_t jfc_rings[SIM_MAX_JFC][SIM_JFC_RING];
};

/* ---- process-local objects: the public struct first, so a public pointer is the object ---- */
enum sim_kind { K_NONE, K_CTX, K_JFCE, K_JFC, K_JFS, K_JFR, K_JETTY, K_TJETTY, K_TSEG, K_KINDS };

struct sim_ctx { urma_context_t pub; int children; };
struct sim_jfce { urma_jfce_t pub; struct sim_ctx *ctx; int jfcs; char name[SIM_SOCK_NAME]; };
struct sim_jfc { urma_jfc_t pub; struct sim_ctx *ctx; struct sim_jfce *jfce; int slot; uint32_t gen; int users; };
struct sim_jfr { urma_jfr_t pub; struct sim_ctx *ctx; struct sim_jfc *jfc; int slot; uint32_t gen; int users; };

/* What a JFS and a jetty share: the send side. */
struct sim_sendq {
	struct sim_ctx *ctx; struct sim_jfc *jfc; uint32_t trans_mode, max_sge, max_inline, id;
	urma_jetty_id_t self; struct sim_tjetty *bound;
};
struct sim_jfs { urma_jfs_t pub; struct sim_sendq sq; };
struct sim_jetty {
	urma_jetty_t pub; struct sim_sendq sq; struct sim_jfr *jfr; struct sim_jfc *rjfc; int slot; uint32_t gen;
	urma_jetty_state_t state; /* READY; ERROR after an injected jetty error (sim_events.c) */
};
struct sim_tjetty {
	urma_target_jetty_t pub; struct sim_ctx *ctx; int slot; uint32_t gen, token, trans_mode;
	struct sim_owner owner; int incomplete; int bound_by;
};
struct sim_tseg {
	urma_target_seg_t pub; struct sim_ctx *ctx; int slot; uint32_t gen, token, access;
	int local; struct sim_owner owner;
};

/* sim_base.c: handles, errors, registry, owners */
extern struct sim_registry *sim_reg;
extern urma_device_t sim_device;
extern urma_eid_t sim_eid;
int sim_set_error(int status, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void *sim_set_error_null(int status, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int sim_handle_add(void *p, enum sim_kind k);
void sim_handle_del(void *p);
int sim_handle_is(const void *p, enum sim_kind k);
int sim_initialized(void);
void sim_lock(void);
void sim_unlock(void);
struct sim_owner sim_self(void);
int sim_owner_alive(const struct sim_owner *o);
int sim_owner_is_self(const struct sim_owner *o);
void sim_gc_locked(void);
uint32_t sim_next_id_locked(void);
int sim_live_count(enum sim_kind k);

/* sim_registry.c: finds or creates this user's registry, maps it into sim_reg: 0 or a status. */
int sim_registry_open(void);

/* sim_seg.c: imports per peer process (segment-before-jetty rule) */
void sim_note_import(int32_t pid, int delta);
int sim_imported_from(int32_t pid);

/* sim_events.c: the context's async_fd and its events */
int sim_async_fd_open(void);
void sim_async_ctx_gone(urma_context_t *ctx);

/* sim_blob.c: the user info of descriptions (0, or -1 with the error set) */
int sim_check_seg_info(const urma_seg_t *seg);
int sim_check_rjetty_info(const urma_rjetty_t *r);

/* sim_data.c: moving bytes */
struct sim_iov { uint64_t addr; uint64_t len; };
/* Copies src (in process src_pid) to dst (in dst_pid); returns 0 or the CR status of the fault. */
int sim_copy(pid_t src_pid, const struct sim_iov *src, int ns, pid_t dst_pid, const struct sim_iov *dst,
	     int nd, int src_is_local);
/* Reads len bytes at user address addr of this process into out; 0 or -1 (unmapped). */
int sim_safe_read(void *out, uint64_t addr, size_t len);
/* Appends cr to JFC slot (lock held); rings its JFCE if armed. 0, or -1 when full. */
int sim_push_cr_locked(int slot, const urma_cr_t *cr, int solicited);
void sim_ring_doorbell(const char *name, uint32_t jfc_id);

#endif
