/**
 * The hex codecs (the platform's Uint8Array toHex/fromHex under the project's error): round
 * trips, case, and the RangeError naming the input.
 * @module
 */
import { assert, assertEquals, assertThrows, test } from "../harness.ts";
import { bytesEqual, fromHex, toHex } from "../../util/hex.ts";

test("hex: lower-case two digits a byte; either case read back; every byte round-trips", () => {
  assertEquals(toHex(new Uint8Array([0, 1, 0xab, 0xff])), "0001abff");
  assertEquals([...fromHex("0001ABff")], [0, 1, 0xab, 0xff]);
  assertEquals(toHex(new Uint8Array(0)), "");
  const all = Uint8Array.from({ length: 256 }, (_, i) => i);
  assert(bytesEqual(fromHex(toHex(all)), all), "256 bytes round-trip");
});

test("hex: odd length, a non-hex digit or a sign is a RangeError quoting the input", () => {
  for (const bad of ["abc", "0g", "+1", " 01", "0x01"]) {
    const e = assertThrows(() => fromHex(bad), RangeError);
    assert(String((e as Error).message).includes(`"${bad}"`), (e as Error).message);
  }
});
