/**
 * The demo method tables: every `verbus.Demo` method and brpc's `example.EchoService.Echo`
 * called with raw bytes, the DemoClient helpers over an in-process caller, attachments, and the
 * mapping of refused requests to bad-request errors.
 * @module
 */
import { assert, assertEquals, assertRejects, assertThrows, test } from "../harness.ts";
import { VerbusError } from "../../errors.ts";
import { ELIMIT, EREQUEST, RpcError } from "../../rpc/errors.ts";
import {
  decodeDynamicArray,
  decodeEchoMessage,
  decodeGetResponse,
  decodePingResponse,
  decodeProfile,
  decodePutResponse,
  encodeEchoMessage,
  encodeKeyRequest,
  encodeMGetRequest,
  encodePingRequest,
  encodeProfileRequest,
  encodePutRequest,
} from "../../examples/demo/codec.ts";
import { KvStore } from "../../examples/demo/kv_store.ts";
import { verifyLargeObject } from "../../examples/demo/large_object.ts";
import {
  BRPC_ECHO_SERVICE,
  DEMO_METHODS,
  DEMO_SERVICE,
  type DemoCallContext,
  demoService,
  type DemoServices,
  syntheticProfile,
  toRequestError,
} from "../../examples/demo/service.ts";
import { DemoClient } from "../../examples/demo/client.ts";
import { borrowsItsRequest } from "../../rpc/protocol/borrow.ts";
import { directCaller, tempDir } from "./util.ts";

const te = new TextEncoder();

async function withService(
  fn: (svc: DemoServices, kv: KvStore) => void | Promise<void>,
  kvLimit?: number,
): Promise<void> {
  const d = tempDir();
  try {
    const kv = new KvStore(kvLimit === undefined ? {} : { maxValueBytes: kvLimit });
    await fn(demoService({ kv, imageDir: d.path, maxSmallValueBytes: 1024 }), kv);
  } finally {
    d.remove();
  }
}

/** Awaits a handler call that must be refused as a bad request (EREQUEST) whose text includes `text`. */
async function badRequest(
  call: () => Uint8Array | Promise<Uint8Array>,
  text: string,
  code = EREQUEST,
): Promise<RpcError> {
  const e = await assertRejects(async () => await call(), RpcError, text);
  assertEquals(e.errorCode, code, `refused with brpc code ${code}: ${e.message}`);
  assert(e.errorText.includes(text), `error_text carries the reason: ${e.errorText}`);
  return e;
}

test("the table has every demo method, brpc's echo and brpc's PerfTestService", () =>
  withService((svc) => {
    assertEquals(
      Object.keys(svc).sort(),
      [BRPC_ECHO_SERVICE, DEMO_SERVICE, "test.PerfTestService"].sort(),
    );
    assertEquals(Object.keys(svc["test.PerfTestService"]), ["Test"]);
    assertEquals(Object.keys(svc[DEMO_SERVICE]).sort(), [...DEMO_METHODS].sort());
    assertEquals(Object.keys(svc[BRPC_ECHO_SERVICE]), ["Echo"]);
    assert(Object.isFrozen(svc[DEMO_SERVICE]), "tables are frozen");
  }));

test("Ping echoes the nonce with the server clock; Echo answers with its own payload and attachment", () =>
  withService(async (svc) => {
    const before = BigInt(Date.now()) * 1000n;
    const r = decodePingResponse(await svc[DEMO_SERVICE].Ping(encodePingRequest(42n), {}));
    assertEquals(r.nonce, 42n);
    assert(
      r.serverTimeUs >= before && r.serverTimeUs <= BigInt(Date.now()) * 1000n,
      `server time ${r.serverTimeUs}`,
    );
    assertEquals(decodePingResponse(await svc[DEMO_SERVICE].Ping(new Uint8Array(0), {})).nonce, 0n);
    await badRequest(() => svc[DEMO_SERVICE].Ping(new Uint8Array(5), {}), "Ping request: 5 bytes");

    const payload = new Uint8Array([1, 2, 3, 4]);
    const attachment = new Uint8Array([9, 9]);
    const ctx: DemoCallContext = { requestAttachment: attachment };
    const out = await svc[DEMO_SERVICE].Echo(payload, ctx);
    assertEquals(out, new Uint8Array([1, 2, 3, 4]));
    // Echo owns its request (no `borrowsRequest`: a fabric session hands it a copy of its own), so
    // it answers with it as is — no copy per call (issue 11 item 5: the copy was most of a Deno
    // server's work for a 64 B echo over TCP).
    assert(out === payload, "the response is the request itself");
    assert(ctx.responseAttachment === attachment, "the attachment is answered as is");
    assert(!borrowsItsRequest(svc[DEMO_SERVICE].Echo), "Echo owns its request");
    assert(borrowsItsRequest(svc[DEMO_SERVICE].KvPut), "KvPut borrows (it copies the value)");
    assert(borrowsItsRequest(svc[DEMO_SERVICE].BigPut), "BigPut borrows (it copies the value)");
    const plain: DemoCallContext = {};
    assertEquals(await svc[DEMO_SERVICE].Echo(new Uint8Array(0), plain), new Uint8Array(0));
    assertEquals(plain.responseAttachment, undefined);
  }));

test("KvPut / KvGet / MGet / BigPut through raw bytes, with limits", () =>
  withService(async (svc, kv) => {
    const d = svc[DEMO_SERVICE];
    assertEquals(decodePutResponse(await d.KvPut(encodePutRequest("k1", te.encode("v1")), {})), {
      replaced: false,
      length: 2,
    });
    assertEquals(decodePutResponse(await d.KvPut(encodePutRequest("k1", te.encode("v1b")), {})), {
      replaced: true,
      length: 3,
    });
    assertEquals(decodeGetResponse(await d.KvGet(encodeKeyRequest("k1"), {})), te.encode("v1b"));
    assertEquals(decodeGetResponse(await d.KvGet(encodeKeyRequest("nope"), {})), undefined);
    const big = new Uint8Array(5000).fill(7);
    await badRequest(
      () => d.KvPut(encodePutRequest("k2", big), {}),
      "exceeds the limit of 1024 bytes (use BigPut)",
    );
    assertEquals(decodePutResponse(await d.BigPut(encodePutRequest("k2", big), {})), {
      replaced: false,
      length: 5000,
    });
    await badRequest(
      () => d.BigPut(encodePutRequest("k3", new Uint8Array(9000)), {}),
      "limit of 8192",
    );
    await badRequest(() => d.KvPut(encodePutRequest("big:1k", te.encode("x")), {}), "reserved");
    await badRequest(() => d.KvGet(encodeKeyRequest(""), {}), "empty");
    await badRequest(
      () => d.KvPut(encodePutRequest(new Uint8Array([0xc3]), te.encode("x")), {}),
      "not valid UTF-8",
    );
    await badRequest(
      () => d.KvPut(new Uint8Array([1, 0, 0, 0]), {}),
      "KvPut request: 4 bytes, expected at least 8",
    );
    const blob = await d.MGet(encodeMGetRequest(["k1", "missing", "k2"]), {});
    assertEquals(decodeDynamicArray(blob), [te.encode("v1b"), undefined, big]);
    await badRequest(() => d.MGet(encodeMGetRequest(["k1", ""]), {}), "MGET key 1");
    assertEquals(kv.size, 2);
    const d2 = tempDir();
    try {
      const tiny =
        demoService({ kv: new KvStore({ maxTotalBytes: 10 }), imageDir: d2.path })[DEMO_SERVICE];
      await badRequest(
        () => tiny.KvPut(encodePutRequest("k", new Uint8Array(20)), {}),
        "KV store is full",
        ELIMIT,
      );
    } finally {
      d2.remove();
    }
  }, 8192));

test("Profile returns the composite struct of the requested user", () =>
  withService(async (svc) => {
    for (const id of [0n, 17n, 2n ** 64n - 1n]) {
      assertEquals(
        decodeProfile(await svc[DEMO_SERVICE].Profile(encodeProfileRequest(id), {})),
        syntheticProfile(id),
      );
    }
    await badRequest(
      () => svc[DEMO_SERVICE].Profile(new Uint8Array(4), {}),
      "Profile request: 4 bytes",
    );
    const d = tempDir();
    try {
      const only7 = demoService({
        imageDir: d.path,
        profile: (id) => (id === 7n ? syntheticProfile(7n) : undefined),
      });
      assertEquals(
        decodeProfile(await only7[DEMO_SERVICE].Profile(encodeProfileRequest(7n), {})).id,
        7n,
      );
      await badRequest(
        () => only7[DEMO_SERVICE].Profile(encodeProfileRequest(8n), {}),
        "no user with id 8",
      );
    } finally {
      d.remove();
    }
  }));

test("brpc example.EchoService.Echo answers EchoResponse and refuses a missing required field", () =>
  withService(async (svc) => {
    const ctx: DemoCallContext = { requestAttachment: te.encode("att") };
    const out = await svc[BRPC_ECHO_SERVICE].Echo(encodeEchoMessage("hi brpc"), ctx);
    assertEquals(decodeEchoMessage(out, "EchoResponse"), "hi brpc");
    assertEquals(ctx.responseAttachment, te.encode("att"));
    await badRequest(
      () => svc[BRPC_ECHO_SERVICE].Echo(new Uint8Array(0), {}),
      "EchoRequest: required field message (1) is missing",
    );
    await badRequest(
      () => svc[BRPC_ECHO_SERVICE].Echo(new Uint8Array([0x0a, 9]), {}),
      "EchoRequest: malformed protobuf",
    );
  }));

test("DemoClient covers every operation over a caller", () =>
  withService(async (svc) => {
    let calls = 0;
    const inner = directCaller(svc);
    const client = new DemoClient((s, m, b, o) => (calls++, inner(s, m, b, o)), { timeoutMs: 500 });
    const p = await client.ping();
    assert(p.rttUs >= 0 && p.serverTimeUs > 0n, JSON.stringify({ rtt: p.rttUs }));
    assertEquals(await client.echo(te.encode("abc")), te.encode("abc"));
    assertEquals(await client.put("a", te.encode("1")), { replaced: false, length: 1 });
    assertEquals(await client.get("a"), te.encode("1"));
    assertEquals(await client.get("zz"), undefined);
    assertEquals(await client.mget(["a", "zz"]), [te.encode("1"), undefined]);
    assertEquals(await client.profile(99), syntheticProfile(99n));
    assertEquals(await client.bigPut("large", new Uint8Array(4096).fill(1)), {
      replaced: false,
      length: 4096,
    });
    assertEquals((await client.largeGet("large")).length, 4096);
    const obj = await client.largeGet("big:64k");
    assertEquals(verifyLargeObject(65536, obj), -1);
    assertEquals(await client.brpcEcho("héllo"), "héllo");
    assertEquals(calls, 11);
    await assertRejects(() => client.largeGet("big:7x"), VerbusError, "big:7x");
    await assertRejects(
      () => client.imagePut("../x", new Uint8Array(1)),
      VerbusError,
      "bad image name",
    );
    await assertRejects(
      () => client.imagePut("x", new Uint8Array(1), 24 * 1024 + 1),
      VerbusError,
      "chunk size 24577",
    );
  }));

test("a failing upload makes the client send ABORT so nothing is left open", async () => {
  const d = tempDir();
  try {
    const svc = demoService({ imageDir: d.path });
    const seen: number[] = [];
    const inner = directCaller(svc);
    let n = 0;
    const client = new DemoClient(async (s, m, b, o) => {
      seen.push(new DataView(b.buffer, b.byteOffset).getUint32(28, true)); // flags
      if (++n === 3) throw new VerbusError("TIMEOUT", "injected timeout");
      return await inner(s, m, b, o);
    });
    await assertRejects(
      () => client.imagePut("t.bin", new Uint8Array(10_000), 2048),
      VerbusError,
      "injected timeout",
    );
    assertEquals(seen, [1, 0, 0, 4], "INIT, data, data (fails), ABORT");
    const { readdirSync } = await import("node:fs");
    assertEquals(readdirSync(d.path), [], "temp file removed by the ABORT");
  } finally {
    d.remove();
  }
});

test("options are validated and toRequestError keeps internal errors internal", () => {
  assertThrows(() => demoService({ maxMGetKeys: 0 }), VerbusError, "maxMGetKeys");
  assertThrows(() => demoService({ imageDir: "" }), VerbusError, "imageDir");
  // deno-lint-ignore no-explicit-any
  assertThrows(() => demoService({ imagedir: "/tmp/x" } as any), VerbusError, "imagedir");
  // deno-lint-ignore no-explicit-any
  assertThrows(() => demoService({ profile: 5 as any }), VerbusError, "profile");
  const internal = new TypeError("bug");
  assert(toRequestError(internal) === internal, "non-verbus errors pass through (EINTERNAL)");
  const native = new VerbusError("NATIVE_CALL", "rename failed");
  assert(toRequestError(native) === native, "internal verbus errors pass through (EINTERNAL)");
  const mapped = toRequestError(new VerbusError("INTEGRITY", "bad hash")) as RpcError;
  assertEquals([mapped.errorCode, mapped.errorText, mapped.context.reason], [
    EREQUEST,
    "bad hash",
    "INTEGRITY",
  ]);
  const full = toRequestError(new VerbusError("FULL", "store is full")) as RpcError;
  assertEquals([full.errorCode, full.errorText], [ELIMIT, "store is full"]);
  const already = new RpcError(1234, "app error");
  assert(toRequestError(already) === already, "an RpcError keeps its own code");
});
