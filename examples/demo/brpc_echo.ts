/**
 * brpc's echo example messages (`example/echo_c++/echo.proto`), used by the demo's
 * `example.EchoService.Echo` so a stock brpc echo client can call a verbus server:
 *
 * ```proto
 * syntax = "proto2";
 * package example;
 * message EchoRequest  { required string message = 1; }
 * message EchoResponse { required string message = 1; }
 * ```
 * Both messages have the same shape, so one encoder / decoder serves both. Encoded with
 * `@bufbuild/protobuf`'s wire writer / reader; no generated code.
 * @module
 */
import { BinaryReader, BinaryWriter, WireType } from "@bufbuild/protobuf/wire";
import { VerbusError } from "../../errors.ts";

/**
 * Encodes brpc's `EchoRequest` / `EchoResponse` (proto2, both `required string message = 1`)
 * with @bufbuild/protobuf's wire writer.
 */
export function encodeEchoMessage(message: string): Uint8Array {
  return new BinaryWriter().tag(1, WireType.LengthDelimited).string(message).finish();
}

/**
 * Decodes brpc's `EchoRequest` / `EchoResponse` (`what` names which in errors). Unknown fields
 * are skipped as proto2 requires; the last `message` wins. Throws `PROTOCOL` for malformed
 * protobuf, a `message` field of the wrong wire type or invalid UTF-8, and a missing `message`
 * (a required field).
 */
export function decodeEchoMessage(bytes: Uint8Array, what = "EchoRequest"): string {
  const r = new BinaryReader(bytes);
  let message: string | undefined;
  try {
    while (r.pos < r.len) {
      const [field, wire] = r.tag();
      if (field === 1) {
        if (wire !== WireType.LengthDelimited) {
          throw new VerbusError(
            "PROTOCOL",
            `${what}: field message (1) has wire type ${wire}, expected 2`,
          );
        }
        message = r.string(true);
      } else {
        if (wire === WireType.EndGroup) {
          throw new VerbusError("PROTOCOL", `${what}: unexpected end-group tag`);
        }
        r.skip(wire, field);
      }
    }
  } catch (e) {
    if (e instanceof VerbusError) throw e;
    throw new VerbusError("PROTOCOL", `${what}: malformed protobuf: ${(e as Error).message}`, {
      cause: e,
    });
  }
  if (message === undefined) {
    throw new VerbusError("PROTOCOL", `${what}: required field message (1) is missing`);
  }
  return message;
}
