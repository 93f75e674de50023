/**
 * brpc's RDMA hello codec and credit arithmetic, checked against byte layouts and numbers written
 * out by hand from the protocol description (BRIEF §4, brpc's rdma_handshake.cpp /
 * rdma_endpoint.cpp), not against the codec itself.
 */
import { CreditWindow } from "../../transport/brpc_rdma/credits.ts";
import {
  ackSaysRdma,
  decodeHello,
  encodeAck,
  encodeHello,
  helloLength,
  helloRefusal,
  isHelloMagic,
} from "../../transport/brpc_rdma/hello.ts";
import { assert, assertEquals, assertThrows, test } from "../harness.ts";

const gid = Uint8Array.from({ length: 16 }, (_, i) => 0xa0 + i);
const hello = {
  helloVer: 2,
  implVer: 1,
  blockSize: 8160,
  sqSize: 128,
  rqSize: 100,
  lid: 0x1234,
  gid,
  qpNum: 0x11,
};
const hex = (b: Uint8Array) => Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");

test("brpc hello: 40 bytes, big-endian, GID raw, at brpc's offsets", () => {
  const b = encodeHello(hello);
  assertEquals(
    hex(b),
    "52444d41" + "0028" + "0002" + "0001" + "00001fe0" + "0080" + "0064" + "1234" +
      hex(gid) + "00000011",
  );
  assert(isHelloMagic(b));
  assertEquals(decodeHello(b), hello);
});

test("brpc hello: msg_len bounds (40..4096) and the refusals that mean FALLBACK_TCP", () => {
  const b = encodeHello(hello);
  assertEquals(helloLength(b), 40);
  b[4] = 0, b[5] = 39;
  assert(typeof helloLength(b) === "string");
  b[4] = 0x10, b[5] = 0x01; // 4097
  assert(String(helloLength(b)).includes("4097"));
  assertEquals(helloRefusal(hello), null);
  const zero = { ...hello, helloVer: 0, implVer: 0 };
  assert(helloRefusal(zero)!.includes("zeroed versions"));
  assert(helloRefusal({ ...hello, helloVer: 3 })!.includes("hello_ver 3"));
  assert(helloRefusal({ ...hello, blockSize: 1023 })!.includes("block_size"));
  assert(helloRefusal({ ...hello, sqSize: 15 })!.includes("sq_size"));
  assert(helloRefusal({ ...hello, rqSize: 0 })!.includes("rq_size"));
  assert(helloRefusal({ ...hello, qpNum: 0 })!.includes("qp_num"));
  assert(helloRefusal({ ...hello, qpNum: 0x1000000 })!.includes("qp_num"));
  assert(helloRefusal({ ...hello, gid: new Uint8Array(16) })!.includes("GID"));
  assertThrows(() => encodeHello({ ...hello, sqSize: 70000 }), RangeError);
});

test("brpc ACK: 4 bytes big-endian, bit 0 = RDMA OK", () => {
  assertEquals(hex(encodeAck(true)), "00000001");
  assertEquals(hex(encodeAck(false)), "00000000");
  assert(ackSaysRdma(Uint8Array.of(0, 0, 0, 3)));
  assert(!ackSaysRdma(Uint8Array.of(1, 0, 0, 0)));
});

test("credits: windows are min(SQ, peer RQ) − 3 and min(RQ, peer SQ) − 3", () => {
  const w = new CreditWindow(128, 64, 32, 100);
  assertEquals(w.localCapacity, 97); // min(128, 100) - 3
  assertEquals(w.remoteCapacity, 29); // min(64, 32) - 3
  assertEquals(w.remoteRq, 97);
  assertEquals(w.sqWindow, 97);
  assertThrows(() => new CreditWindow(3, 128, 128, 128), RangeError);
});

test("credits: a send is signalled every quarter window, wr_id = slots it frees", () => {
  const w = new CreditWindow(128, 128, 128, 128); // capacity 125, quarter 31
  const signalled: number[] = [];
  for (let i = 1; i <= 125; i++) {
    assert(w.canSend);
    w.takeSend();
    if (w.signalCount > 0) signalled.push(i, w.signalCount);
  }
  assertEquals(signalled, [31, 31, 62, 31, 93, 31, 124, 31]);
  assert(!w.canSend); // the peer's receives are used up
  assert(w.sendCompleted(31));
  assertEquals(w.sqWindow, 31);
  assert(!w.canSend); // send slots back, but no credit yet
  assert(w.credited(10));
  assert(w.canSend);
  assert(!w.credited(200), "more credits than the window is a lie");
  assert(!w.sendCompleted(500), "more slots than in flight is a lie");
});

test("credits: the immediate carries every pending credit; ACK past half the remote window", () => {
  const w = new CreditWindow(128, 128, 128, 128); // remote capacity 125, half 62
  let acks = 0;
  for (let i = 0; i < 62; i++) acks += w.returnCredits(1) > 0 ? 1 : 0;
  assertEquals(acks, 0); // 62 pending, not yet > 62 before the 63rd
  assertEquals(w.returnCredits(1), 0); // before = 62: not > 62
  assertEquals(w.returnCredits(1), 64); // before = 63 > 62: ACK with all 64
  assertEquals(w.ackWindow, 2);
  assertEquals(w.pendingCredits, 0);
  for (let i = 0; i < 5; i++) w.returnCredits(1);
  assertEquals(w.takeSend(), 5, "a data send returns the pending credits");
  assertEquals(w.pendingCredits, 0);
  // ACK slots run out: credits wait until an ACK completes (wr_id 0).
  w.ackWindow = 0;
  for (let i = 0; i < 70; i++) assertEquals(w.returnCredits(1), 0);
  assert(w.sendCompleted(0));
  assertEquals(w.returnCredits(0), 70);
  assertEquals(w.ackWindow, 0); // that ACK took the slot again
  assert(w.sendCompleted(0) && w.sendCompleted(0) && w.sendCompleted(0), "3 ACK slots");
  assert(!w.sendCompleted(0), "never more than 3 ACK slots");
});
