/**
 * Demo codecs: round trips of every request / response, the MGET dynamic array and PROFILE
 * composite struct (including hostile blobs that must fail cleanly without reading outside the
 * blob), and brpc's EchoRequest with its required field.
 * @module
 */
import { assert, assertEquals, assertThrows, test } from "../harness.ts";
import { VerbusError } from "../../errors.ts";
import { BinaryWriter, WireType } from "@bufbuild/protobuf/wire";
import {
  decodeDynamicArray,
  decodeEchoMessage,
  decodeGetResponse,
  decodeImageChunk,
  decodeImageChunkResult,
  decodeKeyRequest,
  decodeMGetRequest,
  decodePingRequest,
  decodePingResponse,
  decodeProfile,
  decodeProfileRequest,
  decodePutRequest,
  decodePutResponse,
  encodeDynamicArray,
  encodeEchoMessage,
  encodeGetResponse,
  encodeImageChunk,
  encodeImageChunkResult,
  encodeKeyRequest,
  encodeMGetRequest,
  encodePingRequest,
  encodePingResponse,
  encodeProfile,
  encodeProfileRequest,
  encodePutRequest,
  encodePutResponse,
  type Profile,
} from "../../examples/demo/codec.ts";
import { syntheticProfile } from "../../examples/demo/service.ts";

const te = new TextEncoder();
const dv = (b: Uint8Array) => new DataView(b.buffer, b.byteOffset, b.byteLength);

/** Runs `fn`, requires a VerbusError of one of `codes` whose message includes `text`. */
function refused(
  fn: () => unknown,
  text: string,
  codes = ["PROTOCOL", "BOUNDS"],
  label = "",
): void {
  try {
    const e = assertThrows(fn, VerbusError, text);
    assert(codes.includes(e.code), `code ${e.code} not in ${codes}`);
  } catch (e) {
    if (label === "") throw e;
    throw new Error(`${label}: ${(e as Error).message}`, { cause: e });
  }
}

/** Places `blob` in the middle of a larger buffer so any read outside it would find canaries. */
function embedded(blob: Uint8Array): Uint8Array {
  const backing = new Uint8Array(blob.length + 128).fill(0xee);
  backing.set(blob, 64);
  return backing.subarray(64, 64 + blob.length);
}

test("operation requests and responses round-trip", () => {
  assertEquals(decodePingRequest(encodePingRequest(0xfedcba9876543210n)), 0xfedcba9876543210n);
  assertEquals(decodePingRequest(new Uint8Array(0)), 0n);
  assertEquals(decodePingResponse(encodePingResponse({ nonce: 5n, serverTimeUs: 77n })), {
    nonce: 5n,
    serverTimeUs: 77n,
  });
  assertEquals(decodeKeyRequest(encodeKeyRequest("ключ")), te.encode("ключ"));
  const put = decodePutRequest(encodePutRequest("k", new Uint8Array([1, 2, 3])));
  assertEquals([put.key, put.value], [te.encode("k"), new Uint8Array([1, 2, 3])]);
  assertEquals(decodePutResponse(encodePutResponse({ replaced: true, length: 2 ** 40 })), {
    replaced: true,
    length: 2 ** 40,
  });
  assertEquals(decodeGetResponse(encodeGetResponse(new Uint8Array([9]))), new Uint8Array([9]));
  assertEquals(
    decodeGetResponse(encodeGetResponse(new Uint8Array(0))),
    new Uint8Array(0),
    "empty value is found",
  );
  assertEquals(decodeGetResponse(encodeGetResponse(undefined)), undefined);
  assertEquals(decodeMGetRequest(encodeMGetRequest(["a", "", "ccc"])), [
    te.encode("a"),
    new Uint8Array(0),
    te.encode("ccc"),
  ]);
  assertEquals(decodeProfileRequest(encodeProfileRequest(2n ** 64n - 1n)), 2n ** 64n - 1n);
  const chunk = {
    uploadId: 2n ** 63n + 5n,
    totalLength: 100,
    offset: 0,
    flags: 3,
    hash: 0xcbf29ce484222325n,
    name: "cat.png",
    data: new Uint8Array([4, 5]),
  };
  assertEquals(decodeImageChunk(encodeImageChunk(chunk)), chunk);
  const result = { received: 100, state: 1, serverHash: 0xffffffffffffffffn };
  assertEquals(decodeImageChunkResult(encodeImageChunkResult(result)), result);
});

test("malformed operation requests are refused naming the field", () => {
  refused(() => decodePingRequest(new Uint8Array(3)), "Ping request: 3 bytes");
  refused(() => decodeKeyRequest(new Uint8Array(2)), "at least 4");
  const key = encodeKeyRequest("abc");
  dv(key).setUint32(0, 4);
  refused(() => decodeKeyRequest(key), "key_len 67108864");
  const put = encodePutRequest("k", new Uint8Array(4));
  dv(put).setUint32(4, 0xffffffff, true);
  refused(() => decodePutRequest(put), "value_len 4294967295");
  const mget = encodeMGetRequest(["a", "b"]);
  dv(mget).setUint32(4 + 5, 1000, true); // second key length
  refused(() => decodeMGetRequest(mget), "key 1 of 1000 bytes");
  const many = new Uint8Array(8);
  dv(many).setUint32(0, 0xffffffff, true);
  refused(() => decodeMGetRequest(many), "exceeds the limit");
  refused(
    () => decodeMGetRequest(encodeMGetRequest(["a", "b", "c"]), 2),
    "3 keys exceeds the limit of 2",
  );
  const trailing = new Uint8Array([...encodeMGetRequest(["a"]), 0]);
  refused(() => decodeMGetRequest(trailing), "1 trailing bytes");
  const chunk = encodeImageChunk({
    uploadId: 1n,
    totalLength: 4,
    offset: 0,
    flags: 1,
    hash: 0n,
    name: "x",
    data: new Uint8Array(4),
  });
  dv(chunk).setUint32(24, 5, true);
  refused(() => decodeImageChunk(chunk), "chunk_length 5");
  dv(chunk).setUint32(24, 4, true);
  dv(chunk).setUint32(28, 8, true);
  refused(() => decodeImageChunk(chunk), "unknown flags 0x8");
  dv(chunk).setUint32(28, 2, true);
  refused(() => decodeImageChunk(chunk), "only an INIT chunk may carry a name");
  dv(chunk).setUint32(28, 1, true);
  dv(chunk).setBigUint64(16, 2n ** 60n, true);
  refused(() => decodeImageChunk(chunk), "offset 1152921504606846976 exceeds");
});

test("MGET dynamic array round-trips with misses, empty items and alignment", () => {
  const items = [
    te.encode("alpha"),
    undefined,
    new Uint8Array(0),
    new Uint8Array(1000).fill(3),
    undefined,
  ];
  const blob = encodeDynamicArray(items);
  assertEquals(blob.length % 8, 0);
  const back = decodeDynamicArray(embedded(blob));
  assertEquals(back, items);
  assertEquals(decodeDynamicArray(encodeDynamicArray([])), []);
  // Relative offsets: the blob decodes the same from any position in any buffer.
  const copy = new Uint8Array(blob.length + 3);
  copy.set(blob, 3);
  assertEquals(decodeDynamicArray(copy.subarray(3)), items);
  for (let i = 0; i < items.length; i++) {
    const off = dv(blob).getUint32(16 + 16 * i, true);
    if (items[i] !== undefined) assertEquals(off % 8, 0, `item ${i} aligned`);
  }
});

test("hostile dynamic-array blobs are refused without reading outside the blob", () => {
  const good = encodeDynamicArray([te.encode("hello"), te.encode("world")]);
  const hostile: [string, (b: DataView) => void, string][] = [
    ["offset past the end", (b) => b.setUint32(16, 10_000, true), "entry 0 offset 10000"],
    ["length past the end", (b) => b.setUint32(20, 1_000, true), "entry 0 offset"],
    [
      "offset + length wraps u32",
      (b) => (b.setUint32(16, 0xfffffff0, true), b.setUint32(20, 0x20, true)),
      "outside the data area",
    ],
    ["offset into the header", (b) => b.setUint32(32, 0, true), "entry 1 offset 0"],
    ["count too large", (b) => b.setUint32(8, 0xffffffff, true), "count 4294967295"],
    ["count beyond the entries", (b) => b.setUint32(8, 5, true), "count 5 needs 96 bytes"],
    ["blob_size lies", (b) => b.setUint32(12, 1 << 20, true), "blob_size field says 1048576"],
    ["bad magic", (b) => b.setUint32(0, 0x41414141, true), "bad magic"],
    ["bad version", (b) => b.setUint32(4, 2, true), "unsupported version 2"],
    [
      "absent entry with a length",
      (b) => (b.setUint32(24, 0, true), b.setUint32(20, 5, true)),
      "absent entry 0",
    ],
    ["unknown flags", (b) => b.setUint32(24, 3, true), "unknown flags 0x3"],
  ];
  for (const [what, mutate, text] of hostile) {
    const b = embedded(good.slice());
    mutate(dv(b));
    refused(() => decodeDynamicArray(b), text, undefined, what);
  }
  refused(() => decodeDynamicArray(good.subarray(0, 10)), "shorter than the 16-byte header");
  refused(() => decodeDynamicArray(good.subarray(0, good.length - 8)), "blob_size");
  refused(
    () => decodeDynamicArray(encodeDynamicArray([undefined, undefined]), 1),
    "count 2 exceeds the limit of 1",
  );
});

function fuzz(blob: Uint8Array, decode: (b: Uint8Array) => unknown, rounds: number): number {
  let seed = 0x12345678, accepted = 0;
  const rnd = () => (seed = (Math.imul(seed, 1664525) + 1013904223) >>> 0);
  for (let r = 0; r < rounds; r++) {
    const b = embedded(blob.slice());
    const flips = 1 + (rnd() % 4);
    for (let f = 0; f < flips; f++) b[rnd() % b.length] = rnd() & 0xff;
    try {
      const out = decode(b);
      accepted++;
      const views = Array.isArray(out) ? out : [];
      for (const v of views) {
        if (v instanceof Uint8Array) {
          assert(
            v.buffer === b.buffer && v.byteOffset >= b.byteOffset &&
              v.byteOffset + v.length <= b.byteOffset + b.length,
            "view inside the blob",
          );
        }
      }
    } catch (e) {
      if (!(e instanceof VerbusError) || !["PROTOCOL", "BOUNDS"].includes(e.code)) {
        throw new Error(
          `round ${r}: decoder failed with ${e} instead of a PROTOCOL/BOUNDS VerbusError`,
        );
      }
    }
  }
  return accepted;
}

test("random corruption of MGET and PROFILE blobs never escapes as anything but PROTOCOL/BOUNDS", () => {
  const arr = encodeDynamicArray([
    te.encode("a"),
    undefined,
    new Uint8Array(40).fill(1),
    te.encode("zz"),
  ]);
  const prof = encodeProfile(syntheticProfile(1_000_002n));
  // Both outcomes must occur, or the fuzzer is not exercising the checks.
  for (
    const [name, n] of [["array", fuzz(arr, (b) => decodeDynamicArray(b), 3000)], [
      "profile",
      fuzz(prof, (b) => decodeProfile(b), 3000),
    ]] as const
  ) {
    assert(n > 100 && n < 2900, `${name}: ${n} of 3000 corrupted blobs accepted`);
  }
});

test("PROFILE composite struct round-trips, including unicode, empty arrays and u64 extremes", () => {
  const p: Profile = {
    id: 2n ** 64n - 1n,
    name: "Zoë 🐘",
    email: "z@e.x",
    age: 41,
    score: -1.25,
    createdMs: 2 ** 53 - 1,
    active: true,
    tags: ["α", "", "tcp"],
    friends: [0n, 2n ** 64n - 1n, 12345n],
  };
  assertEquals(decodeProfile(embedded(encodeProfile(p))), p);
  const empty: Profile = {
    ...p,
    id: 0n,
    name: "",
    email: "",
    tags: [],
    friends: [],
    active: false,
  };
  assertEquals(decodeProfile(encodeProfile(empty)), empty);
  for (const id of [0n, 1n, 4n, 999_999n, 2n ** 40n]) {
    assertEquals(
      decodeProfile(encodeProfile(syntheticProfile(id))),
      syntheticProfile(id),
      `id ${id}`,
    );
  }
  assertThrows(() => encodeProfile({ ...p, age: -1 }), VerbusError, "age -1");
  assertThrows(() => encodeProfile({ ...p, friends: [-1n] }), VerbusError, "friend 0");
});

test("hostile PROFILE blobs are refused naming the bad field", () => {
  const good = encodeProfile({
    id: 7n,
    name: "n",
    email: "e",
    age: 1,
    score: 0,
    createdMs: 0,
    active: false,
    tags: ["t1", "t2"],
    friends: [1n, 2n],
  });
  const hostile: [(b: DataView) => void, string][] = [
    [(b) => b.setUint32(48, 1 << 30, true), "name offset 1073741824"],
    [(b) => b.setUint32(52, 0xffffffff, true), "name offset"],
    [(b) => b.setUint32(56, 4, true), "email offset 4"],
    [(b) => b.setUint32(68, 0x20000000, true), "tags (536870912 refs)"],
    [(b) => b.setUint32(64, good.length - 4, true), "tags (2 refs)"],
    [(b) => b.setUint32(b.getUint32(64, true) + 8, 9999, true), "tag 1 offset 9999"],
    [(b) => b.setUint32(76, 100, true), "friends (100 ids)"],
    [(b) => b.setUint32(72, 0, true), "friends (2 ids) offset 0"],
    [(b) => b.setUint32(8, 12, true), "blob_size field says 12"],
    [(b) => b.setUint16(6, 96, true), "fixed_size 96"],
    [(b) => b.setUint16(4, 9, true), "unsupported version 9"],
    [(b) => b.setBigUint64(24, 2n ** 60n, true), "created_ms"],
    [(b) => b.setUint32(12, 2, true), "unknown flags 0x2"],
    [(b) => b.setUint8(b.getUint32(48, true), 0xff), "name is not valid UTF-8"],
  ];
  for (const [mutate, text] of hostile) {
    const b = embedded(good.slice());
    mutate(dv(b));
    refused(() => decodeProfile(b), text);
  }
  refused(() => decodeProfile(good.subarray(0, 79)), "shorter than the 80-byte header");
});

test("brpc EchoRequest encodes as proto2 field 1 and decodes with unknown fields skipped", () => {
  const bytes = encodeEchoMessage("hello world");
  assertEquals(bytes, new Uint8Array([0x0a, 11, ...te.encode("hello world")]));
  assertEquals(decodeEchoMessage(bytes), "hello world");
  assertEquals(decodeEchoMessage(encodeEchoMessage("")), "", "an empty string is present");
  const extra = new BinaryWriter()
    .tag(7, WireType.Varint).uint64(1n << 62n)
    .tag(1, WireType.LengthDelimited).string("first")
    .tag(9, WireType.Bit32).fixed32(5)
    .tag(1, WireType.LengthDelimited).string("last wins")
    .tag(3, WireType.StartGroup).tag(4, WireType.Varint).uint32(1).tag(3, WireType.EndGroup)
    .finish();
  assertEquals(decodeEchoMessage(extra), "last wins");
});

test("EchoRequest without its required field or with broken protobuf is refused", () => {
  refused(() => decodeEchoMessage(new Uint8Array(0)), "required field message (1) is missing");
  const other = new BinaryWriter().tag(2, WireType.LengthDelimited).string("x").finish();
  refused(() => decodeEchoMessage(other), "required field message (1) is missing");
  refused(
    () => decodeEchoMessage(new Uint8Array([0x0a, 50, 1, 2])),
    "EchoRequest: malformed protobuf",
  );
  refused(() => decodeEchoMessage(new Uint8Array([0x08, 1])), "wire type 0, expected 2");
  refused(() => decodeEchoMessage(new Uint8Array([0x0a, 2, 0xff, 0xfe])), "malformed protobuf");
  refused(() => decodeEchoMessage(new Uint8Array([0x00])), "malformed protobuf");
  refused(() => decodeEchoMessage(new Uint8Array([0x1c])), "unexpected end-group tag");
  refused(
    () => decodeEchoMessage(new Uint8Array(0), "EchoResponse"),
    "EchoResponse: required field",
  );
});
