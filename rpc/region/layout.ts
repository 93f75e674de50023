/**
 * The session region: what each side of a session registers with its fabric, and where
 * everything lies in it. Offsets only — never pointers — so both sides compute the same layout
 * from the same validated numbers, on any host.
 *
 * Server region (the client writes requests into it and reads results out of it):
 * ```
 *  0        ┌──────────────────────────────┐
 *           │ control page (4 KiB)         │ fabric header, state, scan limit, telemetry
 *  4 KiB    ├──────────────────────────────┤
 *           │ request ring                 │ slots × 64 B request descriptors
 *           ├──────────────────────────────┤ ┐
 *           │ slot-local area              │ │ slots × slotSize: the inline payload of slot i
 *           ├──────────────────────────────┤ │ data pool
 *           │ BULK area                    │ │ large requests (the CLIENT allocates in it)
 *           ├──────────────────────────────┤ │
 *           │ object pool                  │ │ objectSlabs × objectSlabSize: LAZY results
 *           ├──────────────────────────────┤ ┘
 *           │ stream ring (256 KiB)        │ the client's stream frames to the server
 *           └──────────────────────────────┘
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
 *           ├──────────────────────────────┤
 *           │ stream ring (256 KiB)        │ the server's stream frames to the client
 *           └──────────────────────────────┘
 * ```
 * Every area starts on a 4 KiB boundary. Request slot i and response slot i belong together.
 * The stream ring of each region is the inbound half of the session's stream pipe
 * (`rpc/stream/stream_ring.ts`): the peer appends brpc `"STRM"` frames to it as a byte stream
 * and publishes its tail in this region's control page (`CONTROL.streamTail`); the owner returns
 * what it consumed in the peer's control page (`CONTROL.streamCredit`).
 *
 * Both sides compute both regions from the config the hellos agree on, so any change to this
 * layout bumps `HELLO_VERSION` (`rpc/session/handshake/hello.ts`): a peer of another version is
 * refused at its hello and stays on TCP, never given a region it would misread (version 2 added
 * the stream rings and their two control-page words).
 * @module
 */
import { z } from "zod";
import { FABRIC_HEADER_BYTES, RPC_STATE_OFFSET } from "../../transport/control_page.ts";
import { parseOptions } from "../../util/options.ts";

const KIB = 1024, MIB = 1024 * 1024;
const PAGE = 4096;

/** Region sizes and session tunables; one schema for types, defaults and messages. */
export const regionConfigSchema: z.ZodObject<{
  slots: z.ZodDefault<z.ZodNumber>;
  slotSize: z.ZodDefault<z.ZodNumber>;
  bulkSize: z.ZodDefault<z.ZodNumber>;
  objectSlabs: z.ZodDefault<z.ZodNumber>;
  objectSlabSize: z.ZodDefault<z.ZodNumber>;
  stagingSize: z.ZodDefault<z.ZodNumber>;
}, z.core.$strict> = z.object({
  /** Request/response ring slots: calls in flight per session. */
  slots: z.number().int().min(1).max(65536).default(1024),
  /** Inline payload bytes per slot (EAGER request and response bodies). */
  slotSize: z.number().int().min(256).max(16 * MIB).multipleOf(64).default(32 * KIB),
  /** BULK area in the server region. */
  bulkSize: z.number().int().min(0).max(4096 * MIB).multipleOf(64).default(16 * MIB),
  /** Object pool slabs (LAZY results). */
  objectSlabs: z.number().int().min(1).max(1 << 20).default(256),
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
  /** Both: the stream frames the peer sends to this side ({@link STREAM_RING_BYTES}). */
  readonly streamRing: Area;
}

/** Bytes of each region's stream ring (a power of two: positions wrap with `& (size - 1)`). */
export const STREAM_RING_BYTES = 256 * 1024;

/** Bytes of one ring descriptor. */
export const DESCRIPTOR_BYTES = 64;
/** Bytes of the control page. */
const CONTROL_BYTES = PAGE;

const up = (n: number) => Math.ceil(n / PAGE) * PAGE;

/**
 * Parses a user config; throws INVALID_OPTIONS naming the bad field (`region: field slots: …`).
 * Setup only; any thread.
 */
export function parseRegionConfig(input: unknown): RegionConfig {
  return parseOptions(regionConfigSchema, input ?? {}, "region");
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
  const streamRing = take(STREAM_RING_BYTES);
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
    streamRing,
  };
}

/**
 * The control page at the start of every region, split by owner. The transport owns the fabric
 * header (`transport/control_page.ts`: magic, version, role, doorbell, sleeping, proof, notify
 * token); the rpc
 * layer owns the words below and never writes the header's:
 * ```
 *    0 ┌──────────────────────────────────────────┐ ┐
 *      │ magic · version · role                   │ │
 *   12 │ state u32                      (rpc)     │ │ fabric header (transport),
 *   16 │ doorbell · sleeping                      │ │ FABRIC_HEADER_BYTES long; word 12
 *   24 │ proof[16]                                │ │ lies inside it but is rpc's
 *   40 │ notify token                             │ │
 *   44 ├──────────────────────────────────────────┤ ┘
 *      │ scanLimit u32                  (rpc)     │ server region: 1 + the highest request
 *   48 │ streamTail u32                 (rpc)     │ slot the client has used; the server scans
 *   52 │ streamCredit u32               (rpc)     │ only [0, scanLimit) (a hint: clamped).
 *   56 │ reserved                                 │ streamTail / streamCredit: both regions,
 *   64 ├──────────────────────────────────────────┤ written by the peer (stream_ring.ts)
 *      │ telemetry                      (rpc)     │ float64 counters (rpc/region/telemetry.ts),
 *      │ …                                        │ up to the end of the page
 * 4096 └──────────────────────────────────────────┘
 * ```
 * Byte offsets from the start of the region. Read and written by the session that owns the
 * region (and its peer through the fabric); no allocation.
 */
export const CONTROL = {
  /** Session state: {@link SESSION_CLOSED} once the peer closed the session. */
  state: RPC_STATE_OFFSET,
  /** The client's request-ring scan hint (server region). */
  scanLimit: FABRIC_HEADER_BYTES,
  /** Bytes the peer appended to this region's stream ring, mod 2^32 (written by the peer). */
  streamTail: 48,
  /** Bytes of the peer's stream ring the peer consumed, mod 2^32 (written by the peer). */
  streamCredit: 52,
  /** Telemetry counters (server region; the client reads a snapshot). */
  telemetry: 64,
} as const;
/** Control-page `state` word: the peer closed the session (written by the closing side). */
export const SESSION_CLOSED = 2;
