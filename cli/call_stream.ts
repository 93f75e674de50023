/**
 * `verbus call --stream-count N`: opens a stream to `verbus.Demo/Count` (a brpc stream on the
 * client's fabric session when it has one — shm, verbs, URMA — else its TCP connection) and
 * reads the N messages the server streams back; reports how many arrived (in order), the bytes,
 * the path (STREAM) and fabric (the stream's carrier; `session_fabric` is the client's call
 * fabric) and messages/s.
 * A stream that stays silent for the call timeout is reset and reported as failed.
 * CLI only; the main JS thread.
 * @module
 */
import { countIndexOf, DEMO_SERVICE, encodeCountRequest } from "../examples/demo/mod.ts";
import { type Client, openStream } from "../mod.ts";
import type { OpReport } from "./call.ts";

/** Runs the op on the direct client `client`. */
export async function runStreamCount(
  client: Client,
  n: number,
  timeoutMs: number,
): Promise<OpReport> {
  const t0 = performance.now();
  const base = { op: "stream-count", path: "STREAM" as const, fabric: client.fabric };
  let got = 0, bytes = 0, disorder = 0;
  let last = t0;
  let timer: ReturnType<typeof setInterval> | undefined;
  try {
    const request = encodeCountRequest(n);
    const { stream } = await openStream(client, DEMO_SERVICE, "Count", request, { timeoutMs });
    base.fabric = stream.carrier;
    timer = setInterval(() => {
      if (performance.now() - last > timeoutMs) stream.reset(`no message for ${timeoutMs} ms`);
    }, Math.min(timeoutMs, 1000));
    for await (const m of stream) {
      if (countIndexOf(m) !== got) disorder++;
      got++;
      bytes += m.length;
      last = performance.now();
    }
  } catch (e) {
    const us = Math.round((performance.now() - t0) * 1000);
    return {
      ok: false,
      ...base,
      latency_us: us,
      error: `after ${got} messages: ${(e as Error).message}`,
    };
  } finally {
    clearInterval(timer);
  }
  const seconds = (performance.now() - t0) / 1000;
  const result = {
    messages: got,
    bytes,
    seconds: Math.round(seconds * 1e6) / 1e6,
    messages_per_s: seconds > 0 ? Math.round(got / seconds) : 0,
    session_fabric: client.fabric,
  };
  const ok = got === n && disorder === 0;
  const error = ok ? undefined : `received ${got} of ${n} messages, ${disorder} out of order`;
  return {
    ok,
    ...base,
    latency_us: Math.round(seconds * 1e6),
    result,
    ...(error ? { error } : {}),
  };
}
