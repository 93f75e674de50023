/**
 * The demo service's in-memory key/value store: one instance per server process, shared by every
 * session and every path (TCP, shared memory, RDMA, URMA). Keys are UTF-8 strings, values are
 * bytes. The store is split into N shards (default 16) chosen by the 32-bit FNV-1a hash of the
 * key's UTF-8 bytes; each shard is its own `Map` with its own entry and byte counters, so no single
 * map grows past engine limits and per-shard load is observable.
 *
 * Memory: values live in buffers the store owns and reuses (a {@link BufferPool}): a put of a value
 * of the same size class as the key's old one overwrites the old buffer in place, and a replaced
 * or deleted value's buffer serves the next put of its class, so a steady stream of puts makes no
 * fresh `ArrayBuffer` per call (issue 12: a Bun server fed a fresh 20 KB BigPut value per call grew
 * to GBs before JSC collected). Every byte the store holds — keys, value buffers including their
 * unused tails, and free buffers kept for reuse — counts against `maxTotalBytes`; past it a put is
 * refused with `FULL` naming the limit.
 *
 * Ownership: {@link KvStore.put} copies the value (callers usually hand in a view into a transport
 * receive buffer that is reused after the call). A value returned by {@link KvStore.get} is a view
 * of the store's own buffer, shared with every other reader and valid until the next `put`,
 * `delete` or `clear` of that key (which may overwrite it in place): read it now, and copy what
 * you keep past the current synchronous turn.
 *
 * @module
 */
import { VerbusError } from "../../errors.ts";
import { BufferPool, sizeClass } from "../../util/buffer_pool.ts";

/** Default number of shards. */
export const KV_DEFAULT_SHARDS = 16;
/** Default maximum key length in UTF-8 bytes. */
export const KV_DEFAULT_MAX_KEY_BYTES = 1024;
/** Default maximum value length in bytes (covers BIGPUT values). */
export const KV_DEFAULT_MAX_VALUE_BYTES = 64 * 1024 * 1024;
/** Default maximum of all keys plus values held by one store. */
export const KV_DEFAULT_MAX_TOTAL_BYTES = 1024 * 1024 * 1024;

/** Limits and shape of a {@link KvStore}. */
export interface KvStoreOptions {
  /** Number of shards, 1..4096 (default {@link KV_DEFAULT_SHARDS}). */
  shards?: number;
  /** Longest key in UTF-8 bytes, 1..65535 (default {@link KV_DEFAULT_MAX_KEY_BYTES}). */
  maxKeyBytes?: number;
  /** Longest value in bytes (default {@link KV_DEFAULT_MAX_VALUE_BYTES}). */
  maxValueBytes?: number;
  /**
   * Most bytes the store may hold: keys plus value buffers plus free buffers kept for reuse
   * (default {@link KV_DEFAULT_MAX_TOTAL_BYTES}).
   */
  maxTotalBytes?: number;
  /** Free value buffers kept for reuse at most, in bytes (default {@link KV_DEFAULT_MAX_FREE_BYTES}). */
  maxFreeBytes?: number;
}

/** Default of {@link KvStoreOptions.maxFreeBytes}. */
export const KV_DEFAULT_MAX_FREE_BYTES = 64 * 1024 * 1024;

/** Buffer counters of a {@link KvStore}, as returned by {@link KvStore.memory}. */
export interface KvMemoryStats {
  /** Bytes counted against `maxTotalBytes`: keys, value buffers, free buffers. */
  reservedBytes: number;
  /** Free value buffers kept for reuse, in bytes. */
  freeBytes: number;
  /** Value buffers made (a fresh `ArrayBuffer` each). */
  allocations: number;
  /** Puts that overwrote the key's own buffer in place. */
  inPlace: number;
  /** Puts served by a free buffer of the class. */
  reuses: number;
}

/** One stored value: the store's buffer and the view of its `length` bytes that readers get. */
interface Entry {
  buf: Uint8Array;
  view: Uint8Array;
}

/** Counters of one shard, as returned by {@link KvStore.stats}. */
export interface KvShardStats {
  /** Number of keys in the shard. */
  entries: number;
  /** Key (UTF-8) plus value bytes held by the shard. */
  bytes: number;
}

/**
 * 32-bit FNV-1a over `bytes[start, end)` (defaults: the whole array). Returns an unsigned 32-bit
 * integer. Reads `bytes` only.
 */
export function fnv1a32(bytes: Uint8Array, start = 0, end = bytes.length): number {
  let h = 0x811c9dc5;
  for (let i = start; i < end; i++) h = Math.imul(h ^ bytes[i], 0x01000193);
  return h >>> 0;
}

const utf8_decoder = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });
const utf8_encoder = new TextEncoder();

function checkInteger(name: string, v: number, min: number, max: number): number {
  if (!Number.isInteger(v) || v < min || v > max) {
    throw new VerbusError(
      "INVALID_OPTIONS",
      `KvStore option ${name} must be an integer in ${min}..${max}, got ${v}`,
    );
  }
  return v;
}

/** The sharded key/value store. See the module documentation for ownership rules. */
export class KvStore {
  /** Number of shards. */
  readonly shardCount: number;
  /** Longest accepted key in UTF-8 bytes. */
  readonly maxKeyBytes: number;
  /** Longest accepted value in bytes. */
  readonly maxValueBytes: number;
  /** Most key + value bytes the store holds. */
  readonly maxTotalBytes: number;

  readonly #maps: Map<string, Entry>[];
  readonly #pool: BufferPool;
  #keyBytes = 0;
  #inPlace = 0;
  readonly #bytes: Float64Array; // per shard
  readonly #scratch: Uint8Array; // UTF-8 of a string key, reused by every call
  #total_bytes = 0;
  #entries = 0;

  constructor(options: KvStoreOptions = {}) {
    this.shardCount = checkInteger("shards", options.shards ?? KV_DEFAULT_SHARDS, 1, 4096);
    this.maxKeyBytes = checkInteger(
      "maxKeyBytes",
      options.maxKeyBytes ?? KV_DEFAULT_MAX_KEY_BYTES,
      1,
      65535,
    );
    this.maxValueBytes = checkInteger(
      "maxValueBytes",
      options.maxValueBytes ?? KV_DEFAULT_MAX_VALUE_BYTES,
      0,
      2 ** 31 - 1,
    );
    this.maxTotalBytes = checkInteger(
      "maxTotalBytes",
      options.maxTotalBytes ?? KV_DEFAULT_MAX_TOTAL_BYTES,
      1,
      Number.MAX_SAFE_INTEGER,
    );
    this.#pool = new BufferPool(checkInteger(
      "maxFreeBytes",
      options.maxFreeBytes ?? KV_DEFAULT_MAX_FREE_BYTES,
      0,
      Number.MAX_SAFE_INTEGER,
    ));
    this.#maps = Array.from({ length: this.shardCount }, () => new Map());
    this.#bytes = new Float64Array(this.shardCount);
    // +4: encodeInto never splits a code point, so a key of exactly maxKeyBytes always fits and a
    // longer one is detected by an incomplete read.
    this.#scratch = new Uint8Array(this.maxKeyBytes + 4);
  }

  /**
   * Validates `key` and returns `[string form, shard index, UTF-8 length]`. A `Uint8Array` key is
   * read only (never retained). Throws `INVALID_ARGUMENT` for an empty or malformed key and
   * `BOUNDS` for one longer than {@link maxKeyBytes}.
   */
  #resolve(key: string | Uint8Array): [string, number, number] {
    if (typeof key === "string") {
      if (key.length === 0) throw new VerbusError("INVALID_ARGUMENT", "KV key is empty");
      if (!key.isWellFormed()) {
        throw new VerbusError(
          "INVALID_ARGUMENT",
          "KV key is not well-formed Unicode (lone surrogate)",
        );
      }
      const { read, written } = utf8_encoder.encodeInto(key, this.#scratch);
      if (read !== key.length || written > this.maxKeyBytes) {
        throw new VerbusError(
          "BOUNDS",
          `KV key is longer than the limit of ${this.maxKeyBytes} UTF-8 bytes`,
          { context: { keyBytes: utf8_encoder.encode(key).length } },
        );
      }
      return [key, fnv1a32(this.#scratch, 0, written) % this.shardCount, written];
    }
    if (key.length === 0) throw new VerbusError("INVALID_ARGUMENT", "KV key is empty");
    if (key.length > this.maxKeyBytes) {
      throw new VerbusError(
        "BOUNDS",
        `KV key of ${key.length} bytes is longer than the limit of ${this.maxKeyBytes} bytes`,
      );
    }
    let text: string;
    try {
      text = utf8_decoder.decode(key);
    } catch (cause) {
      throw new VerbusError("INVALID_ARGUMENT", "KV key is not valid UTF-8", { cause });
    }
    return [text, fnv1a32(key) % this.shardCount, key.length];
  }

  /** The shard index (0..shardCount-1) that holds `key`. Validates the key like {@link get}. */
  shardOf(key: string | Uint8Array): number {
    return this.#resolve(key)[1];
  }

  /**
   * Stores a copy of `value` under `key`, replacing any previous value (in place when its buffer
   * is of the same size class). Returns `true` when a previous value was replaced. Throws `BOUNDS`
   * when the value is larger than {@link maxValueBytes} and `FULL` when the store would hold more
   * than {@link maxTotalBytes}; on any error the stored values are unchanged.
   */
  put(key: string | Uint8Array, value: Uint8Array): boolean {
    const [text, shard, key_bytes] = this.#resolve(key);
    if (value.length > this.maxValueBytes) {
      throw new VerbusError(
        "BOUNDS",
        `KV value of ${value.length} bytes for key "${text}" is larger than the limit of ${this.maxValueBytes} bytes`,
      );
    }
    const map = this.#maps[shard];
    const old = map.get(text);
    const freed = old === undefined ? 0 : key_bytes + old.view.length;
    const added = key_bytes + value.length;
    if (old !== undefined && old.buf.length === sizeClass(value.length)) {
      old.buf.set(value);
      if (old.view.length !== value.length) old.view = old.buf.subarray(0, value.length);
      this.#inPlace++;
    } else {
      // The old buffer (if any) is released after the new one is had: count it as freeable.
      const keys = this.#keyBytes + (old === undefined ? key_bytes : 0);
      const limit = this.maxTotalBytes - keys;
      const buf = this.#pool.acquire(value.length, limit + (old?.buf.length ?? 0));
      if (buf === undefined) {
        throw new VerbusError(
          "FULL",
          `KV store is full: storing ${added} bytes for key "${text}" would exceed ${this.maxTotalBytes} bytes`,
          { context: { totalBytes: this.#total_bytes, reservedBytes: this.reservedBytes } },
        );
      }
      buf.set(value);
      if (old !== undefined) this.#pool.release(old.buf);
      this.#pool.trim(limit);
      this.#keyBytes = keys;
      map.set(text, { buf, view: buf.subarray(0, value.length) });
    }
    this.#bytes[shard] += added - freed;
    this.#total_bytes += added - freed;
    if (old === undefined) this.#entries++;
    return old !== undefined;
  }

  /**
   * The value stored under `key` (read-only, shared, valid until the key's next put or delete —
   * see the module documentation), or `undefined` when there is none.
   */
  get(key: string | Uint8Array): Uint8Array | undefined {
    const [text, shard] = this.#resolve(key);
    return this.#maps[shard].get(text)?.view;
  }

  /** {@link get} for each key, in order; validation errors name the index of the bad key. */
  mget(keys: readonly (string | Uint8Array)[]): (Uint8Array | undefined)[] {
    const out = new Array<Uint8Array | undefined>(keys.length);
    for (let i = 0; i < keys.length; i++) {
      try {
        out[i] = this.get(keys[i]);
      } catch (e) {
        if (e instanceof VerbusError) {
          throw new VerbusError(e.code, `MGET key ${i}: ${e.message}`, {
            cause: e,
            context: e.context,
          });
        }
        throw e;
      }
    }
    return out;
  }

  /** Removes `key`; returns `true` when it existed. */
  delete(key: string | Uint8Array): boolean {
    const [text, shard, key_bytes] = this.#resolve(key);
    const map = this.#maps[shard];
    const old = map.get(text);
    if (old === undefined) return false;
    map.delete(text);
    this.#pool.release(old.buf);
    this.#keyBytes -= key_bytes;
    this.#bytes[shard] -= key_bytes + old.view.length;
    this.#total_bytes -= key_bytes + old.view.length;
    this.#entries--;
    return true;
  }

  /** Removes every key. */
  clear(): void {
    for (const m of this.#maps) m.clear();
    this.#pool.clear();
    this.#keyBytes = 0;
    this.#bytes.fill(0);
    this.#total_bytes = 0;
    this.#entries = 0;
  }

  /** Number of keys in the store. */
  get size(): number {
    return this.#entries;
  }

  /** Key plus value bytes held by the store. */
  get totalBytes(): number {
    return this.#total_bytes;
  }

  /** Bytes counted against {@link maxTotalBytes}: keys, value buffers and free buffers. */
  get reservedBytes(): number {
    return this.#keyBytes + this.#pool.reservedBytes;
  }

  /** Buffer counters (a fresh object owned by the caller). */
  memory(): KvMemoryStats {
    const s = this.#pool.stats;
    return {
      reservedBytes: this.reservedBytes,
      freeBytes: this.#pool.freeBytes,
      allocations: s.allocations,
      inPlace: this.#inPlace,
      reuses: s.reuses,
    };
  }

  /** Per-shard counters, indexed by shard (a fresh array owned by the caller). */
  stats(): KvShardStats[] {
    return this.#maps.map((m, i) => ({ entries: m.size, bytes: this.#bytes[i] }));
  }
}
