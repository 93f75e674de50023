/**
 * liburma (openEuler UMDK, `liburma.so.0`). Unlike verbs, the data-path calls are real exported
 * functions, so they are bound here directly. `urma_status_t` is an int: 0 = OK, otherwise an
 * errno value (URMA_EINVAL = EINVAL...) or URMA_FAIL = 0x1000 (urma_opcode.h). Prototypes were
 * checked against UMDK's urma_api.h (openeuler-mirror/umdk, src/urma/lib/urma/core/include).
 * Flag unions passed by value (`urma_jfs_wr_flag_t`, `urma_import_seg_flag_t`) are one u32.
 * Layouts are in ffi/layouts/urma.ts and urma_abi.ts (the named ABIs). The simulated liburma
 * (c-helpers/urma_sim) exports the same symbols plus `urma_sim_*`; it is used only when chosen
 * explicitly (VERBUS_LIBURMA or an explicit path), never found implicitly.
 * @module
 */
import { existsSync } from "node:fs";
import { join } from "node:path";
import { embeddedLibraryPath } from "../embedded.ts";
import { buildDirs, type LibrarySpec } from "../loader.ts";

/** The liburma symbols verbus binds. */
export const LIBURMA_SYMBOLS = {
  /** urma_status_t urma_init(urma_init_attr_t *conf); */
  urma_init: { args: ["buffer"], result: "i32" },
  /** urma_status_t urma_uninit(void); */
  urma_uninit: { args: [], result: "i32" },
  /** urma_device_t **urma_get_device_list(int *num_devices); */
  urma_get_device_list: { args: ["buffer"], result: "pointer" },
  /** void urma_free_device_list(urma_device_t **device_list); */
  urma_free_device_list: { args: ["pointer"], result: "void" },
  /** urma_device_t *urma_get_device_by_name(char *dev_name); */
  urma_get_device_by_name: { args: ["buffer"], result: "pointer" },
  /** urma_eid_info_t *urma_get_eid_list(urma_device_t *dev, uint32_t *cnt); */
  urma_get_eid_list: { args: ["pointer", "buffer"], result: "pointer" },
  /** void urma_free_eid_list(urma_eid_info_t *eid_list); */
  urma_free_eid_list: { args: ["pointer"], result: "void", optional: true },
  /** urma_status_t urma_query_device(urma_device_t *dev, urma_device_attr_t *dev_attr); */
  urma_query_device: { args: ["pointer", "buffer"], result: "i32" },
  /** urma_context_t *urma_create_context(urma_device_t *dev, uint32_t eid_index); */
  urma_create_context: { args: ["pointer", "u32"], result: "pointer" },
  /** urma_status_t urma_delete_context(urma_context_t *ctx); */
  urma_delete_context: { args: ["pointer"], result: "i32" },
  /** urma_jfce_t *urma_create_jfce(urma_context_t *ctx); */
  urma_create_jfce: { args: ["pointer"], result: "pointer" },
  /** urma_status_t urma_delete_jfce(urma_jfce_t *jfce); */
  urma_delete_jfce: { args: ["pointer"], result: "i32" },
  /** urma_jfc_t *urma_create_jfc(urma_context_t *ctx, urma_jfc_cfg_t *jfc_cfg); */
  urma_create_jfc: { args: ["pointer", "buffer"], result: "pointer" },
  /** urma_status_t urma_delete_jfc(urma_jfc_t *jfc); */
  urma_delete_jfc: { args: ["pointer"], result: "i32" },
  /** int urma_poll_jfc(urma_jfc_t *jfc, int cr_cnt, urma_cr_t *cr); */
  urma_poll_jfc: { args: ["pointer", "i32", "buffer"], result: "i32" },
  /** urma_status_t urma_rearm_jfc(urma_jfc_t *jfc, bool solicited_only); */
  urma_rearm_jfc: { args: ["pointer", "bool"], result: "i32" },
  /** int urma_wait_jfc(urma_jfce_t *jfce, uint32_t jfc_cnt, int time_out, urma_jfc_t *jfc[]); */
  urma_wait_jfc: { args: ["pointer", "u32", "i32", "buffer"], result: "i32", nonblocking: true },
  /** void urma_ack_jfc(urma_jfc_t *jfc[], uint32_t nevents[], uint32_t jfc_cnt); */
  urma_ack_jfc: { args: ["buffer", "buffer", "u32"], result: "void" },
  /** urma_jfs_t *urma_create_jfs(urma_context_t *ctx, urma_jfs_cfg_t *jfs_cfg); */
  urma_create_jfs: { args: ["pointer", "buffer"], result: "pointer" },
  /** urma_status_t urma_delete_jfs(urma_jfs_t *jfs); */
  urma_delete_jfs: { args: ["pointer"], result: "i32" },
  /** urma_jfr_t *urma_create_jfr(urma_context_t *ctx, urma_jfr_cfg_t *jfr_cfg); */
  urma_create_jfr: { args: ["pointer", "buffer"], result: "pointer" },
  /** urma_status_t urma_delete_jfr(urma_jfr_t *jfr); */
  urma_delete_jfr: { args: ["pointer"], result: "i32" },
  /** urma_jetty_t *urma_create_jetty(urma_context_t *ctx, urma_jetty_cfg_t *jetty_cfg); */
  urma_create_jetty: { args: ["pointer", "buffer"], result: "pointer" },
  /** urma_status_t urma_delete_jetty(urma_jetty_t *jetty); */
  urma_delete_jetty: { args: ["pointer"], result: "i32" },
  /** urma_target_jetty_t *urma_import_jetty(urma_context_t *ctx, urma_rjetty_t *rjetty, urma_token_t *token_value); */
  urma_import_jetty: { args: ["pointer", "buffer", "buffer"], result: "pointer" },
  /** urma_status_t urma_unimport_jetty(urma_target_jetty_t *tjetty); */
  urma_unimport_jetty: { args: ["pointer"], result: "i32" },
  /** urma_status_t urma_bind_jetty(urma_jetty_t *jetty, urma_target_jetty_t *tjetty);  (RC) */
  urma_bind_jetty: { args: ["pointer", "pointer"], result: "i32" },
  /** urma_status_t urma_unbind_jetty(urma_jetty_t *jetty); */
  urma_unbind_jetty: { args: ["pointer"], result: "i32" },
  /** urma_target_seg_t *urma_register_seg(urma_context_t *ctx, urma_seg_cfg_t *seg_cfg); */
  urma_register_seg: { args: ["pointer", "buffer"], result: "pointer" },
  /** urma_status_t urma_unregister_seg(urma_target_seg_t *target_seg); */
  urma_unregister_seg: { args: ["pointer"], result: "i32" },
  /** urma_target_seg_t *urma_import_seg(urma_context_t *ctx, urma_seg_t *seg, urma_token_t *token_value, uint64_t addr, urma_import_seg_flag_t flag); */
  urma_import_seg: { args: ["pointer", "buffer", "buffer", "u64", "u32"], result: "pointer" },
  /** urma_status_t urma_unimport_seg(urma_target_seg_t *tseg); */
  urma_unimport_seg: { args: ["pointer"], result: "i32" },
  /** urma_status_t urma_post_jfs_wr(urma_jfs_t *jfs, urma_jfs_wr_t *wr, urma_jfs_wr_t **bad_wr); */
  urma_post_jfs_wr: { args: ["pointer", "buffer", "buffer"], result: "i32" },
  /** urma_status_t urma_post_jfr_wr(urma_jfr_t *jfr, urma_jfr_wr_t *wr, urma_jfr_wr_t **bad_wr); */
  urma_post_jfr_wr: { args: ["pointer", "buffer", "buffer"], result: "i32" },
  /** urma_status_t urma_post_jetty_send_wr(urma_jetty_t *jetty, urma_jfs_wr_t *wr, urma_jfs_wr_t **bad_wr); */
  urma_post_jetty_send_wr: { args: ["pointer", "buffer", "buffer"], result: "i32" },
  /** urma_status_t urma_post_jetty_recv_wr(urma_jetty_t *jetty, urma_jfr_wr_t *wr, urma_jfr_wr_t **bad_wr); */
  urma_post_jetty_recv_wr: { args: ["pointer", "buffer", "buffer"], result: "i32" },
  /** urma_status_t urma_write(urma_jfs_t *jfs, urma_target_jetty_t *target_jfr, urma_target_seg_t *dst_tseg, urma_target_seg_t *src_tseg, uint64_t dst, uint64_t src, uint32_t len, urma_jfs_wr_flag_t flag, uint64_t user_ctx); */
  urma_write: {
    args: ["pointer", "pointer", "pointer", "pointer", "u64", "u64", "u32", "u32", "u64"],
    result: "i32",
  },
  /** urma_status_t urma_read(urma_jfs_t *jfs, urma_target_jetty_t *target_jfr, urma_target_seg_t *dst_tseg, urma_target_seg_t *src_tseg, uint64_t dst, uint64_t src, uint32_t len, urma_jfs_wr_flag_t flag, uint64_t user_ctx); */
  urma_read: {
    args: ["pointer", "pointer", "pointer", "pointer", "u64", "u64", "u32", "u32", "u64"],
    result: "i32",
  },
  /** urma_status_t urma_send(urma_jfs_t *jfs, urma_target_jetty_t *target_jfr, urma_target_seg_t *src_tseg, uint64_t src, uint32_t len, urma_jfs_wr_flag_t flag, uint64_t user_ctx); */
  urma_send: { args: ["pointer", "pointer", "pointer", "u64", "u32", "u32", "u64"], result: "i32" },
  /** urma_status_t urma_recv(urma_jfr_t *jfr, urma_target_seg_t *recv_tseg, uint64_t buf, uint32_t len, uint64_t user_ctx); */
  urma_recv: { args: ["pointer", "pointer", "u64", "u32", "u64"], result: "i32" },

  // ---- errors and events (every 25.12+ build has them; optional so a library without them
  // still loads, with no async-event reader) ----
  /** urma_status_t urma_get_async_event(urma_context_t *ctx, urma_async_event_t *event); */
  urma_get_async_event: { args: ["pointer", "buffer"], result: "i32", optional: true },
  /** void urma_ack_async_event(urma_async_event_t *event); */
  urma_ack_async_event: { args: ["buffer"], result: "void", optional: true },
  /** int urma_flush_jetty(urma_jetty_t *jetty, int cr_cnt, urma_cr_t *cr);  WR_FLUSH_ERR records, or -1 */
  urma_flush_jetty: { args: ["pointer", "i32", "buffer"], result: "i32", optional: true },
  /** int urma_flush_jfs(urma_jfs_t *jfs, int cr_cnt, urma_cr_t *cr); */
  urma_flush_jfs: { args: ["pointer", "i32", "buffer"], result: "i32", optional: true },
  /** urma_status_t urma_modify_jetty(urma_jetty_t *jetty, urma_jetty_attr_t *attr); */
  urma_modify_jetty: { args: ["pointer", "buffer"], result: "i32", optional: true },
  /** urma_status_t urma_modify_jfs(urma_jfs_t *jfs, urma_jfs_attr_t *attr); */
  urma_modify_jfs: { args: ["pointer", "buffer"], result: "i32", optional: true },
  /** urma_status_t urma_modify_jfr(urma_jfr_t *jfr, urma_jfr_attr_t *attr); */
  urma_modify_jfr: { args: ["pointer", "buffer"], result: "i32", optional: true },
  /** urma_status_t urma_query_jetty(urma_jetty_t *jetty, urma_jetty_cfg_t *cfg, urma_jetty_attr_t *attr); */
  urma_query_jetty: { args: ["pointer", "buffer", "buffer"], result: "i32", optional: true },

  // ---- present in some builds only: bound for their presence (transport/urma/abi.ts dates the
  // build by them) and, where verbus calls them, used only when present ----
  /** urma_target_jetty_t *urma_import_jetty_ex(urma_context_t *ctx, urma_rjetty_t *rjetty, urma_token_t *token_value, urma_import_jetty_ex_cfg_t *cfg);  (from 25.12; presence only) */
  urma_import_jetty_ex: {
    args: ["pointer", "buffer", "buffer", "buffer"],
    result: "pointer",
    optional: true,
  },
  /** urma_status_t urma_get_eid_by_ip(const urma_context_t *ctx, const urma_net_addr_t *net_addr, urma_eid_t *eid);  (from 2026-02; presence only) */
  urma_get_eid_by_ip: { args: ["pointer", "buffer", "buffer"], result: "i32", optional: true },
  /** urma_status_t urma_register_loc_log_func(urma_loc_log_cb func);  (from 2026-05; presence only) */
  urma_register_loc_log_func: { args: ["pointer"], result: "i32", optional: true },
  /** urma_status_t urma_get_seg_ctx(urma_target_seg_t *tseg, urma_seg_t **seg, uint32_t *size);  (from 2026-06) */
  urma_get_seg_ctx: { args: ["pointer", "buffer", "buffer"], result: "i32", optional: true },
  /** void urma_put_seg_ctx(urma_seg_t *seg); */
  urma_put_seg_ctx: { args: ["pointer"], result: "void", optional: true },
  /** urma_status_t urma_get_rjetty(urma_jetty_t *jetty, urma_rjetty_t **rjetty, uint32_t *length);  (from 2026-06) */
  urma_get_rjetty: { args: ["pointer", "buffer", "buffer"], result: "i32", optional: true },
  /** void urma_put_rjetty(urma_rjetty_t *rjetty); */
  urma_put_rjetty: { args: ["pointer"], result: "void", optional: true },

  // ---- simulator only (absent from the real liburma: their presence identifies the simulator) ----
  /** const char *urma_sim_abi_version(void);  "<named ABI>-sim", e.g. "25.12-B081-sim" */
  urma_sim_abi_version: { args: [], result: "pointer", optional: true },
  /** const char *urma_sim_last_error(void);  the calling thread's last failure, in words */
  urma_sim_last_error: { args: [], result: "pointer", optional: true },
  /** int urma_sim_live_objects(char *buf, int len);  "contexts=N jfce=N ...", returns the total */
  urma_sim_live_objects: { args: ["buffer", "i32"], result: "i32", optional: true },
  /** const char *urma_sim_registry_name(void);  this user's 0700 rendezvous dir */
  urma_sim_registry_name: { args: [], result: "pointer", optional: true },
  /** int urma_sim_inject_async_event(urma_context_t *ctx, void *element, uint32_t event_type);  SIMULATOR-ONLY fault injection */
  urma_sim_inject_async_event: {
    args: ["pointer", "pointer", "u32"],
    result: "i32",
    optional: true,
  },
} as const;

/**
 * The simulated liburma of this build (c-helpers/urma_sim, used only when named: `--urma=sim`):
 * `build/urma_sim/liburma.so.0` in a build directory, else the copy a compiled `verbus` carries
 * (written to the per-user cache, ffi/embedded.ts), else the path where a build would put it.
 * Throws what the cache throws when the binary's copy cannot be written.
 */
export function simulatorPath(): string {
  for (const d of buildDirs()) {
    const p = join(d, "urma_sim", "liburma.so.0");
    if (existsSync(p)) return p;
  }
  return embeddedLibraryPath("liburma.so.0") ??
    join(buildDirs()[0] ?? "build", "urma_sim", "liburma.so.0");
}

/** Where to find liburma. Nothing is bundled: the simulator is used only when named explicitly. */
export const LIBURMA_SPEC: LibrarySpec<typeof LIBURMA_SYMBOLS> = {
  name: "liburma",
  envVar: "VERBUS_LIBURMA",
  sonames: ["liburma.so.0", "/usr/lib64/liburma.so.0"],
  table: LIBURMA_SYMBOLS,
};

/** urma_status_t values (urma_opcode.h: errno values on Linux, URMA_FAIL = 0x1000). */
export const URMA_STATUS: Readonly<Record<number, string>> = {
  0: "URMA_SUCCESS",
  1: "URMA_ENOPERM",
  11: "URMA_EAGAIN",
  12: "URMA_ENOMEM",
  17: "URMA_EEXIST",
  22: "URMA_EINVAL",
  110: "URMA_ETIMEOUT",
  115: "URMA_EINPROGRESS",
  0x1000: "URMA_FAIL",
};

/** urma_status_t constants. */
export const URMA_SUCCESS = 0,
  URMA_EAGAIN = 11,
  URMA_EEXIST = 17,
  URMA_EINVAL = 22,
  URMA_FAIL = 0x1000;

/** urma_opcode_t. */
export const URMA_OPC = {
  WRITE: 0x00,
  WRITE_IMM: 0x01,
  WRITE_NOTIFY: 0x02,
  READ: 0x10,
  CAS: 0x20,
  SWAP: 0x21,
  FADD: 0x22,
  FSUB: 0x23,
  FAND: 0x24,
  FOR: 0x25,
  FXOR: 0x26,
  SEND: 0x40,
  SEND_IMM: 0x41,
  SEND_INVALIDATE: 0x42,
  NOP: 0x51,
} as const;

/** urma_cr_opcode_t (receive completions). */
export const URMA_CR_OPC = {
  SEND: 0,
  SEND_WITH_IMM: 1,
  SEND_WITH_INV: 2,
  WRITE_WITH_IMM: 3,
} as const;

/** urma_transport_mode_t. */
export const URMA_TM = { RM: 1, RC: 2, UM: 4 } as const;

/** Segment access flags (urma_reg_seg_flag_t.access). */
export const URMA_ACCESS = { LOCAL_ONLY: 1, READ: 2, WRITE: 4, ATOMIC: 8 } as const;

/** Token policies (urma_reg_seg_flag_t.token_policy). */
export const URMA_TOKEN_POLICY = { NONE: 0, PLAIN_TEXT: 1, SIGNED: 2, ALL_ENCRYPTED: 3 } as const;

/** urma_cr_status_t, by value. */
export const URMA_CR_STATUS = [
  "SUCCESS",
  "UNSUPPORTED_OPCODE_ERR",
  "LOC_LEN_ERR",
  "LOC_OPERATION_ERR",
  "LOC_ACCESS_ERR",
  "REM_RESP_LEN_ERR",
  "REM_UNSUPPORTED_REQ_ERR",
  "REM_OPERATION_ERR",
  "REM_ACCESS_ABORT_ERR",
  "ACK_TIMEOUT_ERR",
  "RNR_RETRY_CNT_EXC_ERR",
  "WR_FLUSH_ERR",
  "WR_SUSPEND_DONE",
  "WR_FLUSH_ERR_DONE",
  "WR_UNHANDLED",
  "LOC_DATA_POISON",
  "REM_DATA_POISON",
] as const;
