/*
 * verbus_helper.h — the one small C helper verbus loads next to libibverbs / librdmacm / liburma.
 *
 * It holds only what TypeScript cannot do through FFI:
 *   - the verbs calls that are `static inline` in <infiniband/verbs.h> (post_send, post_recv,
 *     poll_cq, req_notify_cq, query_port), batched over flat caller-owned arrays;
 *   - blocking waits meant for a nonblocking FFI call (Deno) or a Worker (Bun): futex on a 32-bit
 *     word in shared memory, poll() on a file descriptor, and get_cq_event + ack;
 *   - loops JavaScript runs too slowly: the block copy of brpc's UBRing ring (60 bytes a block);
 *   - the sizeof/offsetof table TypeScript checks its struct offsets against at load time.
 *
 * The helper is NOT linked against libibverbs: a host without RDMA still loads it (futex and fd
 * waits serve the shared-memory fabric). The few exported verbs functions it needs are bound at run
 * time by vb_verbs_bind(path), with the same path TypeScript loaded libibverbs from.
 *
 * Flat formats (little-endian, x86_64; offsets are in the layout table under "vb_*"):
 *
 *   struct vb_sge        16 B  identical to struct ibv_sge (checked at compile time)
 *   +0 addr u64 | +8 length u32 | +12 lkey u32
 *
 *   struct vb_send_desc  48 B  one send work request
 *   +0 wr_id u64 | +8 remote_addr u64 | +16 rkey u32 | +20 imm u32 (host order) |
 *   +24 opcode u32 (IBV_WR_*) | +28 send_flags u32 (IBV_SEND_*) | +32 sge_index u32 |
 *   +36 num_sge u32 | +40 reserved u64
 *
 *   struct vb_recv_desc  16 B  one receive work request
 *   +0 wr_id u64 | +8 sge_index u32 | +12 num_sge u32
 *
 *   struct vb_wc         40 B  one completion
 *   +0 wr_id u64 | +8 status u32 | +12 opcode u32 | +16 byte_len u32 | +20 imm u32 (host order) |
 *   +24 qp_num u32 | +28 wc_flags u32 | +32 vendor_err u32 | +36 src_qp u32
 */
#ifndef VERBUS_HELPER_H
#define VERBUS_HELPER_H

#include <stdint.h>

#define VB_HELPER_VERSION "verbus-helper 1"
/* Most work requests one vb_post_send / vb_post_recv call may carry (one doorbell). */
#define VB_MAX_BATCH 256
/* Most completions one vb_poll_cq call may return. */
#define VB_MAX_POLL 256

struct vb_sge {
	uint64_t addr;
	uint32_t length;
	uint32_t lkey;
};

struct vb_send_desc {
	uint64_t wr_id;
	uint64_t remote_addr;
	uint32_t rkey;
	uint32_t imm;
	uint32_t opcode;
	uint32_t send_flags;
	uint32_t sge_index;
	uint32_t num_sge;
	uint64_t reserved;
};

struct vb_recv_desc {
	uint64_t wr_id;
	uint32_t sge_index;
	uint32_t num_sge;
};

struct vb_wc {
	uint64_t wr_id;
	uint32_t status;
	uint32_t opcode;
	uint32_t byte_len;
	uint32_t imm;
	uint32_t qp_num;
	uint32_t wc_flags;
	uint32_t vendor_err;
	uint32_t src_qp;
};

/* brpc UBRing (ubring_blocks.c): one 64-byte block of its ring (brpc's UbrMsgFormat). */
#define VB_UBRING_PAYLOAD 60
#define VB_UBRING_NONE 0  /* free */
#define VB_UBRING_EXIST 1 /* more of this write follows */
#define VB_UBRING_EOF 2   /* the last block of a write */
struct vb_ubring_block {
	uint8_t payload[VB_UBRING_PAYLOAD];
	uint8_t flag;
	uint8_t len; /* payload bytes: 60 in EXIST blocks, 1..60 in the EOF block */
	uint8_t cur; /* read progress (0) */
	uint8_t reserved;
};
/* What vb_ubring_gather did, and the block that broke the protocol (result BAD_*). */
struct vb_ubring_gather {
	uint32_t blocks;    /* blocks consumed (their flags cleared) */
	uint32_t bytes;     /* bytes copied to out */
	uint32_t pos;       /* the block after the last consumed */
	uint32_t bad_block; /* index of the offending block */
	uint8_t flag;       /* its flag, length and read position as read */
	uint8_t len;
	uint8_t cur;
	uint8_t reserved;
};
#define VB_UBRING_OK 0
#define VB_UBRING_BAD_FLAG 1   /* a flag other than NONE/EXIST/EOF */
#define VB_UBRING_BAD_LENGTH 2 /* a length of 0 or past 60, or a read position not below it */

struct ibv_qp;
struct ibv_cq;
struct ibv_context;
struct ibv_port_attr;
struct ibv_comp_channel;

/* Identity and layout. */
const char *vb_version(void);
const char *vb_layout_table(void);

/* Run-time binding of the exported verbs calls the helper needs. 0 or -1 (see vb_bind_error). */
int vb_verbs_bind(const char *libibverbs_path);
const char *vb_bind_error(void);

/* Batched data path. post: 0 or errno (positive), *bad_index = failing index (n when none). */
int vb_post_send(struct ibv_qp *qp, const struct vb_send_desc *descs, struct vb_sge *sges,
		 uint32_t n, uint32_t *bad_index);
int vb_post_recv(struct ibv_qp *qp, const struct vb_recv_desc *descs, struct vb_sge *sges,
		 uint32_t n, uint32_t *bad_index);
/* Returns completions written to out (0..max), or a negative value on error. */
int vb_poll_cq(struct ibv_cq *cq, int max, struct vb_wc *out);
int vb_req_notify_cq(struct ibv_cq *cq, int solicited_only);
int vb_query_port(struct ibv_context *ctx, uint8_t port, struct ibv_port_attr *attr);

/* Blocking waits (call from a nonblocking FFI call or a worker). */
/* 1 = event (cq written to *cq_out, already acked), 0 = timeout, -errno on error. */
int vb_get_cq_event(struct ibv_comp_channel *channel, int timeout_ms, struct ibv_cq **cq_out);
/* Like vb_get_cq_event, and returns 2 when wake_fd (an eventfd) was signalled (its count is
 * consumed): a process's one completion-channel wait that local work can end early. */
int vb_get_cq_event_or_wake(struct ibv_comp_channel *channel, int wake_fd, int timeout_ms,
			    struct ibv_cq **cq_out);
/* A nonblocking eventfd (fd, or -errno), and signalling it (0 or -errno). */
int vb_eventfd(void);
int vb_eventfd_signal(int fd);
/* 1 = fd readable, 0 = timeout, -errno on error. */
int vb_wait_fd(int fd, int timeout_ms);
/* Like vb_wait_fd, and 2 when wake_fd (an eventfd) was signalled first (its count is consumed):
 * a long wait on an event fd that local work (the last user leaving) can end early. */
int vb_wait_fd_or_wake(int fd, int wake_fd, int timeout_ms);
/* 0 = woken, 1 = *addr != expected, 2 = timed out, -errno on error. Shared (non-private) futex. */
int vb_futex_wait(uint32_t *addr, uint32_t expected, int timeout_ms);
/* Number of waiters woken, or -errno. */
int vb_futex_wake(uint32_t *addr, int count);
/* vb_futex_wait on the caller's own thread with a timeout in µs (a short nap); same results. */
int vb_futex_wait_us(uint32_t *addr, uint32_t expected, int timeout_us);

/* brpc UBRing block copy (ring: the DataQ, ring_bytes / 64 blocks; the caller does flow control).
 * scatter: len (> 0) bytes of src into ceil(len / 60) blocks from `first` (free, fewer than the
 * ring has), the last EOF, the first's flag stored last; blocks written, or -EINVAL / -ENOSPC.
 * gather: consumes blocks from pos while their flag is set and their bytes fit in out[0, max);
 * VB_UBRING_OK, VB_UBRING_BAD_* (st names the block; those before it are consumed), or -EINVAL. */
int32_t vb_ubring_scatter(uint8_t *ring, uint64_t ring_bytes, uint32_t first, const uint8_t *src,
			  uint32_t len);
int32_t vb_ubring_gather(uint8_t *ring, uint64_t ring_bytes, uint32_t pos, uint8_t *out,
			 uint32_t max, struct vb_ubring_gather *st);
/* The calling thread's timer slack := ns (0: its default); the slack before (ns), or -errno. */
int64_t vb_timer_slack(uint64_t ns);

/* Benchmarks: the cost of an FFI call, and of building a 16-WR chain without posting it. */
int vb_noop(void);
int64_t vb_bench_sink_post_send(const struct vb_send_desc *descs, struct vb_sge *sges, uint32_t n);

#endif
