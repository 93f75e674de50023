/**
 * brpc's benchmark messages as the demo's `test.PerfTestService/Test` reads and writes them (the
 * service brpc's UBRing and RDMA benchmark clients call): the short paths for what those clients
 * send every call give the same results as the protobuf reader and writer. Both runtimes.
 */
import { BinaryWriter, WireType } from "@bufbuild/protobuf/wire";
import {
  decodePerfTestRequest,
  decodePerfTestResponse,
  encodePerfTestRequest,
  encodePerfTestResponse,
} from "../../examples/demo/brpc_perf.ts";
import { VerbusError } from "../../errors.ts";
import { assert, assertEquals, test } from "../harness.ts";

test("PerfTestService messages: brpc's every-call request and the empty answer, as protobuf has them", () => {
  for (const echo of [false, true]) {
    const bytes = encodePerfTestRequest(echo);
    assertEquals(decodePerfTestRequest(bytes), { echoAttachment: echo });
  }
  const viaWriter = new BinaryWriter().tag(1, WireType.LengthDelimited).string("").finish();
  const a = encodePerfTestResponse(""), b = encodePerfTestResponse("");
  assertEquals(a, viaWriter);
  assert(a !== b, "each answer is a buffer of its own");
  assertEquals(decodePerfTestResponse(a), "");
  assertEquals(decodePerfTestResponse(encodePerfTestResponse("0.420")), "0.420");
  // Not the short form: the reader decides (a varint 2 is true; a repeated field, the last wins).
  assertEquals(decodePerfTestRequest(new Uint8Array([8, 2])), { echoAttachment: true });
  assertEquals(decodePerfTestRequest(new Uint8Array([8, 1, 8, 0])), { echoAttachment: false });
  for (const bad of [new Uint8Array(0), new Uint8Array([8]), new Uint8Array([10, 0])]) {
    let err: unknown;
    try {
      decodePerfTestRequest(bad);
    } catch (e) {
      err = e;
    }
    assert(err instanceof VerbusError && err.code === "PROTOCOL", `${bad}: ${err}`);
  }
});
