/**
 * The verbs handshake's private data (transport/verbs/provider_wire.ts), on the host (pure, no
 * device): the connect request and the accept carry each side's hub token — the immediate the
 * peer's kicks will carry — and a token out of range, a wrong nonce or a short message is
 * refused with what is wrong.
 */
import {
  checkAccept,
  decodeRequest,
  encodeAccept,
  encodeRequest,
  REQUEST_BYTES,
} from "../../transport/verbs/provider_wire.ts";
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
