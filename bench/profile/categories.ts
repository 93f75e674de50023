/**
 * The mapping table of the profile: which source file and function is which per-call cost.
 *
 * UPDATE THIS TABLE WHEN FILES MOVE OR FUNCTIONS ARE RENAMED. It is the only place `run.ts` knows
 * verbus's internals; everything else in `bench/profile/` uses the public API. A frame that no
 * rule matches and that is verbus code lands in `other`, and the top-15 list of the report shows
 * it with its file, so a stale table is visible at once (`other` grows).
 *
 * How a sample is attributed (its SELF time, i.e. the function on top of the stack):
 *   1. the frames are tried from the top of the stack down; the first frame that a rule matches
 *      decides (rules are tried in order; the first matching rule wins);
 *   2. a frame no rule matches is skipped ("transparent") when it is runtime or library code —
 *      native functions (empty url), `ext:` / `node:` / `bun:` modules, `node_modules/` — so a
 *      `Uint8Array.set` or `op_now` counts for the verbus function that called it;
 *   3. a verbus frame no rule matches gives `other`; a stack with no verbus frame gives `runtime`.
 * `unsampled` is not a rule's: `analyze.ts` puts there the part of a gap between two samples
 * beyond a cap (JSC takes no samples while the thread is outside JS).
 *
 * `file` is matched against the frame's location: the path relative to the profiled checkout
 * (`rpc/client/client.ts`), or the url as the runtime reports it for runtime code (`ext:core/01_core.js`,
 * `node:url`, empty for natives and the pseudo-frames `(garbage collector)`, `(idle)`, `(program)`).
 * `fn` (optional) is matched against the function name (private methods keep their `#`; anonymous
 * functions are `""` on Deno and `""` or `anonymous` on Bun). `side` (optional) limits a rule to
 * the server or the client process; when both sides share one process (`one_thread_profile.ts`,
 * side `both`) a frame such a rule matches counts for its caller (copyOut under `#take` is
 * decode, under `#readInline` complete).
 * @module
 */

/** The cost categories, in report order. */
export const CATEGORIES = [
  "submit",
  "scan",
  "decode",
  "dispatch",
  "handler",
  "encode",
  "publish",
  "complete",
  "loop",
  "telemetry",
  "runtime",
  "unsampled",
  "harness",
  "other",
] as const;

/** One cost category. */
export type Category = typeof CATEGORIES[number];

/** What each category holds (the README repeats this). */
export const CATEGORY_LABEL: Record<Category, string> = {
  submit: "client submit (call(), path selection, slot/promise, request descriptor or frame)",
  scan: "scan (finding READY requests on the server, READY answers on the client; TCP reads)",
  decode: "decode (descriptor/meta parse, payload copy-out, TCP frame parse)",
  dispatch: "dispatch (service/method lookup, call context, result bookkeeping)",
  handler: "handler (the echo handler itself)",
  encode: "encode (response descriptor/meta, payload placement, TCP frame build)",
  publish: "publish (fabric writes + state word + doorbell/kick; TCP socket writes)",
  complete: "client complete (reading the answer, resolving the promise, result object)",
  loop: "progress loop / idle / waits (spin, sched_yield, futex waits, idle event loop)",
  telemetry: "telemetry (control-page counters, EWMAs, snapshots) — not in the issue's list",
  runtime: "runtime (GC, microtask and event-loop machinery with no verbus frame below)",
  unsampled:
    "unsampled (gaps between samples longer than the cap: outside JS — Bun's event loop, I/O " +
    "and idle, which JSC does not sample — or descheduled / sampler starved)",
  harness: "harness (the benchmark's own loop and latency clock) — not verbus",
  other: "other (verbus code the table does not know: update categories.ts)",
};

/** One rule of the table. */
export interface Rule {
  /** Matched against the frame location (relative path for verbus files). */
  file: RegExp;
  /** Matched against the function name; absent = any function of the file. */
  fn?: RegExp;
  /** Only for this process; absent = both. */
  side?: "server" | "client";
  /** Where the self time goes. */
  category: Category;
}

/** Frames skipped when no rule matches: runtime and library code (see the module doc). */
export const TRANSPARENT = /^$|^(ext|node|bun|native|internal|deno):|node_modules\/|^\[/;
/**
 * verbus frames that always count for their caller, before any rule: the shared words' loads and
 * stores (a state word read by the server's scan is scan, one written by a publication publish).
 */
const FOR_CALLER = /^transport\/word_order\.ts$/;

/** The pseudo-frames of the profilers (V8 and JSC), by function name. */
const PSEUDO = /^\((garbage collector|program|root|idle)\)$/;

/** The ordered rules. */
export const RULES: Rule[] = [
  // --- profiler pseudo-frames and runtime machinery ---------------------------------------
  { file: /^$/, fn: /^\(idle\)$/, category: "loop" },
  { file: /^$/, fn: PSEUDO, category: "runtime" },

  // --- the benchmark itself ---------------------------------------------------------------
  { file: /^bench\/profile\/echo_server\.ts$/, fn: /^Echo$/, category: "handler" },
  { file: /^bench\/profile\//, category: "harness" },

  // --- progress loop, idle waits, spinning ------------------------------------------------
  { file: /^rpc\/session\/engine\/progress\.ts$/, category: "loop" },
  { file: /^transport\/cpu\.ts$/, category: "loop" }, // sched_yield while spinning
  { file: /^rpc\/session\/server\/fabric_host\.ts$/, category: "loop" }, // #step, #idle
  { file: /^rpc\/session\/engine\/engine\.ts$/, category: "loop" }, // the process engine: #step, #idle
  { file: /^transport\/shm\/notify_page\.ts$/, fn: /^announce$/, category: "publish" },
  { file: /^transport\/shm\/notify_page\.ts$/, category: "scan" }, // collect: announced sessions
  { file: /^rpc\/client\/fabric_link\.ts$/, fn: /^(#step|startLoop)$/, category: "loop" },
  { file: /^rpc\/client\/fabric_link\.ts$/, fn: /^current$/, category: "submit" }, // the call's session
  {
    file: /^rpc\/client\/direct_client\.ts$/,
    fn: /^(#step|#idleWait|#slotFreed|start)$/,
    category: "loop",
  },
  { file: /^transport\/shm\/shm_endpoint\.ts$/, fn: /^waitInbound$/, category: "loop" },
  { file: /^ffi\//, category: "loop" }, // nonblocking FFI (futex waits, Bun worker pool)
  { file: /^transport\/(shm|verbs|urma)\/.*wait/i, category: "loop" },

  // --- fabric (shm, verbs, urma) endpoints: writes/doorbells vs polling -------------------
  {
    file: /^transport\/(shm|verbs|urma)\//,
    fn: /^(poll|doorbell|read|readU32|#?drain\w*|peek\w*)$/,
    category: "scan",
  },
  { file: /^transport\/(shm|verbs|urma)\//, category: "publish" }, // write, writeU32, kick, flush…
  { file: /^transport\/completion_ring\.ts$/, category: "scan" },

  // --- server fabric session ---------------------------------------------------------------
  { file: /^rpc\/session\/server\/server_session\.ts$/, fn: /^poll$/, category: "scan" },
  { file: /^rpc\/session\/server\/server_session\.ts$/, fn: /^flushKick$/, category: "publish" },
  {
    file: /^rpc\/session\/server\/server_session\.ts$/,
    fn: /^(#take|#reclaim)$/,
    category: "decode",
  },
  {
    file: /^rpc\/session\/server\/server_session\.ts$/,
    fn: /^(send|#answer|#writeDesc)$/,
    category: "encode",
  },
  { file: /^rpc\/session\/server\/server_session\.ts$/, fn: /^sweep$/, category: "loop" },

  // --- client fabric session ---------------------------------------------------------------
  {
    file: /^rpc\/session\/client\/client_session\.ts$/,
    // "": the promise executor in submit()
    fn:
      /^(submit|#post|methodIndex|get slotSize|get inflight|get failed|get snapshot|#serverClosed|#fabricFailed|)$/,
    category: "submit",
  },
  {
    file: /^rpc\/session\/client\/client_session\.ts$/,
    fn: /^(progress|takeActivity|get seenDoorbell|#completion)$/,
    category: "scan",
  },
  {
    file: /^rpc\/session\/client\/client_session\.ts$/,
    fn: /^(#response|#release|get freeSlots)$/,
    category: "complete",
  },
  {
    file: /^rpc\/session\/client\/client_session\.ts$/,
    fn: /^(refreshSnapshot|#sendReclaims|#queueReclaim|reclaim|flushReclaims)$/,
    category: "telemetry",
  },
  {
    file: /^rpc\/session\/client\/client_session\.ts$/,
    fn: /^(msToDeadline|checkDeadlines|#expire)$/,
    category: "loop",
  },

  // --- the client session's parts (one concept per file) -------------------------------------
  {
    file: /^rpc\/session\/client\/request_writer\.ts$/,
    fn: /^(ringOwed|#ring|#ringFromMicrotask|uncork)$/,
    category: "publish",
  },
  { file: /^rpc\/session\/client\/request_writer\.ts$/, category: "submit" }, // post, reserveBulk, cork
  { file: /^rpc\/session\/client\/fabric_call\.ts$/, category: "submit" }, // the call's promise and its executor
  { file: /^rpc\/session\/client\/client_slots\.ts$/, fn: /^take$/, category: "submit" },
  { file: /^rpc\/session\/client\/client_slots\.ts$/, category: "complete" }, // resolve, reject, release
  { file: /^rpc\/session\/client\/response_reader\.ts$/, fn: /^isReady$/, category: "scan" },
  { file: /^rpc\/session\/client\/response_reader\.ts$/, category: "complete" }, // read, #readInline, LAZY
  {
    file: /^rpc\/session\/(client\/call_deadlines|engine\/(turn_clock|spin_policy|spin_pace))\.ts$/,
    category: "loop",
  },
  { file: /^rpc\/session\/client\/reclaim_batcher\.ts$/, category: "telemetry" },
  { file: /^rpc\/session\/client\/server_snapshot\.ts$/, category: "telemetry" },
  {
    file: /^rpc\/session\/server\/(server_response_writer|session_answers|held_answers)\.ts$/,
    category: "encode",
  },
  { file: /^rpc\/session\/server\/response_tokens\.ts$/, category: "decode" },
  { file: /^rpc\/client\/call_handles\.ts$/, category: "submit" },
  { file: /^rpc\/session\/copy_out\.ts$/, side: "client", category: "complete" }, // answer copy-out
  { file: /^rpc\/session\/copy_out\.ts$/, side: "server", category: "decode" }, // request copy-out

  // --- client API and TCP channel ----------------------------------------------------------
  {
    file: /^rpc\/client\/direct_client\.ts$/,
    fn: /^(#ewma|get fabric|#tcp)$/,
    category: "complete",
  },
  { file: /^rpc\/client\/direct_client\.ts$/, category: "submit" }, // call(), submit()
  { file: /^rpc\/client\/selector\.ts$/, category: "submit" },
  {
    file: /^rpc\/tcp\/(channel|pending_calls)\.ts$/,
    fn: /^(#answer|take|_expire|#settle\w*)$/,
    category: "complete",
  },
  {
    file: /^rpc\/tcp\/(channel|pending_calls)\.ts$/,
    fn: /^(_sweep|onSweep|onTimeout)$/,
    category: "loop",
  },
  { file: /^rpc\/tcp\/(channel|pending_calls)\.ts$/, category: "submit" }, // call(), PendingCall, #now
  { file: /^rpc\/tcp\/channel_call\.ts$/, category: "submit" }, // PendingCall, promiseOf, PendingTable

  // --- protocol ------------------------------------------------------------------------------
  { file: /^rpc\/protocol\/rpc_meta_encode\.ts$/, category: "encode" },
  { file: /^rpc\/protocol\/rpc_meta_decode\.ts$/, category: "decode" },
  {
    file: /^rpc\/protocol\/frame\.ts$/,
    fn: /^(encodeFrameTo|encodeFrame|writeHeader|copyInto|encode|FrameEncoder)$/,
    category: "encode",
  },
  { file: /^rpc\/protocol\/frame\.ts$/, category: "decode" }, // FrameParser
  { file: /^rpc\/protocol\/frame_fast\.ts$/, category: "encode" }, // per-call frame fast paths
  { file: /^rpc\/protocol\/dispatch\.ts$/, category: "dispatch" },
  { file: /^rpc\/protocol\//, category: "decode" },

  // --- TCP server and sockets ----------------------------------------------------------------
  { file: /^rpc\/server\/server\.ts$/, fn: /^send$/, category: "encode" },
  { file: /^rpc\/server\/server\.ts$/, category: "decode" }, // per-connection onData → FrameParser
  { file: /^rpc\/tcp\/server_connection\.ts$/, fn: /^(send|writeError)$/, category: "encode" },
  { file: /^rpc\/tcp\/server_connection\.ts$/, category: "decode" }, // onData, the frame handler
  {
    file: /^transport\/tcp\//,
    fn: /^(#readLoop|onSocketData|data|onData|#?deliver\w*|read\w*)$/,
    category: "scan",
  },
  { file: /^transport\/tcp\//, category: "publish" }, // write, reserve, commit, #writeLoop…

  // --- region bookkeeping --------------------------------------------------------------------
  { file: /^rpc\/region\/telemetry\.ts$/, category: "telemetry" },
  { file: /^rpc\/region\/(descriptors|layout)\.ts$/, category: "decode" },
  { file: /^rpc\/region\/(bulk_allocator|object_pool)\.ts$/, category: "encode" },
];

/** Whose process a profile is: the server's, the client's, or both in one (`one_thread.ts`). */
export type Side = "server" | "client" | "both";

/** The category of one frame, or null when the frame is transparent (see the module doc). */
export function classifyFrame(
  location: string,
  functionName: string,
  side: Side,
): Category | null {
  if (FOR_CALLER.test(location)) return null;
  for (const r of RULES) {
    if (!r.file.test(location)) continue;
    if (r.fn && !r.fn.test(functionName)) continue;
    if (r.side && r.side !== side) {
      if (side === "both") return null; // a side's own frame: its caller says which side
      continue;
    }
    return r.category;
  }
  return TRANSPARENT.test(location) ? null : "other";
}
