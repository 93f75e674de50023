/**
 * Segment and jetty descriptions (transport/urma/description.ts) on the simulated liburma of
 * this run's ABI: the library's own blobs (urma_get_seg_ctx / urma_get_rjetty, with the user
 * info the simulator appends and checks on import) where the ABI has them, the fixed 48-byte
 * form otherwise (25.12-B081); hostile lengths refused with a clear error.
 */
import { assert, assertEquals, assertThrows, test } from "../harness.ts";
import { VerbusError } from "../../errors.ts";
import {
  blobLength,
  decodeDescription,
  describeJetty,
  describeSegment,
  DESCRIPTION_MAX,
  encodeDescription,
  importableBlob,
  peerBlobs,
} from "../../transport/urma/description.ts";
import { urmaAbi } from "../../ffi/layouts/urma_abi.ts";
import { loadSim, makeSide, SIM_ABI, SKIP_NO_SIM } from "./util.ts";

const HAS_BLOBS = urmaAbi(SIM_ABI)?.blob != null;

test(
  "descriptions carry the library's blob where the ABI has one, and it imports whole",
  async () => {
    const u = await loadSim();
    const a = makeSide(u, 8192, 0x1111), b = makeSide(u, 8192, 0x2222);
    try {
      const segDesc = decodeDescription(describeSegment(b.seg), "segment", "test");
      const jettyDesc = decodeDescription(describeJetty(b.jetty), "jetty", "test");
      assertEquals([segDesc.abi, jettyDesc.abi], [SIM_ABI, SIM_ABI]);
      assertEquals(segDesc.form, HAS_BLOBS ? "library" : "fixed");
      assertEquals(jettyDesc.form, HAS_BLOBS ? "library" : "fixed");
      const blobs = peerBlobs(
        u.layouts,
        b.seg.descriptor,
        describeSegment(b.seg),
        describeJetty(b.jetty),
        "test",
      );
      if (HAS_BLOBS) {
        // The simulator appends 16 bytes of user info: longer than the struct.
        assert(blobs.seg!.length > u.layouts.seg.$size, `${blobs.seg!.length}`);
        assert(blobs.jetty!.length > u.layouts.rjetty.$size, `${blobs.jetty!.length}`);
        // The simulator checks the user info on import: the blob reached the library whole ...
        a.ctx.importSegment(b.seg.descriptor, b.token, blobs.seg).close();
        a.ctx.importJetty(b.jetty.address, b.token, blobs.jetty).close();
        // ... and a damaged one is refused by it (not read past: its length was checked first).
        const bad = blobs.seg!.slice();
        bad[bad.length - 1] ^= 0xff;
        let msg = "";
        try {
          a.ctx.importSegment(b.seg.descriptor, b.token, bad);
        } catch (e) {
          msg = (e as Error).message;
        }
        assert(msg.includes("user info"), msg);
      } else {
        assertEquals([blobs.seg, blobs.jetty], [null, null]);
        assertEquals(segDesc.body, b.seg.descriptor);
      }
    } finally {
      a.ctx.close();
      b.ctx.close();
    }
  },
  { skip: SKIP_NO_SIM },
);

test("hostile descriptions are refused naming what is wrong", () => {
  const fixed = new Uint8Array(48);
  const ok = encodeDescription({ kind: "segment", form: "fixed", abi: "25.12", body: fixed });
  assertEquals(decodeDescription(ok, "segment", "peer").body, fixed);
  const cases: [Uint8Array, string][] = [
    [ok.subarray(0, 5), "is 5 bytes"],
    [new Uint8Array(DESCRIPTION_MAX + 1), `is ${DESCRIPTION_MAX + 1} bytes`],
    [Uint8Array.of(2, ...ok.subarray(1)), "has version 2"],
    [Uint8Array.of(1, 2, ...ok.subarray(2)), "is of kind 2"],
    [Uint8Array.of(1, 1, 7, ...ok.subarray(3)), "has form 7"],
    [ok.subarray(0, ok.length - 1), "says 59 bytes"], // the body length lies
    [Uint8Array.of(...ok.subarray(0, 3), 40, ...ok.subarray(4)), "names an ABI of 40 bytes"],
  ];
  for (const [bytes, want] of cases) {
    assertThrows(() => decodeDescription(bytes, "segment", "peer"), VerbusError, want);
  }
  // A blob that announces more user info than it carries: the library would read past it.
  const abi = urmaAbi("25.12")!;
  const blob = new Uint8Array(48 + 4 + 16);
  const d = new DataView(blob.buffer);
  d.setUint32(40, 1 << 14, true); // attr.has_user_info
  d.setUint32(48, 16, true);
  assertEquals(blobLength(abi.blob!.seg, blob), blob.length);
  d.setUint32(48, 0xffff_fff0, true);
  const lying = decodeDescription(
    encodeDescription({ kind: "segment", form: "library", abi: "25.12", body: blob }),
    "segment",
    "peer",
  );
  assertThrows(
    () => importableBlob(abi, lying, "peer"),
    VerbusError,
    "its 68-byte 25.12 blob announces 4294967332 bytes",
  );
  // Another ABI's blob is not imported (the fixed form is), never misread.
  assertEquals(importableBlob(urmaAbi("26.06-ext")!, lying, "peer"), null);
});
