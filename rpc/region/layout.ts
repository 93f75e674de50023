/**
 * The session region: what each side of a session registers with its fabric, and where
 * everything lies in it. Offsets only — never pointers — so both sides compute the same layout
 * from the same validated numbers, on any host.
 *
 * Server region (the client writes requests into it and reads results out of it):
 * ```
 *  0        ┌──────────────────────────────┐
 *           │ control page (4 KiB)         │ magic, state, doorbell, sleeping, proof, telemetry
 *  4 KiB    ├──────────────────────────────┤
 *           │ request ring                 │ slots × 64 B request descriptors
 *           ├──────────────────────────────┤ ┐
 *           │ slot-local area              │ │ slots × slotSize: the inline payload of slot i
 *           ├──────────────────────────────┤ │ data pool
 *           │ BULK area                    │ │ large requests (the CLIENT allocates in it)
 *           ├──────────────────────────────┤ │
 *           │ object pool                  │ │ objectSlabs × objectSlabSize: LAZY results
 *           └──────────────────────────────┘ ┘
 * ```
 * Client region (the server writes responses into it):
 * ```
 *  0        ┌──────────────────────────────┐
 *           │ control page (4 KiB)         │
 *  4 KiB    ├──────────────────────────────┤
 *           │ response ring                │ slots × 64 B response descriptors
 *           ├──────────────────────────────┤
 *           │ slot-local area              │ slots × slotSize: the inline response of slot i
 *           ├──────────────────────────────┤
 *           │ staging                      │ registered local buffers: BULK sources, LAZY reads
 *           └──────────────────────────────┘
 * ```
 * Every area starts on a 4 KiB boundary. Request slot i and response slot i belong together.
 * @module
 */
import { z } from "zod";
import { VerbusError } from "../../errors.ts";

const KIB = 1024, MIB = 1024 * 1024;
const PAGE = 4096;

/** Region sizes and session tunables; one schema for types, defaults and messages. */
export const regionConfigSchema = z.object({
  /** Request/response ring slots: calls in flight per session. */
  slots: z.number().int().min(1).max(65536).default(1024),
  /** Inline payload bytes per slot (EAGER request and response bodies). */
  slotSize: z.number().int().min(256).max(16 * MIB).multipleOf(64).default(32 * KIB),
  /** BULK area in the server region. */
  bulkSize: z.number().int().min(0).max(4096 * MIB).multipleOf(64).default(16 * MIB),
  /** Object pool slabs (LAZY results). */
  objectSlabs: z.number().int().min(0).max(1 << 20).default(256),
  /** Bytes per slab. */
  objectSlabSize: z.number().int().min(4096).max(64 * MIB).multipleOf(64).default(64 * KIB),
  /** Client staging area for BULK sources and LAZY read targets. */
  stagingSize: z.number().int().min(64 * KIB).max(4096 * MIB).multipleOf(64).default(16 * MIB),
}).strict();

/** Validated region config. */
export type RegionConfig = z.output<typeof regionConfigSchema>;
/** Region config as users write it (every field optional). */
export type RegionConfigInput = z.input<typeof regionConfigSchema>;

/** One area of a region. */
export interface Area {
  readonly offset: number;
  readonly size: number;
}

/** Which side a region belongs to. */
export type RegionRole = "server" | "client";

/** Where everything lies in one side's region. */
export interface RegionLayout {
  readonly role: RegionRole;
  readonly config: RegionConfig;
  /** Total bytes (a multiple of 4 KiB). */
  readonly size: number;
  readonly control: Area;
  /** Server only (size 0 in a client region). */
  readonly requestRing: Area;
  /** Client only. */
  readonly responseRing: Area;
  readonly slotLocal: Area;
  /** Server only. */
  readonly bulk: Area;
  /** Server only. */
  readonly objectPool: Area;
  /** Client only. */
  readonly staging: Area;
}

/** Bytes of one ring descriptor. */
export const DESCRIPTOR_BYTES = 64;
/** Bytes of the control page. */
export const CONTROL_BYTES = PAGE;

const up = (n: number) => Math.ceil(n / PAGE) * PAGE;

/** Parses a user config, naming the bad field on error. */
export function parseRegionConfig(input: unknown): RegionConfig {
  const r = regionConfigSchema.safeParse(input ?? {});
  if (r.success) return r.data;
  const issue = r.error.issues[0];
  throw new VerbusError(
    "INVALID_OPTIONS",
    `region.${issue.path.join(".") || "(root)"}: ${issue.message}`,
  );
}

/** Computes the layout of `role`'s region for `config`. Pure. */
export function computeLayout(role: RegionRole, config: RegionConfig): RegionLayout {
  let at = 0;
  const take = (size: number): Area => {
    const a = { offset: at, size };
    at += up(size);
    return a;
  };
  const none: Area = { offset: 0, size: 0 };
  const control = take(CONTROL_BYTES);
  const server = role === "server";
  const requestRing = server ? take(config.slots * DESCRIPTOR_BYTES) : none;
  const responseRing = server ? none : take(config.slots * DESCRIPTOR_BYTES);
  const slotLocal = take(config.slots * config.slotSize);
  const bulk = server ? take(config.bulkSize) : none;
  const objectPool = server ? take(config.objectSlabs * config.objectSlabSize) : none;
  const staging = server ? none : take(config.stagingSize);
  return {
    role,
    config,
    size: at,
    control,
    requestRing,
    responseRing,
    slotLocal,
    bulk,
    objectPool,
    staging,
  };
}

/**
 * Control page of every region (the doorbell and sleeping words are fixed by the fabric
 * interface; see transport/fabric.ts):
 * ```
 *   0 magic u32 'VBRG'   4 version u32   8 role u32 (1 server, 2 client)   12 state u32
 *  16 doorbell u32      20 sleeping u32
 *  24 proof[16]          same-host proof: the client copies the server's nonce here (shm)
 *  40 scanLimit u32      server region: 1 + the highest request slot the client has used; the
 *                        server scans only [0, scanLimit) (a hint: clamped to the ring size)
 *  44 reserved … 63
 *  64 telemetry          float64 counters (rpc/region/telemetry.ts), up to the end of the page
 * ```
 */
export const CONTROL = {
  magic: 0,
  version: 4,
  role: 8,
  state: 12,
  doorbell: 16,
  sleeping: 20,
  proof: 24,
  scanLimit: 40,
  telemetry: 64,
} as const;
/** Control-page `state` word: the peer closed the session (written by the closing side). */
export const SESSION_CLOSED = 2;
/** 'VBRG' little-endian. */
export const REGION_MAGIC = 0x47524256;
/** Layout version; both sides must agree. */
export const REGION_VERSION = 1;
