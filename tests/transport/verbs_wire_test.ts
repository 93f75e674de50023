/**
 * The verbs handshake's private data (transport/verbs/provider_wire.ts), on the host (pure, no
 * device): the connect request and the accept carry each side's hub token — the immediate the
 * peer's kicks will carry — and a token out of range, a wrong nonce or a short message is
 * refused with what is wrong.
 */
import {
  autoLogBytes,
  checkAccept,
  decodeRequest,
  encodeAccept,
  encodeRequest,
  REQUEST_BYTES,
  verbsServerOptionsSchema,
} from "../../transport/verbs/provider_wire.ts";
import { logSizeProblem } from "../../transport/write_log.ts";
import { assert, assertEquals, test } from "../harness.ts";

const nonce = Uint8Array.from({ length: 16 }, (_, i) => i * 7 + 1);
const request = {
  session: 42,
  events: true,
  rkey: 0x1234,
  addr: 0x7f00_0000_1000,
  size: 1 << 20,
  nonce,
  token: 4097,
};

test("verbs connect request: round trip with the client's hub token, within RoCE's 56 bytes", () => {
  const b = encodeRequest(request);
  assertEquals(b.length, REQUEST_BYTES);
  assert(b.length <= 56, "fits the RoCE CM private data");
  const r = decodeRequest(b);
  assert(typeof r !== "string", `decoded: ${r}`);
  assertEquals(r, request);
});

test("verbs connect request: a token past the hub's capacity is refused, naming it", () => {
  const b = encodeRequest({ ...request, token: 70000 });
  const r = decodeRequest(b);
  assertEquals(typeof r, "string");
  assert(/token 70000 is out of range/.test(r as string), `${r}`);
  assert(/48 bytes|52/.test(String(decodeRequest(b.subarray(0, 48)))), "short data refused");
});

test("verbs accept: carries the server's hub token; another nonce or a bad token is refused", () => {
  assertEquals(checkAccept(encodeAccept(nonce, 9), nonce), 9);
  const other = nonce.slice();
  other[3] ^= 1;
  assertEquals(
    checkAccept(encodeAccept(nonce, 9), other),
    "the accept carries another session's nonce",
  );
  assertEquals(
    checkAccept(encodeAccept(nonce, 65536), nonce),
    "server token 65536 is out of range",
  );
  assertEquals(typeof checkAccept(encodeAccept(nonce, 9).subarray(0, 20), nonce), "string");
});

test("the write log follows the session's regions unless set: small regions pin little more", () => {
  // 500 idle sessions of a 640 KiB region each: a fixed 1 MiB log (and as large an outbox) would
  // have quadrupled the pinned memory of both processes.
  const small = 640 << 10, big = 64 << 20;
  assertEquals(autoLogBytes({ server: small, client: small }), 40960);
  assertEquals(autoLogBytes({ server: big, client: small }), 40960, "the smaller region decides");
  assertEquals(autoLogBytes({ server: big, client: big }), 1 << 20, "at most 1 MiB");
  assertEquals(autoLogBytes({ server: 65536, client: 65536 }), 16384, "at least 16 KiB");
  for (const n of [4096, small, 3 << 20, 7_777_777 & ~4095, big]) {
    const l = autoLogBytes({ server: n, client: n });
    assertEquals(logSizeProblem(l), null, `log of ${l} bytes for a ${n}-byte region`);
  }
  const parse = (o: object) => verbsServerOptionsSchema.parse({ addr: "10.77.0.2", ...o });
  assertEquals(parse({}).logBytes, undefined, "unset: sized per session");
  assertEquals(parse({ logBytes: 0 }).logBytes, 0);
  const bad = verbsServerOptionsSchema.safeParse({ addr: "10.77.0.2", logBytes: 5000 });
  assert(!bad.success && /multiple of 4096/.test(bad.error.message), "a wrong size names the rule");
});
