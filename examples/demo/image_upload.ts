/**
 * Chunked image upload for the demo service (the 64-bit FNV-1a hash both ends roll over it is in
 * `fnv1a.ts`, re-exported here).
 *
 * Protocol (one {@link ImageChunk} per call): the first chunk has flag INIT and the final file name;
 * every chunk carries the upload id, the total length, its offset and its bytes (at most
 * {@link IMAGE_CHUNK_MAX_BYTES}); the last chunk has flag COMMIT and the client's FNV-1a 64 of the
 * whole file. The server requires `offset == bytes received so far`, appends the bytes to a
 * hidden temp file in the image directory while rolling its own hash, and on COMMIT compares hash
 * and total length and renames the temp file atomically to the final name. Any refused chunk of an
 * active upload aborts it: the temp file is removed and no final file appears.
 *
 * File I/O is synchronous (`node:fs`, works on Deno and Bun): a chunk is at most 24 KiB and is
 * written before the handler returns, so chunk bytes — usually a view into a transport buffer —
 * are never retained.
 *
 * @module
 */
import {
  closeSync,
  fsyncSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  renameSync,
  rmSync,
  unlinkSync,
  writeSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import process from "node:process";
import { VerbusError } from "../../errors.ts";
import {
  type ImageChunk,
  type ImageChunkResult,
  UPLOAD_FLAG_ABORT,
  UPLOAD_FLAG_COMMIT,
  UPLOAD_FLAG_INIT,
  UPLOAD_STATE_ABORTED,
  UPLOAD_STATE_COMMITTED,
  UPLOAD_STATE_OPEN,
} from "./image_codec.ts";

/** Default chunk size of an image upload: 24 KiB. */
export const IMAGE_CHUNK_DEFAULT_BYTES = 24 * 1024;
/** Largest accepted chunk: 24 KiB. */
export const IMAGE_CHUNK_MAX_BYTES = 24 * 1024;
/** Default largest image: 64 MiB. */
export const IMAGE_DEFAULT_MAX_BYTES = 64 * 1024 * 1024;

import { Fnv1a64 } from "./fnv1a.ts";
export { Fnv1a64, fnv1a64 } from "./fnv1a.ts";

const NAME_RE = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;

/**
 * Throws `INVALID_ARGUMENT` unless `name` is a safe final file name: 1..128 characters of
 * `[A-Za-z0-9._-]`, not starting with `.` or `-` (so never a path, never a hidden temp name).
 */
export function checkImageName(name: string): void {
  if (!NAME_RE.test(name)) {
    throw new VerbusError(
      "INVALID_ARGUMENT",
      `bad image name "${
        name.slice(0, 64)
      }": use 1..128 characters of [A-Za-z0-9._-], starting with a letter or digit`,
    );
  }
}

/** Options of an {@link ImageUploadStore}. */
export interface ImageUploadOptions {
  /**
   * Directory of final images and temp files, created (if missing) at the first upload and kept.
   * Without it the store makes a private `<tmpdir>/verbus-images-XXXXXX` at the first upload and
   * removes it, images included, on {@link ImageUploadStore.close} or when the process exits:
   * a server that never receives an image leaves no directory.
   */
  imageDir?: string;
  /** Largest accepted chunk (default and upper bound {@link IMAGE_CHUNK_MAX_BYTES}). */
  maxChunkBytes?: number;
  /** Largest image (default {@link IMAGE_DEFAULT_MAX_BYTES}). */
  maxImageBytes?: number;
  /** Most uploads open at once (default 64). */
  maxUploads?: number;
  /** An upload idle this long is aborted at the next INIT (default 60 000 ms). */
  idleTimeoutMs?: number;
  /** fsync the temp file before the rename on COMMIT (default true). */
  durable?: boolean;
}

interface Upload {
  /** The directory it is written into (a close() between chunks aborts it first). */
  readonly dir: string;
  readonly id: bigint;
  readonly name: string;
  readonly total: number;
  readonly fd: number;
  readonly temp_path: string;
  readonly hash: Fnv1a64;
  received: number;
  last_active: number;
}

/** The uploads of one demo service: shared by all sessions, keyed by the client-chosen upload id. */
export class ImageUploadStore {
  /** The directory given in the options, if any. */
  readonly #givenDir: string | undefined;
  /** The directory in use: the given one once made, or the private one; undefined before. */
  #dir: string | undefined;
  /** Removes the private directory when the process exits (registered while it exists). */
  #onExit: (() => void) | undefined;
  /** Largest accepted chunk. */
  readonly maxChunkBytes: number;
  /** Largest image. */
  readonly maxImageBytes: number;
  /** Most uploads open at once. */
  readonly maxUploads: number;
  /** Idle time after which an upload is aborted. */
  readonly idleTimeoutMs: number;
  /** Whether COMMIT fsyncs before renaming. */
  readonly durable: boolean;
  readonly #uploads = new Map<bigint, Upload>();

  constructor(options: ImageUploadOptions) {
    this.#givenDir = options.imageDir;
    this.maxChunkBytes = options.maxChunkBytes ?? IMAGE_CHUNK_MAX_BYTES;
    this.maxImageBytes = options.maxImageBytes ?? IMAGE_DEFAULT_MAX_BYTES;
    this.maxUploads = options.maxUploads ?? 64;
    this.idleTimeoutMs = options.idleTimeoutMs ?? 60_000;
    this.durable = options.durable ?? true;
    const bad = (what: string, v: number) =>
      new VerbusError("INVALID_OPTIONS", `ImageUploadStore option ${what}, got ${v}`);
    const dir = this.#givenDir;
    if (dir !== undefined && (typeof dir !== "string" || dir === "")) {
      throw new VerbusError("INVALID_OPTIONS", "ImageUploadStore: imageDir must be a path");
    }
    if (
      !Number.isInteger(this.maxChunkBytes) || this.maxChunkBytes < 1 ||
      this.maxChunkBytes > IMAGE_CHUNK_MAX_BYTES
    ) {
      throw bad(`maxChunkBytes must be in 1..${IMAGE_CHUNK_MAX_BYTES}`, this.maxChunkBytes);
    }
    if (!Number.isSafeInteger(this.maxImageBytes) || this.maxImageBytes < 0) {
      throw bad("maxImageBytes must be a non-negative integer", this.maxImageBytes);
    }
    if (!Number.isInteger(this.maxUploads) || this.maxUploads < 1) {
      throw bad("maxUploads must be >= 1", this.maxUploads);
    }
    if (!(this.idleTimeoutMs > 0)) throw bad("idleTimeoutMs must be > 0", this.idleTimeoutMs);
  }

  /**
   * The directory of images: the given one, or the private one once the first upload made it
   * (undefined before that, and again after {@link close} removed it).
   */
  get imageDir(): string | undefined {
    return this.#givenDir ?? this.#dir;
  }

  /** The directory to write into, made now if it does not exist yet. */
  #directory(): string {
    if (this.#dir !== undefined) return this.#dir;
    if (this.#givenDir !== undefined) {
      mkdirSync(this.#givenDir, { recursive: true });
      return (this.#dir = this.#givenDir);
    }
    const dir = mkdtempSync(join(tmpdir(), "verbus-images-"));
    // A process that ends without close() (a CLI's normal exit, process.exit) still removes it.
    this.#onExit = () => rmSync(dir, { recursive: true, force: true });
    process.once("exit", this.#onExit);
    return (this.#dir = dir);
  }

  /** Number of uploads currently open. */
  get openUploads(): number {
    return this.#uploads.size;
  }

  /** The path a committed image named `name` has (validates the name). */
  finalPath(name: string): string {
    checkImageName(name);
    return join(this.#directory(), name);
  }

  /**
   * Applies one chunk. `chunk.data` is read before this returns and never retained. Returns the
   * upload's state after the chunk; throws a {@link VerbusError} naming what was wrong (`PROTOCOL`
   * out of order / duplicate id, `BOUNDS` sizes, `INTEGRITY` hash or length mismatch at COMMIT,
   * `NOT_FOUND` unknown id, `FULL` too many uploads, `INVALID_ARGUMENT` bad name), after aborting
   * the upload the chunk belongs to.
   */
  handleChunk(chunk: ImageChunk): ImageChunkResult {
    const now = Date.now();
    let up: Upload;
    if ((chunk.flags & UPLOAD_FLAG_INIT) !== 0) {
      this.#sweep(now);
      up = this.#open(chunk, now);
    } else {
      const found = this.#uploads.get(chunk.uploadId);
      if (found === undefined) {
        if ((chunk.flags & UPLOAD_FLAG_ABORT) !== 0) {
          return { received: 0, state: UPLOAD_STATE_ABORTED, serverHash: 0n };
        }
        throw new VerbusError(
          "NOT_FOUND",
          `image upload ${
            hex(chunk.uploadId)
          }: no open upload with this id (never started with INIT, already committed, or aborted)`,
        );
      }
      up = found;
    }
    if ((chunk.flags & UPLOAD_FLAG_ABORT) !== 0) {
      this.#abort(up);
      return { received: up.received, state: UPLOAD_STATE_ABORTED, serverHash: up.hash.digest() };
    }
    try {
      this.#append(up, chunk, now);
      if ((chunk.flags & UPLOAD_FLAG_COMMIT) !== 0) {
        this.#commit(up, chunk);
        return {
          received: up.received,
          state: UPLOAD_STATE_COMMITTED,
          serverHash: up.hash.digest(),
        };
      }
    } catch (e) {
      this.#abort(up);
      throw e;
    }
    return { received: up.received, state: UPLOAD_STATE_OPEN, serverHash: up.hash.digest() };
  }

  /**
   * Aborts every open upload and removes its temp file; removes the private image directory (and
   * the images in it), if the store made one. A given `imageDir` and its images stay. The store
   * stays usable (a later upload makes a new private directory).
   */
  close(): void {
    for (const up of [...this.#uploads.values()]) this.#abort(up);
    if (this.#onExit !== undefined) {
      process.off("exit", this.#onExit);
      this.#onExit();
      this.#onExit = undefined;
      this.#dir = undefined;
    }
  }

  #open(chunk: ImageChunk, now: number): Upload {
    const id = hex(chunk.uploadId);
    if (this.#uploads.has(chunk.uploadId)) {
      throw new VerbusError(
        "PROTOCOL",
        `image upload ${id}: INIT for an upload id that is already open`,
      );
    }
    checkImageName(chunk.name);
    if (chunk.offset !== 0) {
      throw new VerbusError(
        "PROTOCOL",
        `image upload ${id}: INIT chunk must have offset 0, got ${chunk.offset}`,
      );
    }
    if (chunk.totalLength > this.maxImageBytes) {
      throw new VerbusError(
        "BOUNDS",
        `image upload ${id}: total length ${chunk.totalLength} exceeds the limit of ${this.maxImageBytes} bytes`,
      );
    }
    if (this.#uploads.size >= this.maxUploads) {
      throw new VerbusError(
        "FULL",
        `image upload ${id}: ${this.maxUploads} uploads are already open`,
      );
    }
    const dir = this.#directory();
    const temp_path = join(dir, `.${chunk.name}.${id}.part`);
    const fd = openSync(temp_path, "wx", 0o644);
    const up: Upload = {
      dir,
      id: chunk.uploadId,
      name: chunk.name,
      total: chunk.totalLength,
      fd,
      temp_path,
      hash: new Fnv1a64(),
      received: 0,
      last_active: now,
    };
    this.#uploads.set(up.id, up);
    return up;
  }

  #append(up: Upload, chunk: ImageChunk, now: number): void {
    const id = hex(up.id);
    const n = chunk.data.length;
    if (n > this.maxChunkBytes) {
      throw new VerbusError(
        "BOUNDS",
        `image upload ${id}: chunk of ${n} bytes exceeds the limit of ${this.maxChunkBytes} bytes`,
      );
    }
    if (chunk.totalLength !== up.total) {
      throw new VerbusError(
        "PROTOCOL",
        `image upload ${id}: chunk says total length ${chunk.totalLength}, INIT said ${up.total}`,
      );
    }
    if (chunk.offset !== up.received) {
      throw new VerbusError(
        "PROTOCOL",
        `image upload ${id}: chunk out of order: offset ${chunk.offset}, expected ${up.received} (bytes received so far)`,
      );
    }
    if (up.received + n > up.total) {
      throw new VerbusError(
        "BOUNDS",
        `image upload ${id}: chunk at ${chunk.offset} of ${n} bytes runs past the total length ${up.total}`,
      );
    }
    let done = 0;
    while (done < n) done += writeSync(up.fd, chunk.data, done, n - done, up.received + done);
    up.hash.update(chunk.data);
    up.received += n;
    up.last_active = now;
  }

  #commit(up: Upload, chunk: ImageChunk): void {
    const id = hex(up.id);
    if (up.received !== up.total) {
      throw new VerbusError(
        "INTEGRITY",
        `image upload ${id}: COMMIT after ${up.received} bytes, but the total length is ${up.total}`,
      );
    }
    const server = up.hash.digest();
    if (server !== chunk.hash) {
      throw new VerbusError(
        "INTEGRITY",
        `image upload ${id}: FNV-1a 64 mismatch: client ${hex(chunk.hash)}, server ${hex(server)}`,
      );
    }
    if (this.durable) fsyncSync(up.fd);
    closeSync(up.fd);
    this.#uploads.delete(up.id);
    try {
      renameSync(up.temp_path, join(up.dir, up.name));
    } catch (e) {
      try {
        unlinkSync(up.temp_path);
      } catch { /* already gone */ }
      throw new VerbusError("NATIVE_CALL", `image upload ${id}: rename to ${up.name} failed`, {
        cause: e,
      });
    }
  }

  #abort(up: Upload): void {
    if (!this.#uploads.delete(up.id)) return;
    try {
      closeSync(up.fd);
    } catch { /* closed by a failed commit */ }
    try {
      unlinkSync(up.temp_path);
    } catch { /* never created or already removed */ }
  }

  #sweep(now: number): void {
    for (const up of [...this.#uploads.values()]) {
      if (now - up.last_active > this.idleTimeoutMs) this.#abort(up);
    }
  }
}

function hex(v: bigint): string {
  return v.toString(16).padStart(16, "0");
}
