/**
 * Connect request headers ↔ baidu_std `RpcMeta`, the same way brpc maps HTTP headers onto its
 * own protocol (`src/brpc/policy/http_rpc_protocol.cpp`):
 *
 * | Connect request                  | `RpcMeta` field          | carried by                 |
 * |----------------------------------|--------------------------|----------------------------|
 * | `timeoutMs` (call option)        | `request.timeout_ms`     | every path (fabric too)    |
 * | header `log-id` (decimal u64)    | `request.log_id`         | every path (fabric too)    |
 * | header `x-request-id`            | `request.request_id`     | TCP only                   |
 * | any other header                 | `user_fields[name]`      | TCP only                   |
 *
 * Header names arrive lower-cased (the `Headers` class does that); repeated headers are joined
 * with `", "`. The fabric request descriptor is fixed-size and has no room for `request_id` or
 * `user_fields`, so a call carrying either goes over TCP (the verbus `Client` routes it there),
 * and the server sees every header it was sent. Response headers and trailers are not carried
 * (baidu_std answers have only `error_code` / `error_text` here): a client's are always empty.
 *
 * Pure functions; any thread.
 * @module
 */
import { Code, ConnectError } from "@connectrpc/connect";
import type { ClientCallOptions } from "../connect_options.ts";
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
  for (const [name, value] of header instanceof Headers ? header : new Headers(header)) {
    if (name === LOG_ID_HEADER) o.logId = logIdOf(value);
    else if (name === REQUEST_ID_HEADER) o.requestId = value;
    else (fields ??= new Map()).set(name, value);
  }
  if (fields !== undefined) o.userFields = fields;
  return o;
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
  const h = new Headers();
  const fields = call.userFields;
  if (fields !== undefined) {
    for (const [k, v] of fields) {
      try {
        h.append(k, v);
      } catch {
        // Not a header name or value (brpc's user_fields are arbitrary strings): left out.
      }
    }
  }
  if (call.requestId !== undefined) h.set(REQUEST_ID_HEADER, call.requestId);
  if (call.logId !== undefined) {
    h.set(LOG_ID_HEADER, BigInt.asUintN(64, BigInt(call.logId)).toString());
  }
  return h;
}
