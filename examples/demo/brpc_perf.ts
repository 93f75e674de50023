/**
 * brpc's RDMA benchmark service, `test.PerfTestService/Test` (`example/rdma_performance/
 * test.proto`), so brpc's own `rdma_performance` client can measure a verbus server:
 *
 * ```proto
 * syntax = "proto2";
 * package test;
 * message PerfTestRequest  { required bool echo_attachment = 1; }
 * message PerfTestResponse { required string cpu_usage = 1; }
 * service PerfTestService  { rpc Test(PerfTestRequest) returns (PerfTestResponse); }
 * ```
 * As brpc's server does, the answer carries the process CPU usage at most every 100 ms (an empty
 * string otherwise), and the request attachment is echoed when `echo_attachment` is set.
 * Encoded with `@bufbuild/protobuf`'s wire reader / writer; no generated code. Any thread.
 * @module
 */
import { BinaryReader, BinaryWriter, WireType } from "@bufbuild/protobuf/wire";
import { VerbusError } from "../../errors.ts";

/** Full protobuf name of brpc's benchmark service. */
export const BRPC_PERF_SERVICE = "test.PerfTestService";

const ECHO_YES = Object.freeze({ echoAttachment: true });
const ECHO_NO = Object.freeze({ echoAttachment: false });

/** Decodes `PerfTestRequest`; throws PROTOCOL for malformed bytes or a missing field 1. */
export function decodePerfTestRequest(bytes: Uint8Array): { echoAttachment: boolean } {
  // What brpc's client sends every call (field 1, varint 0 or 1): no reader object per call.
  if (bytes.length === 2 && bytes[0] === 0x08 && bytes[1] <= 1) {
    return bytes[1] === 1 ? ECHO_YES : ECHO_NO;
  }
  const r = new BinaryReader(bytes);
  let echo: boolean | undefined;
  try {
    while (r.pos < r.len) {
      const [field, wire] = r.tag();
      if (field === 1 && wire === WireType.Varint) echo = r.bool();
      else if (field === 1) {
        throw new VerbusError(
          "PROTOCOL",
          `PerfTestRequest: echo_attachment (1) has wire type ${wire}`,
        );
      } else if (wire === WireType.EndGroup) {
        throw new VerbusError("PROTOCOL", "PerfTestRequest: unexpected end-group tag");
      } else r.skip(wire, field);
    }
  } catch (e) {
    if (e instanceof VerbusError) throw e;
    throw new VerbusError(
      "PROTOCOL",
      `PerfTestRequest: malformed protobuf: ${(e as Error).message}`,
    );
  }
  if (echo === undefined) {
    throw new VerbusError(
      "PROTOCOL",
      "PerfTestRequest: required field echo_attachment (1) is missing",
    );
  }
  return { echoAttachment: echo };
}

/** Encodes `PerfTestResponse { cpu_usage }` (a new buffer, owned by the caller). */
export function encodePerfTestResponse(cpuUsage: string): Uint8Array {
  // The answer of all but one call in 100 ms: field 1, length 0, without a writer (its buffer
  // growth and finish cost more than the rest of the handler).
  if (cpuUsage === "") return new Uint8Array([0x0a, 0x00]);
  return new BinaryWriter().tag(1, WireType.LengthDelimited).string(cpuUsage).finish();
}

/** Encodes `PerfTestRequest { echo_attachment }` (what brpc's client sends). */
export function encodePerfTestRequest(echoAttachment: boolean): Uint8Array {
  return new BinaryWriter().tag(1, WireType.Varint).bool(echoAttachment).finish();
}

/** Decodes `PerfTestResponse`'s `cpu_usage` (for clients and tests). */
export function decodePerfTestResponse(bytes: Uint8Array): string {
  const r = new BinaryReader(bytes);
  let s: string | undefined;
  while (r.pos < r.len) {
    const [field, wire] = r.tag();
    if (field === 1 && wire === WireType.LengthDelimited) s = r.string();
    else r.skip(wire, field);
  }
  if (s === undefined) throw new VerbusError("PROTOCOL", "PerfTestResponse: cpu_usage missing");
  return s;
}

/**
 * The process CPU usage (cores busy, e.g. "0.42") since the last sample, sampled at most every
 * 100 ms as brpc's server does; "" between samples.
 */
export function cpuUsageSampler(): () => string {
  // deno-lint-ignore no-explicit-any
  const proc = (globalThis as any).process as { cpuUsage(): { user: number; system: number } };
  let lastAt = 0, lastCpu = 0;
  return () => {
    const now = performance.now();
    if (now - lastAt <= 100) return "";
    const u = proc.cpuUsage();
    const cpu = (u.user + u.system) / 1000; // ms
    const out = lastAt === 0 ? "0" : ((cpu - lastCpu) / (now - lastAt)).toFixed(3);
    lastAt = now;
    lastCpu = cpu;
    return out;
  };
}
