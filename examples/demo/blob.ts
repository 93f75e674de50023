/**
 * Self-contained result blobs of the demo service: MGET's "dynamic array" and PROFILE's
 * "composite struct". A blob holds fixed-size little-endian fields and **relative offsets** (from
 * the first byte of the blob), never pointers, so it can be copied into any ring, pool or socket
 * buffer and read in place by another process or host. Decoders check every offset, length and
 * count against the blob before touching the bytes they name and throw a {@link VerbusError}
 * (`PROTOCOL` for a wrong magic / version / size field, `BOUNDS` for anything pointing outside
 * the blob) naming the field; they never read outside the blob.
 *
 * Dynamic array (`VDAR`, version 1):
 * ```
 *  0 u32 magic 0x52414456 ("VDAR")   4 u32 version = 1
 *  8 u32 count                       12 u32 blob_size (whole blob)
 * 16 count × entry { u32 offset, u32 length, u32 flags (bit 0 = present), u32 reserved = 0 }
 *    data area: item bytes, each starting 8-byte aligned
 * ```
 * Composite struct (`VPRF`, version 1, fixed part 80 bytes):
 * ```
 *  0 u32 magic 0x46525056 ("VPRF")   4 u16 version = 1   6 u16 fixed_size = 80
 *  8 u32 blob_size                   12 u32 flags (bit 0 = active)
 * 16 u64 id     24 u64 created_ms    32 f64 score   40 u32 age   44 u32 reserved = 0
 * 48 name  {u32 offset, u32 length}  (UTF-8)
 * 56 email {u32 offset, u32 length}  (UTF-8)
 * 64 tags    {u32 offset, u32 count} -> count × {u32 offset, u32 length} string refs
 * 72 friends {u32 offset, u32 count} -> count × u64 (8-byte aligned)
 * 80 data area
 * ```
 * @module
 */
import { VerbusError } from "../../errors.ts";

/** Magic of a dynamic-array blob ("VDAR" little-endian). */
export const DYNAMIC_ARRAY_MAGIC = 0x52414456;
/** Magic of a profile composite-struct blob ("VPRF" little-endian). */
export const PROFILE_MAGIC = 0x46525056;
const DA_HEADER = 16;
const DA_ENTRY = 16;
const PF_FIXED = 80;

/** A user profile: the decoded form of PROFILE's composite struct. */
export interface Profile {
  /** User id (u64). */
  id: bigint;
  /** Display name. */
  name: string;
  /** E-mail address. */
  email: string;
  /** Age in years (u32). */
  age: number;
  /** A score (f64). */
  score: number;
  /** Creation time, ms since the epoch (u64, at most 2^53 - 1). */
  createdMs: number;
  /** Whether the account is active. */
  active: boolean;
  /** Free-form tags. */
  tags: string[];
  /** Ids of friends (u64 each). */
  friends: bigint[];
}

const utf8_encoder = new TextEncoder();
const utf8_decoder = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });
const align8 = (n: number) => (n + 7) & ~7;

function viewOf(b: Uint8Array): DataView {
  return new DataView(b.buffer, b.byteOffset, b.byteLength);
}

/** Checks `[offset, offset + length)` lies in `[lo, hi)`; throws BOUNDS naming `field` otherwise. */
function checkRange(
  what: string,
  field: string,
  offset: number,
  length: number,
  lo: number,
  hi: number,
): void {
  if (offset < lo || offset > hi || length > hi - offset) {
    throw new VerbusError(
      "BOUNDS",
      `${what}: ${field} offset ${offset} + length ${length} is outside the data area [${lo}, ${hi})`,
    );
  }
}

/** Checks magic, version and size fields shared by both blob kinds. */
function checkHeader(what: string, blob: Uint8Array, min: number, magic: number): DataView {
  if (blob.length < min) {
    throw new VerbusError(
      "PROTOCOL",
      `${what}: ${blob.length} bytes is shorter than the ${min}-byte header`,
    );
  }
  const dv = viewOf(blob);
  const got = dv.getUint32(0, true);
  if (got !== magic) {
    throw new VerbusError(
      "PROTOCOL",
      `${what}: bad magic 0x${got.toString(16)}, expected 0x${magic.toString(16)}`,
    );
  }
  return dv;
}

/**
 * Encodes a dynamic array of optional byte strings (`undefined` = absent, e.g. an MGET miss) into
 * a fresh blob owned by the caller. Item bytes are copied.
 */
export function encodeDynamicArray(items: readonly (Uint8Array | undefined)[]): Uint8Array {
  let size = align8(DA_HEADER + DA_ENTRY * items.length);
  for (const it of items) if (it !== undefined) size = align8(size + it.length);
  if (size > 0xffffffff) {
    throw new VerbusError("BOUNDS", `dynamic array of ${size} bytes exceeds 4 GiB`);
  }
  const blob = new Uint8Array(size);
  const dv = viewOf(blob);
  dv.setUint32(0, DYNAMIC_ARRAY_MAGIC, true);
  dv.setUint32(4, 1, true);
  dv.setUint32(8, items.length, true);
  dv.setUint32(12, size, true);
  let data = align8(DA_HEADER + DA_ENTRY * items.length);
  for (let i = 0; i < items.length; i++) {
    const it = items[i];
    const e = DA_HEADER + i * DA_ENTRY;
    if (it === undefined) continue; // entry stays {0, 0, 0, 0}
    dv.setUint32(e, data, true);
    dv.setUint32(e + 4, it.length, true);
    dv.setUint32(e + 8, 1, true);
    blob.set(it, data);
    data = align8(data + it.length);
  }
  return blob;
}

/**
 * Decodes a dynamic-array blob. Present items are returned as views into `blob` (valid while the
 * caller keeps `blob` unchanged); absent items as `undefined`. `maxCount` bounds the item count.
 */
export function decodeDynamicArray(
  blob: Uint8Array,
  maxCount = 1 << 20,
): (Uint8Array | undefined)[] {
  const what = "dynamic array blob";
  const dv = checkHeader(what, blob, DA_HEADER, DYNAMIC_ARRAY_MAGIC);
  const version = dv.getUint32(4, true);
  if (version !== 1) {
    throw new VerbusError("PROTOCOL", `${what}: unsupported version ${version}, expected 1`);
  }
  const count = dv.getUint32(8, true);
  const size = dv.getUint32(12, true);
  if (size !== blob.length) {
    throw new VerbusError(
      "PROTOCOL",
      `${what}: blob_size field says ${size} bytes, the blob has ${blob.length}`,
    );
  }
  if (count > maxCount) {
    throw new VerbusError("BOUNDS", `${what}: count ${count} exceeds the limit of ${maxCount}`);
  }
  const data_start = DA_HEADER + DA_ENTRY * count;
  if (data_start > size) {
    throw new VerbusError(
      "BOUNDS",
      `${what}: count ${count} needs ${data_start} bytes of header and entries, the blob has ${size}`,
    );
  }
  const out = new Array<Uint8Array | undefined>(count);
  for (let i = 0; i < count; i++) {
    const e = DA_HEADER + i * DA_ENTRY;
    const offset = dv.getUint32(e, true),
      length = dv.getUint32(e + 4, true),
      flags = dv.getUint32(e + 8, true);
    if ((flags & ~1) !== 0 || dv.getUint32(e + 12, true) !== 0) {
      throw new VerbusError(
        "PROTOCOL",
        `${what}: entry ${i} has unknown flags 0x${flags.toString(16)} or reserved bits`,
      );
    }
    if ((flags & 1) === 0) {
      if (offset !== 0 || length !== 0) {
        throw new VerbusError(
          "PROTOCOL",
          `${what}: absent entry ${i} has offset ${offset} / length ${length}, expected 0`,
        );
      }
      out[i] = undefined;
      continue;
    }
    checkRange(what, `entry ${i}`, offset, length, data_start, size);
    out[i] = blob.subarray(offset, offset + length);
  }
  return out;
}

/** Encodes `p` into a fresh composite-struct blob owned by the caller. */
export function encodeProfile(p: Profile): Uint8Array {
  if (p.id < 0n || p.id > 0xffffffffffffffffn) {
    throw new VerbusError("BOUNDS", `profile id ${p.id} is not a u64`);
  }
  if (!Number.isSafeInteger(p.createdMs) || p.createdMs < 0) {
    throw new VerbusError("BOUNDS", `profile createdMs ${p.createdMs} is not in 0..2^53-1`);
  }
  if (!Number.isInteger(p.age) || p.age < 0 || p.age > 0xffffffff) {
    throw new VerbusError("BOUNDS", `profile age ${p.age} is not a u32`);
  }
  const name = utf8_encoder.encode(p.name), email = utf8_encoder.encode(p.email);
  const tags = p.tags.map((t) => utf8_encoder.encode(t));
  let at = PF_FIXED;
  const name_off = at;
  at += name.length;
  const email_off = at;
  at += email.length;
  const tag_refs = align8(at);
  at = tag_refs + 8 * tags.length;
  const tag_offs: number[] = [];
  for (const t of tags) {
    tag_offs.push(at);
    at += t.length;
  }
  const friends_off = align8(at);
  const size = friends_off + 8 * p.friends.length;
  if (size > 0xffffffff) {
    throw new VerbusError("BOUNDS", `profile blob of ${size} bytes exceeds 4 GiB`);
  }
  const blob = new Uint8Array(size);
  const dv = viewOf(blob);
  dv.setUint32(0, PROFILE_MAGIC, true);
  dv.setUint16(4, 1, true);
  dv.setUint16(6, PF_FIXED, true);
  dv.setUint32(8, size, true);
  dv.setUint32(12, p.active ? 1 : 0, true);
  dv.setBigUint64(16, p.id, true);
  dv.setBigUint64(24, BigInt(p.createdMs), true);
  dv.setFloat64(32, p.score, true);
  dv.setUint32(40, p.age, true);
  dv.setUint32(48, name_off, true);
  dv.setUint32(52, name.length, true);
  blob.set(name, name_off);
  dv.setUint32(56, email_off, true);
  dv.setUint32(60, email.length, true);
  blob.set(email, email_off);
  dv.setUint32(64, tag_refs, true);
  dv.setUint32(68, tags.length, true);
  for (let i = 0; i < tags.length; i++) {
    dv.setUint32(tag_refs + 8 * i, tag_offs[i], true);
    dv.setUint32(tag_refs + 8 * i + 4, tags[i].length, true);
    blob.set(tags[i], tag_offs[i]);
  }
  dv.setUint32(72, friends_off, true);
  dv.setUint32(76, p.friends.length, true);
  for (let i = 0; i < p.friends.length; i++) {
    const f = p.friends[i];
    if (f < 0n || f > 0xffffffffffffffffn) {
      throw new VerbusError("BOUNDS", `profile friend ${i} id ${f} is not a u64`);
    }
    dv.setBigUint64(friends_off + 8 * i, f, true);
  }
  return blob;
}

function readString(
  what: string,
  field: string,
  blob: Uint8Array,
  offset: number,
  length: number,
): string {
  checkRange(what, field, offset, length, PF_FIXED, blob.length);
  try {
    return utf8_decoder.decode(blob.subarray(offset, offset + length));
  } catch (cause) {
    throw new VerbusError("PROTOCOL", `${what}: ${field} is not valid UTF-8`, { cause });
  }
}

/** Decodes a composite-struct blob into a new {@link Profile} (copies everything out of `blob`). */
export function decodeProfile(blob: Uint8Array): Profile {
  const what = "profile blob";
  const dv = checkHeader(what, blob, PF_FIXED, PROFILE_MAGIC);
  const version = dv.getUint16(4, true),
    fixed = dv.getUint16(6, true),
    size = dv.getUint32(8, true);
  if (version !== 1) {
    throw new VerbusError("PROTOCOL", `${what}: unsupported version ${version}, expected 1`);
  }
  if (fixed !== PF_FIXED) {
    throw new VerbusError("PROTOCOL", `${what}: fixed_size ${fixed}, expected ${PF_FIXED}`);
  }
  if (size !== blob.length) {
    throw new VerbusError(
      "PROTOCOL",
      `${what}: blob_size field says ${size} bytes, the blob has ${blob.length}`,
    );
  }
  const flags = dv.getUint32(12, true);
  if ((flags & ~1) !== 0) {
    throw new VerbusError("PROTOCOL", `${what}: unknown flags 0x${flags.toString(16)}`);
  }
  const created = dv.getBigUint64(24, true);
  if (created > BigInt(Number.MAX_SAFE_INTEGER)) {
    throw new VerbusError("BOUNDS", `${what}: created_ms ${created} exceeds 2^53 - 1`);
  }
  const name = readString(what, "name", blob, dv.getUint32(48, true), dv.getUint32(52, true));
  const email = readString(what, "email", blob, dv.getUint32(56, true), dv.getUint32(60, true));
  const tag_refs = dv.getUint32(64, true), tag_count = dv.getUint32(68, true);
  checkRange(what, `tags (${tag_count} refs)`, tag_refs, tag_count * 8, PF_FIXED, size);
  const tags = new Array<string>(tag_count);
  for (let i = 0; i < tag_count; i++) {
    const r = tag_refs + 8 * i;
    tags[i] = readString(what, `tag ${i}`, blob, dv.getUint32(r, true), dv.getUint32(r + 4, true));
  }
  const friends_off = dv.getUint32(72, true), friend_count = dv.getUint32(76, true);
  checkRange(what, `friends (${friend_count} ids)`, friends_off, friend_count * 8, PF_FIXED, size);
  const friends = new Array<bigint>(friend_count);
  for (let i = 0; i < friend_count; i++) friends[i] = dv.getBigUint64(friends_off + 8 * i, true);
  return {
    id: dv.getBigUint64(16, true),
    name,
    email,
    age: dv.getUint32(40, true),
    score: dv.getFloat64(32, true),
    createdMs: Number(created),
    active: (flags & 1) === 1,
    tags,
    friends,
  };
}
