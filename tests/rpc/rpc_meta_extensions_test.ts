/**
 * The RpcMeta fields verbus adds for call metadata: response `user_fields` (brpc's own field 9)
 * and the extensions `verbus_trailers = 1000` and `verbus_error_details = 1001` round-trip
 * through the codec, with two-byte tags (a stock brpc skips them as unknown fields), next to
 * the fields brpc knows.
 */
import { decodeRpcMeta, encodeRpcMeta } from "../../rpc/protocol/rpc_meta.ts";
import { assertEquals, test } from "../harness.ts";

test("response user_fields, trailers (1000) and error details (1001) round-trip through RpcMeta", () => {
  const meta = {
    response: { errorCode: 2001, errorText: "no" },
    correlationId: 7,
    userFields: new Map([["x-a", "1"], ["x-b", "ü"]]),
    trailers: new Map([["x-t", "2"]]),
    errorDetails: [{ type: "pkg.Detail", value: Uint8Array.of(1, 2, 3) }, {
      type: "pkg.Other",
      value: new Uint8Array(0),
    }],
  };
  const bytes = encodeRpcMeta(meta).slice();
  // field 1000, wire type 2: varint 8002 = 0xc2 0x3e; field 1001: 8010 = 0xca 0x3e
  const hex = [...bytes].map((b) => b.toString(16).padStart(2, "0")).join("");
  assertEquals(hex.includes("c23e") && hex.includes("ca3e"), true, hex);
  assertEquals(decodeRpcMeta(bytes), meta);
  // Unknown fields past 15 are still skipped (what brpc does with ours).
  const unknown = Uint8Array.of(0xa2, 0x3f, 2, 0x41, 0x42, 0x20, 9); // field 1012 "AB", correlation_id 9
  assertEquals(decodeRpcMeta(unknown), { correlationId: 9 });
});
