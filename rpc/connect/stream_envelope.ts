/**
 * The messages of a Connect streaming call on a verbus stream (`rpc/stream/`). Each stream
 * message is one envelope: a flag byte, then its body.
 *
 * - `MESSAGE` (0): a protobuf-encoded request or response message.
 * - `HEADER` (1): the server's response headers, JSON `{ "name": "value", … }`; the server's
 *   first envelope, sent before its first message (or with its end).
 * - `END` (2): this side sends nothing more. From the client: the end of its requests (a
 *   half-close; body `{}`). From the server: the status, JSON `{ code?, message?, trailer? }`
 *   (`code` a Connect code number, absent = OK; `trailer` the response trailers).
 *
 * The stream's own CLOSE follows the server's END; an RST (or the connection's end) before it
 * is an abrupt end (the reader's error names it).
 *
 * Threading: pure functions; any thread.
 * @module
 */
import { Code, ConnectError } from "@connectrpc/connect";

/** A message envelope. */
export const MESSAGE = 0;
/** The server's response headers. */
export const HEADER = 1;
/** No more from this side (the server's carries the status). */
export const END = 2;

/** The status a server's END carries. */
export interface EndStatus {
  code?: number;
  message?: string;
  trailer?: Record<string, string>;
}

const te = new TextEncoder();
const td = new TextDecoder();

/** One envelope of `flag` with `body` (copied). */
export function envelope(flag: number, body: Uint8Array): Uint8Array {
  const out = new Uint8Array(1 + body.length);
  out[0] = flag;
  out.set(body, 1);
  return out;
}

/** An envelope whose body is `value` as JSON. */
export function jsonEnvelope(flag: number, value: unknown): Uint8Array {
  return envelope(flag, te.encode(JSON.stringify(value)));
}

/** The JSON body of a HEADER or END envelope; throws ConnectError Internal when it is not. */
export function jsonBody<T>(env: Uint8Array, what: string): T {
  try {
    const v = JSON.parse(td.decode(env.subarray(1)));
    if (typeof v !== "object" || v === null || Array.isArray(v)) throw new Error("not an object");
    return v as T;
  } catch (e) {
    throw new ConnectError(
      `bad ${what} envelope on the stream: ${(e as Error).message}`,
      Code.Internal,
    );
  }
}

/** Headers as a plain object (for a HEADER or END envelope). */
export function headersObject(h: Headers | undefined): Record<string, string> {
  const o: Record<string, string> = {};
  h?.forEach((v, k) => (o[k] = v));
  return o;
}

/** The status of an error, for the server's END (a ConnectError's code and raw message). */
export function statusOf(e: unknown, trailer: Headers | undefined): EndStatus {
  const c = ConnectError.from(e);
  return { code: c.code, message: c.rawMessage, trailer: headersObject(trailer) };
}
