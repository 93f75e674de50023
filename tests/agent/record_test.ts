/**
 * The agent's slot records (rpc/agent/record.ts, request_record.ts, response_record.ts): a request round-trips with every field; a
 * record whose lengths lie, whose version is wrong or whose strings are not UTF-8 is refused with
 * an error naming what; responses and errors (brpc codes kept) round-trip.
 */
import { assert, assertEquals, test } from "../harness.ts";
import { VerbusError } from "../../errors.ts";
import { RpcError } from "../../rpc/errors.ts";
import { decodeRequest, encodeRequest } from "../../rpc/agent/request_record.ts";
import { decodeResponse, encodeError, encodeResponse } from "../../rpc/agent/response_record.ts";

const enc = new TextEncoder();
const fields = {
  service: "verbus.Demo",
  method: "KvGet",
  request: enc.encode("req"),
  attachment: enc.encode("att"),
  timeoutMs: 1234,
  forcePath: "LAZY" as const,
  expectedResponseBytes: 99_000,
  logId: 2n ** 40n + 5n,
};

function refused(rec: Uint8Array): string {
  try {
    decodeRequest(rec);
  } catch (e) {
    return `${(e as VerbusError).code}: ${(e as Error).message}`;
  }
  return "accepted";
}

test("agent record: a request round-trips; lying lengths, bad versions and bad UTF-8 are refused by name", () => {
  const area = new Uint8Array(256);
  const n = encodeRequest(area, fields);
  const r = decodeRequest(area.subarray(0, n));
  assertEquals(
    [
      r.service,
      r.method,
      r.request,
      r.attachment,
      r.timeoutMs,
      r.forcePath,
      r.expectedResponseBytes,
      r.logId,
    ],
    [
      "verbus.Demo",
      "KvGet",
      enc.encode("req"),
      enc.encode("att"),
      1234,
      "LAZY",
      99_000,
      2n ** 40n + 5n,
    ],
  );
  assertEquals(encodeRequest(new Uint8Array(40), fields), -1, "does not fit: -1, nothing thrown");
  assert(refused(area.subarray(0, 10)).startsWith("BOUNDS"), "shorter than the header");
  assert(refused(area.subarray(0, n - 1)).includes("sum to"), refused(area.subarray(0, n - 1)));
  const lying = area.slice(0, n);
  new DataView(lying.buffer).setUint32(8, 0xffffffff, true);
  assert(refused(lying).includes("request 4294967295"), refused(lying));
  const version = area.slice(0, n);
  version[0] = 9;
  assert(refused(version).includes("version 9"), refused(version));
  const path = area.slice(0, n);
  path[1] = 7;
  assert(refused(path).includes("forced path 7"), refused(path));
  const utf = area.slice(0, n);
  utf[32] = 0xff;
  assert(refused(utf).includes("service is not UTF-8"), refused(utf));
});

test("agent record: answers and errors round-trip; a bad answer becomes PROTOCOL", () => {
  const area = new Uint8Array(256);
  let n = encodeResponse(area, { response: enc.encode("ok"), path: "BULK", fabric: "shm" });
  const a = decodeResponse(area.subarray(0, n));
  assert(a.ok && a.path === "BULK" && a.fabric === "shm" && a.response.length === 2);
  n = encodeError(area, new RpcError(1002, "no such method"));
  const e = decodeResponse(area.subarray(0, n));
  assert(
    !e.ok && e.error instanceof RpcError && e.error.errorCode === 1002,
    String(!e.ok && e.error),
  );
  n = encodeError(area, new VerbusError("TIMEOUT", "late"));
  const t = decodeResponse(area.subarray(0, n));
  assert(!t.ok && t.error.code === "TIMEOUT" && t.error.message.includes("late"));
  const empty = decodeResponse(new Uint8Array(0));
  assert(!empty.ok && empty.error.message.includes("rejected"), "length 0: rejected record");
  const bad = decodeResponse(area.subarray(0, n - 1));
  assert(!bad.ok && bad.error.code === "PROTOCOL");
  assertEquals(
    encodeResponse(new Uint8Array(30), {
      response: new Uint8Array(100),
      path: "EAGER",
      fabric: "shm",
    }),
    -1,
  );
});

test("agent record: records decode from the front of a longer area (a slot's whole data area), names changing between records", () => {
  const area = new Uint8Array(4096).fill(0xee); // bytes past the record are garbage
  const names = [["verbus.Demo", "Echo"], ["verbus.Demo", "KvPut"], ["other.Svc", "Echo"]];
  for (let round = 0; round < 2; round++) {
    for (const [service, method] of names) {
      const n = encodeRequest(area, { ...fields, service, method, attachment: new Uint8Array(0) });
      const r = decodeRequest(area, n);
      assertEquals([r.service, r.method, r.attachment.length], [service, method, 0]);
      assertEquals(new TextDecoder().decode(r.request), "req");
      assertEquals(r.logId, 2n ** 40n + 5n);
    }
  }
  // A length past the area, or one the record's own lengths do not add up to, is refused.
  const n = encodeRequest(area, fields);
  let why = "";
  try {
    decodeRequest(area.subarray(0, 100), 200);
  } catch (e) {
    why = (e as Error).message;
  }
  assert(why.includes("200 bytes in a 100-byte area"), why);
  try {
    decodeRequest(area, n + 1);
  } catch (e) {
    why = (e as Error).message;
  }
  assert(why.includes(`the record has ${n + 1}`), why);
  // Answers: the fabric name changes, bytes are the caller's (a later record does not change them).
  const fabrics = ["shm", "verbs", "shm"];
  const seen: Uint8Array[] = [];
  for (const [i, fabric] of fabrics.entries()) {
    const m = encodeResponse(area, { response: enc.encode(`r${i}`), path: "EAGER", fabric });
    const a = decodeResponse(area, m);
    assert(a.ok && a.fabric === fabric && a.attachment.length === 0, `answer ${i}`);
    if (a.ok) seen.push(a.response);
  }
  area.fill(0);
  assertEquals(seen.map((b) => new TextDecoder().decode(b)), ["r0", "r1", "r2"]);
  const short = decodeResponse(area.subarray(0, 30), 40);
  assert(!short.ok && short.error.message.includes("of 40 bytes"), "length past the area");
});
