/**
 * Per-call path selection, a pure function of the call and the session's state.
 *
 * Rules, first match wins:
 *
 * | # | rule | path |
 * |---|------|------|
 * | 1 | the caller forces a path | that path; a forced fabric path (EAGER / LAZY / BULK) with the fabric down → TCP_FALLBACK; a forced EAGER / LAZY whose request does not fit a slot → BULK |
 * | 2 | fabric down | TCP_FALLBACK |
 * | 3 | `errorCount > errorThreshold` (strictly: the threshold itself is still tolerated, one more error has "passed" it) | TCP_FALLBACK |
 * | 4 | server request ring `> ringPressure` (strictly "over 90 %") | TCP_FALLBACK |
 * | 5 | server object pool `> objpoolPressure` (strictly "over 85 %") | TCP_FALLBACK |
 * | 6 | `expectedResponseBytes > maxResponseBytes` (the server's object pool cannot hold such an answer: it would run the call and fail it) | TCP_FALLBACK |
 * | 7 | `requestBytes ≥ bulkThreshold` | BULK |
 * | 8 | the request does not fit a request slot | BULK |
 * | 9 | `expectedResponseBytes ≥ largeThreshold` | LAZY |
 * | 10 | otherwise | EAGER |
 *
 * {@link selectPathWithoutReason} is the data-path form (allocates nothing); {@link selectPath}
 * also explains its choice in a short human string (it allocates the result and the string).
 *
 * Threading: pure functions, callable from anywhere.
 * @module
 */
import { z } from "zod";
import { parseOptions } from "../../util/options.ts";

/** The four ways a call can travel (names from the RDMemRPC design). */
export type CallPath = "EAGER" | "LAZY" | "BULK" | "TCP_FALLBACK";

/** Every {@link CallPath}: the fabric paths from cheapest to heaviest, then TCP. */
export const CALL_PATHS: readonly CallPath[] = Object.freeze(
  ["EAGER", "LAZY", "BULK", "TCP_FALLBACK"] as const,
);

/** zod schema of a {@link CallPath} (for `--force-path` and options). */
export const callPathSchema: z.ZodEnum<{ [K in CallPath]: K }> = z.enum([
  "EAGER",
  "LAZY",
  "BULK",
  "TCP_FALLBACK",
], {
  message: "expected one of EAGER, LAZY, BULK, TCP_FALLBACK",
});

/** Thresholds of the selector. Unknown keys are rejected; messages name the field. */
export const selectorConfigSchema: z.ZodObject<{
  errorThreshold: z.ZodDefault<z.ZodNumber>;
  ringPressure: z.ZodDefault<z.ZodNumber>;
  objpoolPressure: z.ZodDefault<z.ZodNumber>;
  bulkThreshold: z.ZodDefault<z.ZodNumber>;
  largeThreshold: z.ZodDefault<z.ZodNumber>;
}, z.core.$strict> = z.object({
  /** TCP once the session's fabric error count is strictly greater than this. */
  errorThreshold: z.number({ message: "errorThreshold must be a number" }).int().min(0).default(8),
  /** TCP while the server's request ring occupancy (0..1) is strictly greater than this. */
  ringPressure: z.number({ message: "ringPressure must be a number" }).min(0).max(1).default(0.90),
  /** TCP while the server's object pool usage (0..1) is strictly greater than this. */
  objpoolPressure: z.number({ message: "objpoolPressure must be a number" }).min(0).max(1)
    .default(0.85),
  /** BULK for requests of at least this many bytes. */
  bulkThreshold: z.number({ message: "bulkThreshold must be a number" }).int().min(1)
    .default(8192),
  /** LAZY for expected responses of at least this many bytes. */
  largeThreshold: z.number({ message: "largeThreshold must be a number" }).int().min(1)
    .default(8192),
}).strict();

/** Parsed selector thresholds (every field present). */
export type SelectorConfig = z.output<typeof selectorConfigSchema>;
/** Selector thresholds as a caller writes them (every field optional). */
export type SelectorConfigInput = z.input<typeof selectorConfigSchema>;

/** The default thresholds: 8 errors, ring 90 %, object pool 85 %, BULK 8 KiB, LAZY 8 KiB. */
export const DEFAULT_SELECTOR_CONFIG: Readonly<SelectorConfig> = Object.freeze(
  selectorConfigSchema.parse({}),
);

/**
 * Validates selector options; throws `VerbusError` code `INVALID_OPTIONS` naming each bad field.
 * Setup only.
 */
export function parseSelectorConfig(input: unknown = {}): SelectorConfig {
  return parseOptions(selectorConfigSchema, input, "invalid selector options");
}

/** What the selector looks at for one call. The caller owns it and may reuse it across calls. */
export interface SelectInput {
  /** A path the caller insists on (`--force-path`). */
  forcePath?: CallPath;
  /** Whether the session's fast fabric (RDMA / URMA / shm) is up. */
  fabricUp: boolean;
  /** Fabric errors counted on this session so far. */
  errorCount: number;
  /** Size of the serialized request. */
  requestBytes: number;
  /** Size the caller expects the response to have, when it knows. */
  expectedResponseBytes?: number;
  /** The latest snapshot of the server's control page, when one was read. */
  snapshot?: { ringOccupancy: number; objectPoolUsage: number };
  /** Whether the request fits one request-ring slot (EAGER and LAZY need it to). */
  requestFitsSlot: boolean;
  /** The largest answer the session's server can hold in its object pool, when known. */
  maxResponseBytes?: number;
}

/** The selector's answer. */
export interface Selection {
  path: CallPath;
  /** Why, in a few words, e.g. `request 16384 B ≥ bulk threshold 8192 B`. */
  reason: string;
}

// Rule numbers (the order of the module table); index into RULE_PATH.
const R_FORCED = 0,
  R_FORCED_DOWN = 1,
  R_FORCED_NOFIT = 2,
  R_DOWN = 3,
  R_ERRORS = 4,
  R_RING = 5,
  R_OBJPOOL = 6,
  R_TOOBIG = 7,
  R_BULK = 8,
  R_NOFIT = 9,
  R_LAZY = 10,
  R_EAGER = 11;

function isFabricPath(p: CallPath): boolean {
  return p !== "TCP_FALLBACK";
}

function selectRule(input: SelectInput, cfg: SelectorConfig): number {
  const forced = input.forcePath;
  if (forced !== undefined) {
    if (isFabricPath(forced) && !input.fabricUp) return R_FORCED_DOWN;
    if ((forced === "EAGER" || forced === "LAZY") && !input.requestFitsSlot) return R_FORCED_NOFIT;
    return R_FORCED;
  }
  if (!input.fabricUp) return R_DOWN;
  if (input.errorCount > cfg.errorThreshold) return R_ERRORS;
  const snap = input.snapshot;
  if (snap !== undefined) {
    if (snap.ringOccupancy > cfg.ringPressure) return R_RING;
    if (snap.objectPoolUsage > cfg.objpoolPressure) return R_OBJPOOL;
  }
  const resp = input.expectedResponseBytes, max = input.maxResponseBytes;
  if (resp !== undefined && max !== undefined && resp > max) return R_TOOBIG;
  if (input.requestBytes >= cfg.bulkThreshold) return R_BULK;
  if (!input.requestFitsSlot) return R_NOFIT;
  if (resp !== undefined && resp >= cfg.largeThreshold) return R_LAZY;
  return R_EAGER;
}

/**
 * The path for one call, without the explanation. Data path: allocates nothing, never throws.
 * Always agrees with {@link selectPath}.
 */
export function selectPathWithoutReason(input: SelectInput, cfg: SelectorConfig): CallPath {
  const rule = selectRule(input, cfg);
  switch (rule) {
    case R_FORCED:
      return input.forcePath!;
    case R_FORCED_NOFIT:
    case R_BULK:
    case R_NOFIT:
      return "BULK";
    case R_LAZY:
      return "LAZY";
    case R_EAGER:
      return "EAGER";
    default:
      return "TCP_FALLBACK";
  }
}

function pct(x: number): string {
  return `${Math.round(x * 10000) / 100}%`;
}

/**
 * The path for one call and why (rules in the module table). Pure; never throws. Allocates the
 * result object and its reason string: use {@link selectPathWithoutReason} on the hot path and
 * this one when the reason is logged or shown.
 */
export function selectPath(input: SelectInput, cfg: SelectorConfig): Selection {
  const rule = selectRule(input, cfg);
  const path = selectPathWithoutReason(input, cfg);
  const f = input.forcePath;
  let reason: string;
  switch (rule) {
    case R_FORCED:
      reason = `forced ${f}`;
      break;
    case R_FORCED_DOWN:
      reason = `forced ${f} unavailable: fabric down`;
      break;
    case R_FORCED_NOFIT:
      reason =
        `forced ${f} unavailable: request ${input.requestBytes} B does not fit a request slot`;
      break;
    case R_DOWN:
      reason = "fabric down";
      break;
    case R_ERRORS:
      reason = `error count ${input.errorCount} > threshold ${cfg.errorThreshold}`;
      break;
    case R_RING:
      reason = `server ring ${pct(input.snapshot!.ringOccupancy)} full (> ${
        pct(cfg.ringPressure)
      })`;
      break;
    case R_OBJPOOL:
      reason = `server object pool ${pct(input.snapshot!.objectPoolUsage)} used (> ${
        pct(cfg.objpoolPressure)
      })`;
      break;
    case R_TOOBIG:
      reason =
        `expected response ${input.expectedResponseBytes} B > the ${input.maxResponseBytes} B ` +
        `the server's object pool holds`;
      break;
    case R_BULK:
      reason = `request ${input.requestBytes} B ≥ bulk threshold ${cfg.bulkThreshold} B`;
      break;
    case R_NOFIT:
      reason = `request ${input.requestBytes} B does not fit a request slot`;
      break;
    case R_LAZY:
      reason =
        `expected response ${input.expectedResponseBytes} B ≥ large threshold ${cfg.largeThreshold} B`;
      break;
    default:
      reason = "small request and response";
  }
  return { path, reason };
}
