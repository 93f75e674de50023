/**
 * MurmurHash3_x86_32 (Austin Appleby's public-domain hash, as brpc's `butil` carries it), and
 * brpc's `MurmurHash32(key, len)` (seed 0). The consistent-hashing balancer places its ring
 * points with it, and users make request codes with it as brpc users do
 * (`cntl.set_request_code(brpc::policy::MurmurHash32(key.data(), key.size()))`): the same key gives
 * the same code, and so the same server, in a verbus client and a brpc client.
 *
 * Pure; any thread. No allocation beyond what encoding a string key takes.
 * @module
 */

const C1 = 0xcc9e2d51;
const C2 = 0x1b873593;

/** 32-bit rotate left. */
function rotl(x: number, r: number): number {
  return (x << r) | (x >>> (32 - r));
}

/**
 * MurmurHash3_x86_32 of `bytes` with `seed`: an unsigned 32-bit number. Reads `bytes` only (the
 * caller keeps it). Blocks are read little-endian, as the reference does on x86.
 */
export function murmurHash3_x86_32(bytes: Uint8Array, seed = 0): number {
  const len = bytes.length;
  const nblocks = len >>> 2;
  let h = seed >>> 0;
  let i = 0;
  for (let b = 0; b < nblocks; b++, i += 4) {
    let k = bytes[i] | (bytes[i + 1] << 8) | (bytes[i + 2] << 16) | (bytes[i + 3] << 24);
    k = Math.imul(k, C1);
    k = rotl(k, 15);
    k = Math.imul(k, C2);
    h ^= k;
    h = rotl(h, 13);
    h = (Math.imul(h, 5) + 0xe6546b64) | 0;
  }
  let k = 0;
  switch (len & 3) {
    case 3:
      k ^= bytes[i + 2] << 16;
    // falls through
    case 2:
      k ^= bytes[i + 1] << 8;
    // falls through
    case 1:
      k ^= bytes[i];
      k = Math.imul(k, C1);
      k = rotl(k, 15);
      k = Math.imul(k, C2);
      h ^= k;
  }
  h ^= len;
  // fmix32: the avalanche step.
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

const utf8 = new TextEncoder();

/**
 * brpc's `MurmurHash32`: MurmurHash3_x86_32 with seed 0 of the key's bytes (a string is taken as
 * UTF-8). Use it to make a request code from a key for `c_murmurhash`.
 */
export function murmurHash32(key: string | Uint8Array): number {
  return murmurHash3_x86_32(typeof key === "string" ? utf8.encode(key) : key, 0);
}
