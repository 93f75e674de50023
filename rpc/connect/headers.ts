/**
 * Connect request headers ↔ baidu_std `RpcMeta`, the same way brpc maps HTTP headers onto its
 * own protocol (`src/brpc/policy/http_rpc_protocol.cpp`):
 *
 * | Connect request                  | `RpcMeta` field          | carried by                 |
 * |----------------------------------|--------------------------|----------------------------|
 * | `timeoutMs` (call option)        | `request.timeout_ms`     | every path (descriptor)    |
 * | header `log-id` (decimal u64)    | `request.log_id`         | every path (descriptor)    |
 * | header `x-request-id`            | `request.request_id`     | every path (metadata block)|
 * | any other header                 | `user_fields[name]`      | every path (metadata block)|
 *
 * Header names arrive lower-cased (the `Headers` class does that); repeated headers are joined
 * with `", "`. On a fabric, `request_id` and `user_fields` travel in the call's metadata block
 * (`rpc/session/meta_block.ts`, up to 4 KiB; a call whose headers make a larger block goes over
 * TCP, the size logged), so a tracing or auth header keeps the fast path. The answer's
 * `user_fields` are the response headers and verbus's trailers extension the trailers (see
 * `handler_context.ts`), on every path too.
 *
 * Pure functions; any thread.
 * @module
 */
import { Code, ConnectError } from "@connectrpc/connect";
import type { ClientCallOptions } from "../client/client_options.ts";
import type { CallContext } from "../protocol/dispatch.ts";

/** The header that carries `log_id` (as in brpc's HTTP protocol). */
export const LOG_ID_HEADER = "log-id";
/** The header that carries `request_id` (brpc's `-request_id_header` default). */
export const REQUEST_ID_HEADER = "x-request-id";

const NO_OPTIONS: ClientCallOptions = Object.freeze({});
const MAX_U64 = (1n << 64n) - 1n;

/**
 * The verbus call options of one Connect call: its timeout (rounded up to whole ms; the caller
 * checked it is positive) and its headers, per the table in the module doc. Throws a
 * `ConnectError` (InvalidArgument) naming a `log-id` header that is not a decimal u64.
 */
export function callOptionsOf(
  header: HeadersInit | undefined,
  timeoutMs: number | undefined,
): ClientCallOptions {
  if (header === undefined && timeoutMs === undefined) return NO_OPTIONS;
  const o: ClientCallOptions = {};
  if (timeoutMs !== undefined) o.timeoutMs = Math.min(Math.ceil(timeoutMs), 0x7fff_ffff);
  if (header === undefined) return o;
  let fields: Map<string, string> | undefined;
  const entries = header instanceof Headers ? header : plainEntries(header) ?? new Headers(header);
  for (const [name, value] of entries) {
    if (name === LOG_ID_HEADER) o.logId = logIdOf(value);
    else if (name === REQUEST_ID_HEADER) o.requestId = value;
    else (fields ??= new Map()).set(name, value);
  }
  if (fields !== undefined) o.userFields = fields;
  return o;
}

/** An HTTP token (a header name), either case. */
const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
/** What a header value may not hold (Headers refuses it), or start or end with (Headers trims it). */
const ODD_VALUE = /[\0\r\n\u0100-\uffff]|^[\t ]|[\t ]$/;

/**
 * The entries `new Headers(init)` would give for the common init of a generated client's call, a
 * plain object of a few string headers with distinct names — without building a `Headers` (which
 * costs more than the rest of a small call's encoding on Deno): names lower-cased. Undefined for
 * anything else (a name or value `Headers` would refuse or change, names equal but for case,
 * arrays, many headers): then use `Headers`.
 */
function plainEntries(init: HeadersInit): [string, string][] | undefined {
  if (Array.isArray(init) || Object.getPrototypeOf(init) !== Object.prototype) return undefined;
  const keys = Object.keys(init);
  if (keys.length > 8) return undefined;
  const out: [string, string][] = [];
  for (const key of keys) {
    const value = (init as Record<string, unknown>)[key];
    if (typeof value !== "string" || !TOKEN.test(key) || ODD_VALUE.test(value)) return undefined;
    const name = key.toLowerCase();
    for (const [n] of out) if (n === name) return undefined;
    out.push([name, value]);
  }
  return out;
}

function logIdOf(value: string): number | bigint {
  const v = /^\d{1,20}$/.test(value.trim()) ? BigInt(value.trim()) : -1n;
  if (v < 0n || v > MAX_U64) {
    throw new ConnectError(
      `header ${LOG_ID_HEADER}: expected a decimal unsigned 64-bit integer, got ${
        JSON.stringify(value.slice(0, 40))
      }`,
      Code.InvalidArgument,
    );
  }
  return v <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(v) : v;
}

/**
 * The request headers a handler sees (the reverse of {@link callOptionsOf}): every
 * `user_fields` entry, `x-request-id` from `request_id` and `log-id` from `log_id`. A
 * `user_fields` name that is not a valid header name is skipped (brpc allows any string).
 */
export function requestHeadersOf(call: CallContext): Headers {
  const h = appendFields(new Headers(), call.userFields);
  if (call.requestId !== undefined) h.set(REQUEST_ID_HEADER, call.requestId);
  if (call.logId !== undefined) {
    h.set(LOG_ID_HEADER, BigInt.asUintN(64, BigInt(call.logId)).toString());
  }
  return h;
}

/**
 * Appends every entry of `fields` (`user_fields`, trailers) to `h` and returns it; a name or
 * value `Headers` refuses is left out (brpc's user_fields are arbitrary strings).
 */
export function appendFields(h: Headers, fields: ReadonlyMap<string, string> | undefined): Headers {
  if (fields === undefined) return h;
  for (const [k, v] of fields) {
    try {
      h.append(k, v);
    } catch {
      // Not a header name or value: left out.
    }
  }
  return h;
}
