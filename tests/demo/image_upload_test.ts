/**
 * Chunked image upload: FNV-1a 64, the happy path (final file equals the input), and every refusal
 * (out of order, bad hash, bad length, oversized chunk, unknown id) leaving no final file and no
 * temp file behind.
 * @module
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { assert, assertEquals, assertThrows, test } from "../harness.ts";
import { VerbusError } from "../../errors.ts";
import { EREQUEST, RpcError } from "../../rpc/errors.ts";
import {
  decodeImageChunkResult,
  encodeImageChunk,
  type ImageChunk,
  UPLOAD_FLAG_ABORT,
  UPLOAD_FLAG_COMMIT,
  UPLOAD_FLAG_INIT,
  UPLOAD_STATE_ABORTED,
  UPLOAD_STATE_COMMITTED,
  UPLOAD_STATE_OPEN,
} from "../../examples/demo/codec.ts";
import {
  Fnv1a64,
  fnv1a64,
  IMAGE_CHUNK_MAX_BYTES,
  ImageUploadStore,
} from "../../examples/demo/image_upload.ts";
import { demoService } from "../../examples/demo/service.ts";
import { DemoClient } from "../../examples/demo/client.ts";
import { directCaller, tempDir } from "./util.ts";

const te = new TextEncoder();

/** Reference FNV-1a 64 in bigint arithmetic. */
function reference(bytes: Uint8Array): bigint {
  let h = 0xcbf29ce484222325n;
  for (const b of bytes) h = ((h ^ BigInt(b)) * 0x100000001b3n) & 0xffffffffffffffffn;
  return h;
}

function image(n: number, seed = 1): Uint8Array {
  const out = new Uint8Array(n);
  let s = seed;
  for (let i = 0; i < n; i++) out[i] = (s = (Math.imul(s, 1103515245) + 12345) >>> 0) >>> 24;
  return out;
}

function chunk(over: Partial<ImageChunk>): ImageChunk {
  return {
    uploadId: 1n,
    totalLength: 0,
    offset: 0,
    flags: 0,
    hash: 0n,
    name: "",
    data: new Uint8Array(0),
    ...over,
  };
}

/** Runs `fn` in a fresh image dir with a store; checks the dir ends up holding exactly `expect`. */
function withStore(fn: (store: ImageUploadStore, dir: string) => void): void {
  const d = tempDir();
  try {
    fn(new ImageUploadStore({ imageDir: d.path, durable: false }), d.path);
  } finally {
    d.remove();
  }
}

test("fnv1a64 matches the published vectors and a bigint reference, incrementally", () => {
  assertEquals(fnv1a64(new Uint8Array(0)), 0xcbf29ce484222325n);
  assertEquals(fnv1a64(te.encode("a")), 0xaf63dc4c8601ec8cn);
  assertEquals(fnv1a64(te.encode("foobar")), 0x85944171f73967e8n);
  const data = image(5000, 7);
  assertEquals(fnv1a64(data), reference(data));
  const h = new Fnv1a64();
  for (let i = 0; i < data.length; i += 333) h.update(data, i, Math.min(data.length, i + 333));
  assertEquals(h.digest(), reference(data), "rolling equals one-shot");
  assertEquals(h.reset().digest(), 0xcbf29ce484222325n);
});

test("happy path through the client: final file bytes equal the input, no temp left", async () => {
  const d = tempDir();
  try {
    const client = new DemoClient(
      directCaller(demoService({ imageDir: d.path, upload: { durable: true } })),
    );
    for (
      const [name, size, chunkSize] of [
        ["a.jpg", 100_000, 24 * 1024],
        ["b.png", 24 * 1024, 24 * 1024],
        ["c.raw", 1, 1000],
        ["empty.gif", 0, 4096],
        ["d.bin", 50_001, 7],
      ] as const
    ) {
      const bytes = image(size, size + 3);
      const r = await client.imagePut(name, bytes, chunkSize);
      assertEquals(r.bytes, size);
      assertEquals(r.chunks, Math.max(1, Math.ceil(size / chunkSize)), `${name} chunks`);
      assertEquals(r.hash, reference(bytes));
      assertEquals(new Uint8Array(readFileSync(join(d.path, name))), bytes, name);
    }
    assertEquals(readdirSync(d.path).sort(), ["a.jpg", "b.png", "c.raw", "d.bin", "empty.gif"]);
  } finally {
    d.remove();
  }
});

test("an out-of-order chunk is refused, the temp file removed, no final file", () => {
  withStore((store, dir) => {
    const data = image(3000);
    const r = store.handleChunk(
      chunk({
        flags: UPLOAD_FLAG_INIT,
        name: "x.jpg",
        totalLength: 3000,
        data: data.subarray(0, 1000),
      }),
    );
    assertEquals(r, {
      received: 1000,
      state: UPLOAD_STATE_OPEN,
      serverHash: reference(data.subarray(0, 1000)),
    });
    assertEquals(readdirSync(dir).length, 1, "temp file exists while open");
    assert(readdirSync(dir)[0].startsWith(".x.jpg."), readdirSync(dir)[0]);
    const e = assertThrows(
      () =>
        store.handleChunk(chunk({ totalLength: 3000, offset: 2000, data: data.subarray(2000) })),
      VerbusError,
      "out of order: offset 2000, expected 1000",
    );
    assertEquals(e.code, "PROTOCOL");
    assertEquals(readdirSync(dir), [], "temp removed, no final file");
    assertEquals(store.openUploads, 0);
    const gone = assertThrows(
      () =>
        store.handleChunk(
          chunk({ totalLength: 3000, offset: 1000, data: data.subarray(1000, 2000) }),
        ),
      VerbusError,
      "no open upload",
    );
    assertEquals(gone.code, "NOT_FOUND");
  });
});

test("a bad hash or bad length at COMMIT is refused with no final file", () => {
  withStore((store, dir) => {
    const data = image(2000);
    store.handleChunk(
      chunk({
        uploadId: 9n,
        flags: UPLOAD_FLAG_INIT,
        name: "h.jpg",
        totalLength: 2000,
        data: data.subarray(0, 1000),
      }),
    );
    const e = assertThrows(
      () =>
        store.handleChunk(
          chunk({
            uploadId: 9n,
            flags: UPLOAD_FLAG_COMMIT,
            totalLength: 2000,
            offset: 1000,
            hash: reference(data) ^ 1n,
            data: data.subarray(1000),
          }),
        ),
      VerbusError,
      "FNV-1a 64 mismatch",
    );
    assertEquals(e.code, "INTEGRITY");
    assertEquals(readdirSync(dir), []);
    // COMMIT before all bytes arrived
    store.handleChunk(
      chunk({
        uploadId: 10n,
        flags: UPLOAD_FLAG_INIT,
        name: "l.jpg",
        totalLength: 2000,
        data: data.subarray(0, 1000),
      }),
    );
    const l = assertThrows(
      () =>
        store.handleChunk(
          chunk({
            uploadId: 10n,
            flags: UPLOAD_FLAG_COMMIT,
            totalLength: 2000,
            offset: 1000,
            hash: reference(data.subarray(0, 1500)),
            data: data.subarray(1000, 1500),
          }),
        ),
      VerbusError,
      "COMMIT after 1500 bytes, but the total length is 2000",
    );
    assertEquals(l.code, "INTEGRITY");
    // a chunk running past the total, and a chunk changing the total
    store.handleChunk(
      chunk({
        uploadId: 11n,
        flags: UPLOAD_FLAG_INIT,
        name: "p.jpg",
        totalLength: 1500,
        data: data.subarray(0, 1000),
      }),
    );
    assertThrows(
      () =>
        store.handleChunk(
          chunk({ uploadId: 11n, totalLength: 1500, offset: 1000, data: data.subarray(1000) }),
        ),
      VerbusError,
      "runs past the total length 1500",
    );
    store.handleChunk(
      chunk({
        uploadId: 12n,
        flags: UPLOAD_FLAG_INIT,
        name: "q.jpg",
        totalLength: 1500,
        data: data.subarray(0, 1000),
      }),
    );
    assertThrows(
      () =>
        store.handleChunk(
          chunk({
            uploadId: 12n,
            totalLength: 1600,
            offset: 1000,
            data: data.subarray(1000, 1100),
          }),
        ),
      VerbusError,
      "total length 1600, INIT said 1500",
    );
    assertEquals(readdirSync(dir), []);
    assertEquals(store.openUploads, 0);
  });
});

test("a chunk larger than 24 KiB is refused and aborts the upload", () => {
  withStore((store, dir) => {
    const data = image(IMAGE_CHUNK_MAX_BYTES + 1);
    const first = assertThrows(
      () =>
        store.handleChunk(
          chunk({
            flags: UPLOAD_FLAG_INIT | UPLOAD_FLAG_COMMIT,
            name: "big.jpg",
            totalLength: data.length,
            hash: reference(data),
            data,
          }),
        ),
      VerbusError,
      "chunk of 24577 bytes exceeds the limit of 24576",
    );
    assertEquals(first.code, "BOUNDS");
    assertEquals(readdirSync(dir), []);
    store.handleChunk(
      chunk({
        uploadId: 2n,
        flags: UPLOAD_FLAG_INIT,
        name: "big.jpg",
        totalLength: 100_000,
        data: data.subarray(0, 10),
      }),
    );
    assertThrows(
      () => store.handleChunk(chunk({ uploadId: 2n, totalLength: 100_000, offset: 10, data })),
      VerbusError,
      "exceeds the limit",
    );
    assertEquals(readdirSync(dir), []);
    assertThrows(
      () => new ImageUploadStore({ imageDir: dir, maxChunkBytes: 32 * 1024 }),
      VerbusError,
      "maxChunkBytes",
    );
  });
});

test("INIT checks: safe names, offset 0, size limit, duplicate ids, upload limit; ABORT and close clean up", () => {
  const d = tempDir();
  try {
    const store = new ImageUploadStore({
      imageDir: d.path,
      maxImageBytes: 1000,
      maxUploads: 2,
      durable: false,
    });
    for (const name of ["../evil", "a/b", ".hidden", "", "x".repeat(129), "-rf"]) {
      assertEquals(
        assertThrows(
          () => store.handleChunk(chunk({ flags: UPLOAD_FLAG_INIT, name, totalLength: 1 })),
          VerbusError,
          "bad image name",
        ).code,
        "INVALID_ARGUMENT",
      );
    }
    assertThrows(
      () => store.handleChunk(chunk({ flags: UPLOAD_FLAG_INIT, name: "a", totalLength: 1001 })),
      VerbusError,
      "exceeds the limit of 1000",
    );
    assertThrows(
      () =>
        store.handleChunk(
          chunk({ flags: UPLOAD_FLAG_INIT, name: "a", totalLength: 10, offset: 5 }),
        ),
      VerbusError,
      "offset 0",
    );
    store.handleChunk(chunk({ uploadId: 1n, flags: UPLOAD_FLAG_INIT, name: "a", totalLength: 10 }));
    assertThrows(
      () =>
        store.handleChunk(
          chunk({ uploadId: 1n, flags: UPLOAD_FLAG_INIT, name: "b", totalLength: 10 }),
        ),
      VerbusError,
      "already open",
    );
    assertEquals(store.openUploads, 1, "a duplicate INIT does not kill the open upload");
    store.handleChunk(chunk({ uploadId: 2n, flags: UPLOAD_FLAG_INIT, name: "b", totalLength: 10 }));
    assertEquals(
      assertThrows(
        () =>
          store.handleChunk(
            chunk({ uploadId: 3n, flags: UPLOAD_FLAG_INIT, name: "c", totalLength: 10 }),
          ),
        VerbusError,
        "2 uploads are already open",
      ).code,
      "FULL",
    );
    assertEquals(
      store.handleChunk(chunk({ uploadId: 1n, flags: UPLOAD_FLAG_ABORT, totalLength: 10 })).state,
      UPLOAD_STATE_ABORTED,
    );
    assertEquals(
      store.handleChunk(chunk({ uploadId: 1n, flags: UPLOAD_FLAG_ABORT })).state,
      UPLOAD_STATE_ABORTED,
      "repeated ABORT is harmless",
    );
    assertEquals(readdirSync(d.path).length, 1);
    store.close();
    assertEquals(readdirSync(d.path), []);
  } finally {
    d.remove();
  }
});

test("ImagePut handler: a refused chunk is a bad request; a completed upload replaces atomically", async () => {
  const d = tempDir();
  try {
    const svc = demoService({ imageDir: d.path })["verbus.Demo"];
    const data = image(100);
    const commit = (id: bigint, hash: bigint) =>
      svc.ImagePut(
        encodeImageChunk(
          chunk({
            uploadId: id,
            flags: UPLOAD_FLAG_INIT | UPLOAD_FLAG_COMMIT,
            name: "one.png",
            totalLength: 100,
            hash,
            data,
          }),
        ),
        {},
      );
    assertEquals(
      decodeImageChunkResult(await commit(5n, reference(data))).state,
      UPLOAD_STATE_COMMITTED,
    );
    let err: unknown;
    try {
      await commit(6n, 123n);
    } catch (e) {
      err = e;
    }
    assert(
      err instanceof RpcError && err.errorCode === EREQUEST &&
        err.errorText.includes("FNV-1a 64 mismatch"),
      String(err),
    );
    assertEquals(
      new Uint8Array(readFileSync(join(d.path, "one.png"))),
      data,
      "the earlier file is untouched",
    );
    assertEquals(readdirSync(d.path), ["one.png"]);
    assert(!existsSync(join(d.path, ".one.png.0000000000000006.part")));
  } finally {
    d.remove();
  }
});
