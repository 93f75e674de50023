/**
 * The verbus C helper (c-helpers/, built by `make` into build/libverbus_helper.so). It is not
 * linked against libibverbs; `vb_verbs_bind` gives it the libibverbs verbus loaded.
 * Flat formats are drawn in c-helpers/verbus_helper.h and ffi/layouts/helper.ts.
 * @module
 */
import { dirname, join } from "node:path";
import { buildDirs, type LibrarySpec } from "../loader.ts";

/** The helper's symbols. */
export const HELPER_SYMBOLS = {
  /** const char *vb_version(void); */
  vb_version: { args: [], result: "pointer" },
  /** const char *vb_layout_table(void); */
  vb_layout_table: { args: [], result: "pointer" },
  /** int vb_verbs_bind(const char *libibverbs_path);  0 or -1 */
  vb_verbs_bind: { args: ["buffer"], result: "i32" },
  /** const char *vb_bind_error(void); */
  vb_bind_error: { args: [], result: "pointer" },
  /** int vb_post_send(struct ibv_qp *qp, const struct vb_send_desc *descs, struct vb_sge *sges, uint32_t n, uint32_t *bad_index);  0 or errno */
  vb_post_send: { args: ["pointer", "buffer", "buffer", "u32", "buffer"], result: "i32" },
  /** int vb_post_recv(struct ibv_qp *qp, const struct vb_recv_desc *descs, struct vb_sge *sges, uint32_t n, uint32_t *bad_index);  0 or errno */
  vb_post_recv: { args: ["pointer", "buffer", "buffer", "u32", "buffer"], result: "i32" },
  /** int vb_poll_cq(struct ibv_cq *cq, int max, struct vb_wc *out);  count, or < 0 */
  vb_poll_cq: { args: ["pointer", "i32", "buffer"], result: "i32" },
  /** int vb_req_notify_cq(struct ibv_cq *cq, int solicited_only);  0 or errno */
  vb_req_notify_cq: { args: ["pointer", "i32"], result: "i32" },
  /** int vb_query_port(struct ibv_context *ctx, uint8_t port, struct ibv_port_attr *attr);  0 or errno */
  vb_query_port: { args: ["pointer", "u8", "buffer"], result: "i32" },
  /** int vb_get_cq_event(struct ibv_comp_channel *ch, int timeout_ms, struct ibv_cq **cq_out);  1 event, 0 timeout, -errno */
  vb_get_cq_event: { args: ["pointer", "i32", "buffer"], result: "i32", nonblocking: true },
  /** int vb_get_cq_event_or_wake(struct ibv_comp_channel *ch, int wake_fd, int timeout_ms, struct ibv_cq **cq_out);  1 event, 2 woken, 0 timeout, -errno */
  vb_get_cq_event_or_wake: {
    args: ["pointer", "i32", "i32", "buffer"],
    result: "i32",
    nonblocking: true,
  },
  /** int vb_eventfd(void);  fd, or -errno */
  vb_eventfd: { args: [], result: "i32" },
  /** int vb_eventfd_signal(int fd);  0 or -errno */
  vb_eventfd_signal: { args: ["i32"], result: "i32" },
  /** int vb_wait_fd(int fd, int timeout_ms);  1 readable, 0 timeout, -errno */
  vb_wait_fd: { args: ["i32", "i32"], result: "i32", nonblocking: true },
  /** int vb_wait_fd_or_wake(int fd, int wake_fd, int timeout_ms);  1 readable, 2 woken, 0 timeout, -errno */
  vb_wait_fd_or_wake: { args: ["i32", "i32", "i32"], result: "i32", nonblocking: true },
  /** int vb_futex_wait(uint32_t *addr, uint32_t expected, int timeout_ms);  0 woken, 1 changed, 2 timeout, -errno */
  vb_futex_wait: { args: ["pointer", "u32", "i32"], result: "i32", nonblocking: true },
  /** int vb_futex_wait_us(uint32_t *addr, uint32_t expected, int timeout_us);  blocks the calling thread: 0 woken, 1 changed, 2 timeout, -errno */
  vb_futex_wait_us: { args: ["pointer", "u32", "i32"], result: "i32" },
  /** int vb_futex_wake(uint32_t *addr, int count);  woken, or -errno */
  vb_futex_wake: { args: ["pointer", "i32"], result: "i32" },
  /** int32_t vb_ubring_scatter(uint8_t *ring, uint64_t ring_bytes, uint32_t first, const uint8_t *src, uint32_t len);  blocks written, or -errno */
  vb_ubring_scatter: { args: ["buffer", "u64", "u32", "buffer", "u32"], result: "i32" },
  /** int32_t vb_ubring_gather(uint8_t *ring, uint64_t ring_bytes, uint32_t pos, uint8_t *out, uint32_t max, struct vb_ubring_gather *st);  VB_UBRING_OK, VB_UBRING_BAD_*, or -errno */
  vb_ubring_gather: { args: ["buffer", "u64", "u32", "buffer", "u32", "buffer"], result: "i32" },
  /** int64_t vb_timer_slack(uint64_t ns);  the calling thread's slack before (ns), or -errno */
  vb_timer_slack: { args: ["u64"], result: "i64" },
  /** int vb_noop(void); */
  vb_noop: { args: [], result: "i32" },
  /** int64_t vb_bench_sink_post_send(const struct vb_send_desc *descs, struct vb_sge *sges, uint32_t n); */
  vb_bench_sink_post_send: { args: ["buffer", "buffer", "u32"], result: "i64" },
} as const;

/** Where to find the helper. */
export const HELPER_SPEC: LibrarySpec<typeof HELPER_SYMBOLS> = {
  name: "helper",
  envVar: "VERBUS_HELPER",
  bundled: "libverbus_helper.so",
  sonames: ["libverbus_helper.so"],
  table: HELPER_SYMBOLS,
  hint: () => {
    if (import.meta.url.includes("/$bunfs/")) {
      return "this verbus binary carries the helper for linux-x64 and writes it to the per-user " +
        "cache ($XDG_CACHE_HOME/verbus or ~/.cache/verbus); on another platform set VERBUS_HELPER " +
        "to a helper built there ('make helper' in the verbus repository)";
    }
    const dirs = buildDirs();
    const root = dirs[0] ? dirname(dirs[0]) : "<verbus>";
    return `the helper ships prebuilt for linux-x64 in ${join(root, "build")}; elsewhere build ` +
      `it with 'make -C ${join(root, "c-helpers")} OUT=${join(root, "build")}' (needs a C ` +
      "compiler and the libibverbs-dev and librdmacm-dev headers) or set VERBUS_HELPER to its path";
  },
};

/** Most work requests per vb_post_send / vb_post_recv call (VB_MAX_BATCH). */
export const VB_MAX_BATCH = 256;
/** Most completions per vb_poll_cq call (VB_MAX_POLL). */
export const VB_MAX_POLL = 256;
/** vb_ubring_gather results: done, a block's flag is not NONE/EXIST/EOF, its length or position lies. */
export const VB_UBRING_OK = 0;
export const VB_UBRING_BAD_FLAG = 1;
export const VB_UBRING_BAD_LENGTH = 2;
