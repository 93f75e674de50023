/**
 * The request record a producer writes into its ring slot and the agent decodes (layout in
 * `record.ts`). The agent treats every request as hostile: each length is checked against the
 * record's real size before any byte is read, and a bad record throws naming what was wrong.
 *
 * Threading: any; the encoder writes into the caller's area and keeps the bytes of the last names
 * it encoded (allocating only when a name changes); the decoder keeps the last names it decoded.
 * @module
 */
import { VerbusError } from "../../errors.ts";
import type { Int64 } from "../protocol/rpc_meta.ts";
import type { CallPath } from "../client/selector.ts";
import {
  copyBytes,
  get16,
  get32,
  LastBytes,
  LastText,
  NO_BYTES,
  PATHS,
  REQUEST_HEADER,
  set16,
  set32,
  VERSION,
} from "./record.ts";

const dec = new TextDecoder("utf-8", { fatal: true });
const strict = (b: Uint8Array) => dec.decode(b);
const lastService = new LastText(), lastMethod = new LastText();
const putService = new LastBytes(), putMethod = new LastBytes();

/** A request as the agent decoded it (views into the slot: valid until it answers). */
export interface AgentRequest {
  service: string;
  method: string;
  request: Uint8Array;
  attachment: Uint8Array;
  timeoutMs: number;
  forcePath: CallPath | undefined;
  expectedResponseBytes: number;
  logId: Int64;
}

/** A call's fields as a producer sends them. */
export interface RequestFields {
  service: string;
  method: string;
  request: Uint8Array;
  attachment: Uint8Array;
  timeoutMs: number;
  forcePath?: CallPath;
  expectedResponseBytes?: number;
  logId?: Int64;
}

/** Bytes the request record of `f` takes (service and method counted as UTF-8 upper bounds). */
export function requestBytes(f: RequestFields): number {
  return REQUEST_HEADER + (f.service.length + f.method.length) * 3 + f.request.length +
    f.attachment.length;
}

/**
 * Writes the request record of `f` into `area`; returns its length, or −1 when it does not fit
 * (or a name passes 65535 bytes). Allocates nothing while the names repeat.
 */
export function encodeRequest(area: Uint8Array, f: RequestFields): number {
  if (requestBytes(f) > area.length) return -1;
  let at = REQUEST_HEADER;
  const s = putService.put(f.service, area, at);
  if (s < 0) return -1;
  at += s;
  const m = putMethod.put(f.method, area, at);
  if (m < 0) return -1;
  at += m;
  if (s > 0xffff || m > 0xffff) return -1;
  copyBytes(area, at, f.request, 0, f.request.length);
  at += f.request.length;
  if (f.attachment.length > 0) copyBytes(area, at, f.attachment, 0, f.attachment.length);
  at += f.attachment.length;
  const logId = f.logId ?? 0;
  area[0] = VERSION;
  area[1] = f.forcePath ? PATHS.indexOf(f.forcePath) + 1 : 0;
  set16(area, 2, s);
  set16(area, 4, m);
  set16(area, 6, 0);
  set32(area, 8, f.request.length);
  set32(area, 12, f.attachment.length);
  set32(area, 16, f.timeoutMs >>> 0);
  set32(area, 20, (f.expectedResponseBytes ?? 0) >>> 0);
  if (typeof logId === "number" && logId >= 0 && logId < 2 ** 32) {
    set32(area, 24, logId); // the common case, without a BigInt
    set32(area, 28, 0);
  } else {
    new DataView(area.buffer, area.byteOffset, REQUEST_HEADER)
      .setBigUint64(24, BigInt.asUintN(64, BigInt(logId)), true);
  }
  return at;
}

/** An empty request record to decode into (one shape for every record). */
export function newAgentRequest(): AgentRequest {
  return {
    service: "",
    method: "",
    request: NO_BYTES,
    attachment: NO_BYTES,
    timeoutMs: 0,
    forcePath: undefined,
    expectedResponseBytes: 0,
    logId: 0,
  };
}

/**
 * Decodes the request record in the first `length` bytes of `rec` (default: all of it) into
 * `into` (default: a new record) and returns it; throws BOUNDS / PROTOCOL naming the bad field.
 * The request and attachment are views into `rec`.
 */
export function decodeRequest(
  rec: Uint8Array,
  length: number = rec.length,
  into: AgentRequest = newAgentRequest(),
): AgentRequest {
  if (length > rec.length) {
    throw new VerbusError(
      "BOUNDS",
      `request record of ${length} bytes in a ${rec.length}-byte area`,
    );
  }
  if (length < REQUEST_HEADER) {
    throw new VerbusError(
      "BOUNDS",
      `request record of ${length} bytes (header is ${REQUEST_HEADER})`,
    );
  }
  if (rec[0] !== VERSION) {
    throw new VerbusError("PROTOCOL", `request record version ${rec[0]} (expected ${VERSION})`);
  }
  const fp = rec[1];
  if (fp > PATHS.length) throw new VerbusError("PROTOCOL", `request record forced path ${fp}`);
  const s = get16(rec, 2), m = get16(rec, 4);
  const r = get32(rec, 8), a = get32(rec, 12);
  const total = REQUEST_HEADER + s + m + r + a;
  if (total !== length) {
    throw new VerbusError(
      "BOUNDS",
      `request record lengths (service ${s}, method ${m}, request ${r}, attachment ${a}) sum to ${total}, the record has ${length}`,
    );
  }
  const at = REQUEST_HEADER;
  into.service = nameAt(rec, at, s, "service", lastService);
  into.method = nameAt(rec, at + s, m, "method", lastMethod);
  const body = at + s + m;
  into.request = rec.subarray(body, body + r);
  into.attachment = a === 0 ? NO_BYTES : rec.subarray(body + r, body + r + a);
  into.timeoutMs = get32(rec, 16);
  into.forcePath = fp === 0 ? undefined : PATHS[fp - 1];
  into.expectedResponseBytes = get32(rec, 20);
  into.logId = get32(rec, 28) === 0
    ? get32(rec, 24)
    : new DataView(rec.buffer, rec.byteOffset, REQUEST_HEADER).getBigInt64(24, true);
  return into;
}

/** The name in `rec[at, at + n)` (PROTOCOL naming `what` when it is not UTF-8). */
function nameAt(rec: Uint8Array, at: number, n: number, what: string, last: LastText): string {
  try {
    return last.get(rec, at, n, strict);
  } catch {
    throw new VerbusError("PROTOCOL", `request record ${what} is not UTF-8`);
  }
}
