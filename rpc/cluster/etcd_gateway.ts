/**
 * The little of etcd v3 that verbus needs, spoken over etcd's JSON gateway (grpc-gateway, HTTP/1.1)
 * with plain `fetch` — the npm `etcd3` client rides on grpc-js, which fails on Deno and Bun.
 * Paths are `/v3/…`: etcd 3.4 (Debian 12's `etcd-server`) serves both `/v3/` and the older
 * `/v3beta/`, and 3.5 dropped `/v3beta/`. Keys and values travel base64; int64 fields (revisions,
 * lease ids, TTLs) travel as decimal strings and are kept as strings or BigInt here, never
 * rounded through a double.
 *
 * Every request has a deadline and a byte cap on what it reads; every wait ends when the caller's
 * signal fires. Errors are VerbusErrors: CONNECT_FAILED (no answer), TIMEOUT (deadline), PROTOCOL
 * (an answer that is not etcd's, or an error etcd sent), naming the endpoint and the path.
 *
 * Threading: the JS thread of the caller; no state is shared between calls.
 * @module
 */
import { Buffer } from "node:buffer";
import { VerbusError } from "../../errors.ts";
import { parseServerLine } from "./naming.ts";

/** Most bytes read from one unary answer or one line of a stream (a hostile or broken peer). */
export const MAX_ANSWER_BYTES = 8 * 1024 * 1024;

/** Where an `etcd://HOST:PORT[,HOST:PORT…]/PREFIX` URL points. */
export interface EtcdTarget {
  /** The URL as given (for logs and errors). */
  readonly url: string;
  /** `host:port` of each etcd member, tried in turn when one fails. */
  readonly endpoints: readonly string[];
  /** The key prefix: the URL's path, percent-decoded, always ending in "/" (`/verbus/demo/`). */
  readonly prefix: string;
}

/**
 * Parses `etcd://HOST:PORT[,HOST:PORT…]/PREFIX`. The prefix is the path with a "/" added at the
 * end, so `…/demo` never matches the keys of `…/demo2`. Throws INVALID_ARGUMENT naming what is
 * wrong (no endpoint, a bad port, no prefix).
 */
export function parseEtcdUrl(url: string): EtcdTarget {
  const m = /^etcd:\/\/([^/?#]+)(\/[^?#]*)?$/i.exec(url.trim());
  const bad = (why: string) =>
    new VerbusError(
      "INVALID_ARGUMENT",
      `etcd URL "${url}": ${why}; expected etcd://HOST:PORT/PREFIX`,
    );
  if (!m) throw bad("not an etcd:// URL with a host");
  const endpoints = m[1].split(",").map((e) => {
    try {
      return parseServerLine(e)?.address ?? "";
    } catch {
      return "";
    }
  });
  if (endpoints.some((e) => e === "")) throw bad(`bad endpoint in "${m[1]}"`);
  let path: string;
  try {
    path = decodeURIComponent(m[2] ?? "");
  } catch {
    throw bad("the prefix is not valid percent-encoding");
  }
  if (path.replace(/\/+$/, "") === "") throw bad("no key prefix");
  return { url, endpoints, prefix: path.endsWith("/") ? path : `${path}/` };
}

/** base64 of the UTF-8 bytes of `text` (how the gateway takes keys and values). */
export function b64(text: string): string {
  return Buffer.from(text, "utf8").toString("base64");
}

/** The text of a base64 field etcd sent ("" when absent). */
export function unb64(field: unknown): string {
  return typeof field === "string" ? Buffer.from(field, "base64").toString("utf8") : "";
}

/**
 * etcd's `range_end` for every key that starts with `prefix`: the prefix with its last byte
 * plus one (bytes 0xff dropped first), base64.
 */
export function prefixEnd(prefix: string): string {
  const bytes = [...Buffer.from(prefix, "utf8")];
  while (bytes.length > 0 && bytes[bytes.length - 1] === 0xff) bytes.pop();
  if (bytes.length === 0) return Buffer.from([0]).toString("base64"); // every key
  bytes[bytes.length - 1]++;
  return Buffer.from(bytes).toString("base64");
}

/** An object field of a JSON answer, or an empty object (the gateway omits zero values). */
export function obj(v: unknown): Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v)
    ? v as Record<string, unknown>
    : {};
}

/** An int64 field (a decimal string, or omitted for 0) as BigInt; PROTOCOL if it is not one. */
export function int64(v: unknown, what: string): bigint {
  if (v === undefined || v === null) return 0n;
  if ((typeof v === "string" && /^-?\d{1,20}$/.test(v)) || Number.isSafeInteger(v)) {
    return BigInt(v as string | number);
  }
  throw new VerbusError("PROTOCOL", `etcd sent ${what} ${JSON.stringify(v)}: not an integer`);
}

/**
 * A signal that fires when `parent` fires or `ms` pass, whichever is first. `done()` releases the
 * timer and the listener on `parent` (call it in `finally`); `timedOut` says which one fired.
 */
export function deadline(
  parent: AbortSignal | undefined,
  ms: number,
): { signal: AbortSignal; timedOut: () => boolean; done: () => void } {
  const c = new AbortController();
  let timedOut = false;
  const onParent = () => c.abort(parent?.reason);
  const timer = ms > 0 && Number.isFinite(ms)
    ? setTimeout(() => {
      timedOut = true;
      c.abort(new VerbusError("TIMEOUT", `no answer in ${ms} ms`));
    }, ms)
    : undefined;
  if (parent?.aborted) c.abort(parent.reason);
  else parent?.addEventListener("abort", onParent, { once: true });
  return {
    signal: c.signal,
    timedOut: () => timedOut,
    done: () => {
      clearTimeout(timer);
      parent?.removeEventListener("abort", onParent);
    },
  };
}

/**
 * The failure of a request to `where` as a VerbusError: the deadline (TIMEOUT), a VerbusError
 * already (kept), else no answer (CONNECT_FAILED), the cause kept.
 */
function failure(e: unknown, where: string, timedOut: boolean, ms: number): VerbusError {
  if (timedOut) return new VerbusError("TIMEOUT", `${where}: no answer in ${ms} ms`, { cause: e });
  if (e instanceof VerbusError) {
    return e.message.startsWith(where) ? e : new VerbusError(e.code, `${where}: ${e.message}`, {
      cause: e,
    });
  }
  const text = e instanceof Error ? e.message : String(e);
  return new VerbusError("CONNECT_FAILED", `${where}: ${text}`, { cause: e });
}

/** The error etcd put in an answer (`{"error": …, "message": …, "code": …}`), or null. */
function etcdError(json: Record<string, unknown>): string | null {
  const err = json.error;
  if (err === undefined) return null;
  const e = obj(err);
  const message = json.message ?? e.message ?? err;
  return `etcd error: ${typeof message === "string" ? message : JSON.stringify(message)}`;
}

/**
 * Reads a body to its end, at most `max` bytes (PROTOCOL past it; the stream is cancelled).
 * The caller's signal ends the wait (the fetch it came from was made with it).
 */
async function readBounded(body: ReadableStream<Uint8Array> | null, max: number): Promise<string> {
  if (body === null) return "";
  const reader = body.getReader();
  const parts: Uint8Array[] = [];
  let size = 0;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      size += value.byteLength;
      if (size > max) throw new VerbusError("PROTOCOL", `answer longer than ${max} bytes`);
      parts.push(value);
    }
  } finally {
    reader.cancel().catch(() => {});
  }
  return Buffer.concat(parts).toString("utf8");
}

/**
 * One unary call: POSTs `body` as JSON to `http://ENDPOINT/PATH` and returns the answer's JSON
 * object. Rejects (see the module doc) on no answer, a deadline of `timeoutMs`, `signal`, an HTTP
 * error or an answer carrying etcd's error.
 */
export async function etcdPost(
  endpoint: string,
  path: string,
  body: unknown,
  timeoutMs: number,
  signal?: AbortSignal,
): Promise<Record<string, unknown>> {
  const where = `etcd at ${endpoint} ${path}`;
  const d = deadline(signal, timeoutMs);
  try {
    const res = await fetch(`http://${endpoint}${path}`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body),
      signal: d.signal,
    });
    const text = await readBounded(res.body, MAX_ANSWER_BYTES);
    let json: Record<string, unknown>;
    try {
      json = obj(JSON.parse(text));
    } catch {
      throw new VerbusError("PROTOCOL", `HTTP ${res.status}, not JSON: ${text.slice(0, 120)}`);
    }
    const err = etcdError(json);
    if (err !== null) throw new VerbusError("PROTOCOL", err, { context: { status: res.status } });
    if (!res.ok) throw new VerbusError("PROTOCOL", `HTTP ${res.status}: ${text.slice(0, 120)}`);
    return json;
  } catch (e) {
    throw failure(e, where, d.timedOut(), timeoutMs);
  } finally {
    d.done();
  }
}

/**
 * A streamed call (`/v3/watch`, `/v3/lease/keepalive`): POSTs `body` and yields each JSON line of
 * the answer's `result` as it arrives, until the stream ends or `signal` fires (then the body is
 * cancelled, so no reader is left pending on either runtime). The connection must be made within
 * `connectMs`. A line that is not JSON, longer than {@link MAX_ANSWER_BYTES}, or etcd's error ends
 * the stream with PROTOCOL; the end of the stream by the peer simply ends the iteration.
 */
export async function* etcdStream(
  endpoint: string,
  path: string,
  body: unknown,
  connectMs: number,
  signal: AbortSignal,
): AsyncGenerator<Record<string, unknown>, void, void> {
  const where = `etcd at ${endpoint} ${path}`;
  const d = deadline(signal, connectMs);
  let reader: ReadableStreamDefaultReader<Uint8Array> | undefined;
  const cancel = () => void reader?.cancel().catch(() => {});
  signal.addEventListener("abort", cancel, { once: true });
  try {
    let res: Response;
    try {
      res = await fetch(`http://${endpoint}${path}`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(body),
        signal,
      });
      if (!res.ok) {
        const text = await readBounded(res.body, 4096);
        throw new VerbusError("PROTOCOL", `HTTP ${res.status}: ${text.slice(0, 120)}`);
      }
    } catch (e) {
      throw failure(e, where, d.timedOut(), connectMs);
    } finally {
      d.done();
    }
    if (res.body === null) return;
    reader = res.body.getReader();
    if (signal.aborted) cancel();
    let pending: Uint8Array = new Uint8Array(0);
    for (;;) {
      let chunk: ReadableStreamReadResult<Uint8Array>;
      try {
        chunk = await reader.read();
      } catch (e) {
        if (signal.aborted) return;
        throw failure(e, where, false, 0);
      }
      if (chunk.done || signal.aborted) return;
      pending = pending.length === 0 ? chunk.value : Buffer.concat([pending, chunk.value]);
      let nl: number;
      while ((nl = pending.indexOf(10)) >= 0) {
        const line = Buffer.from(pending.subarray(0, nl)).toString("utf8").trim();
        pending = pending.subarray(nl + 1);
        if (line === "") continue;
        let json: Record<string, unknown>;
        try {
          json = obj(JSON.parse(line));
        } catch {
          throw new VerbusError(
            "PROTOCOL",
            `${where}: a line that is not JSON: ${line.slice(0, 120)}`,
          );
        }
        const err = etcdError(json);
        if (err !== null) throw new VerbusError("PROTOCOL", `${where}: ${err}`);
        yield obj(json.result);
        if (signal.aborted) return;
      }
      if (pending.length > MAX_ANSWER_BYTES) {
        throw new VerbusError("PROTOCOL", `${where}: a line longer than ${MAX_ANSWER_BYTES} bytes`);
      }
    }
  } finally {
    signal.removeEventListener("abort", cancel);
    cancel();
  }
}
