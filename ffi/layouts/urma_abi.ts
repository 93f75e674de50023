/**
 * The named UMDK ABIs verbus knows: the three structs whose layout changed between builds that
 * all call themselves 25.12 / 26.06 (`urma_rjetty_t`, `urma_seg_t`, `urma_target_seg_t`); every
 * other layout is the same in all of them (ffi/layouts/urma.ts). Each was checked, compiled,
 * against the real headers (openeuler-mirror/umdk, src/urma/lib/urma/core/include/urma_types.h)
 * at the commits named below, with c-helpers/urma_sim/abi_check.c -DURMA_REAL_HEADERS.
 *
 * ```
 * urma_rjetty_t        25.12 (48)          25.12-B081 (72)         26.06-ext (80)   26.06-ext56 (56)
 *  0 jetty_id (24 B)   same                same                    same             same
 * 24 trans_mode u32 | 28 policy u32 | 32 type u32   (all)
 *   flag               @36 u32             @40 24-B union          @40 24-B union   @36 u32
 *                                          (bs | value | user_tag{reserved,stag,dtag})
 *   tp_type            @40                 @64                     @64              @40
 *   ext (urma_ext_t)   —                   —                       @68 (length @72) @44 (length @48)
 *
 * urma_seg_t           48: ubva@0 (28 B packed) len@32 attr@40 token_id@44 | -ext*: 56, + ext@48
 *                      (ext = { flag u32 @48, length u32 @52 }: checked against a3b44bfb, 897ac4fd)
 * urma_target_seg_t    88: seg@0 user_ctx@48 mva@56 urma_ctx@64 token_id@72 handle@80
 *                      -ext*: 96, seg@0 (56 B) and every field from user_ctx on 8 further
 * ```
 * The first 48 bytes of `urma_seg_t` mean the same in every ABI: that is the fixed form the
 * handshake carries (the ext part, when there is one, is zero: no extension).
 * @module
 */
import type { Layout } from "./layout.ts";
import { URMA_LAYOUTS, URMA_RJETTY, URMA_SEG, URMA_TARGET_SEG } from "./urma.ts";
import { URMA_EVENT_LAYOUTS } from "./urma_events.ts";

/** The fields of layout `T`, each offset any number (an ABI may move it). */
export type Shape<T> = { readonly [K in keyof T]: T[K] extends number ? number : T[K] };

/**
 * How long a description blob of `urma_get_seg_ctx` / `urma_get_rjetty` is: `base` bytes, plus
 * (when bit `bit` of the u32 at `flagAt` is set, or always when `bit` is -1) `lenAdd` + the u32
 * at `lenAt`. 25.12: `has_user_info`, then urma_user_info_ext_hdr_t { u32 len; data[] } after
 * the struct (master urma_calc_user_info_total_len); -ext: sizeof + ext.length (a3b44bfb).
 */
export interface BlobRule {
  readonly base: number;
  readonly flagAt: number;
  readonly bit: number;
  readonly lenAt: number;
  readonly lenAdd: number;
}

/** The layouts that differ between named ABIs. */
export interface UrmaAbiLayouts {
  /** The ABI's name ("25.12", "25.12-B081", "26.06-ext", "26.06-ext56"). */
  readonly name: string;
  /** Which UMDK sources have it (tags, master commits: first..last, dates). */
  readonly seenIn: string;
  readonly rjetty: Shape<typeof URMA_RJETTY>;
  readonly seg: Shape<typeof URMA_SEG>;
  readonly targetSeg: Shape<typeof URMA_TARGET_SEG>;
  /** How its description blobs are sized (null: this ABI has no urma_get_seg_ctx). */
  readonly blob: { readonly seg: BlobRule; readonly rjetty: BlobRule } | null;
}

/** -ext: urma_seg_t's ext at 48 (length at 52). */
const SEG_EXT_RULE: BlobRule = { base: 56, flagAt: 48, bit: -1, lenAt: 52, lenAdd: 0 };

/** urma_rjetty_t with the 24-byte flag union (user_tag): B081 and 26.06-ext. */
const RJETTY_USER_TAG = { ...URMA_RJETTY, $size: 72, flag: 40, tp_type: 64 } as const;
/** urma_seg_t with urma_ext_t at 48. */
const SEG_EXT = { ...URMA_SEG, $size: 56 } as const;
/** urma_target_seg_t around a 56-byte urma_seg_t. */
const TARGET_SEG_EXT = {
  ...URMA_TARGET_SEG,
  $size: 96,
  user_ctx: 56,
  mva: 64,
  urma_ctx: 72,
  token_id: 80,
  handle: 88,
} as const;

/** Every named ABI, the default first. */
export const URMA_ABIS: readonly UrmaAbiLayouts[] = [
  {
    name: "25.12",
    seenIn:
      "tags v25.12.0 (4e6be274) and v26.06.0_CAM (564ee727); master up to 83c9b856 (2026-04-12) and from 81a3d01a (2026-06-26) to 00cc16f1 (2026-07-24)",
    rjetty: URMA_RJETTY,
    seg: URMA_SEG,
    targetSeg: URMA_TARGET_SEG,
    blob: {
      seg: { base: 48, flagAt: 40, bit: 14, lenAt: 48, lenAdd: 4 }, // attr.has_user_info
      rjetty: { base: 48, flagAt: 36, bit: 13, lenAt: 48, lenAdd: 4 }, // flag.has_user_info
    },
  },
  {
    name: "25.12-B081",
    seenIn: "tag v25.12.0.B081 (a4768b14); master c7efde0d (2026-04-13) to 0cd28bd3 (2026-06-10)",
    rjetty: RJETTY_USER_TAG,
    seg: URMA_SEG,
    targetSeg: URMA_TARGET_SEG,
    blob: null,
  },
  {
    name: "26.06-ext",
    seenIn: "master a3b44bfb (2026-06-16) to ecbbbab3 (2026-06-24)",
    rjetty: { ...RJETTY_USER_TAG, $size: 80 },
    seg: SEG_EXT,
    targetSeg: TARGET_SEG_EXT,
    blob: { seg: SEG_EXT_RULE, rjetty: { base: 80, flagAt: 68, bit: -1, lenAt: 72, lenAdd: 0 } },
  },
  {
    name: "26.06-ext56",
    seenIn: "master 897ac4fd and 76ddcf7e (2026-06-24)",
    rjetty: { ...URMA_RJETTY, $size: 56 },
    seg: SEG_EXT,
    targetSeg: TARGET_SEG_EXT,
    blob: { seg: SEG_EXT_RULE, rjetty: { base: 56, flagAt: 44, bit: -1, lenAt: 48, lenAdd: 0 } },
  },
];

/** The default ABI (25.12: releases v25.12.0, v26.06.0 and current master). */
export const URMA_DEFAULT_ABI: UrmaAbiLayouts = URMA_ABIS[0];

/** Bytes of the fixed segment form the handshake carries (the common prefix of every ABI). */
export const URMA_SEG_WIRE_BYTES = 48;

/** The ABI called `name`, or undefined. */
export function urmaAbi(name: string): UrmaAbiLayouts | undefined {
  return URMA_ABIS.find((a) => a.name === name);
}

/** Every checked layout of `abi`: the shared ones (and the event ones) with its own three in their place. */
export function abiLayouts(abi: UrmaAbiLayouts): Layout[] {
  const own = new Map<string, Layout>([
    [abi.rjetty.$struct, abi.rjetty],
    [abi.seg.$struct, abi.seg],
    [abi.targetSeg.$struct, abi.targetSeg],
  ]);
  return [...URMA_LAYOUTS, ...URMA_EVENT_LAYOUTS].map((l) => own.get(l.$struct) ?? l);
}
