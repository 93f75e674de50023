/**
 * Deno half of the raw TCP echo baseline: `Deno.listen` / `Deno.connect`, `conn.read` into one
 * preallocated buffer per connection, `conn.write` of whole batches. See `raw_tcp.ts`.
 * @module
 */
import { type ClientPhase, EchoClientCore, frameBytesAt, scanFrames } from "./raw_tcp_common.ts";

// deno-lint-ignore no-explicit-any
const g = globalThis as any;

interface DenoConn {
  read(p: Uint8Array): Promise<number | null>;
  write(p: Uint8Array): Promise<number>;
  setNoDelay(on?: boolean): void;
  close(): void;
}

async function writeAll(conn: DenoConn, bytes: Uint8Array): Promise<void> {
  let done = 0;
  while (done < bytes.length) done += await conn.write(done === 0 ? bytes : bytes.subarray(done));
}

/**
 * Makes room after `end` when the buffer is full: moves the partial frame at `start` to the front,
 * growing the buffer when the frame is larger than it. Returns the (possibly new) buffer.
 */
function compact(buf: Uint8Array, start: number, end: number): Uint8Array {
  const need = frameBytesAt(buf, start, end);
  if (need <= buf.length) {
    buf.copyWithin(0, start, end);
    return buf;
  }
  const grown = new Uint8Array(Math.max(need, buf.length * 2));
  grown.set(buf.subarray(start, end));
  return grown;
}

async function serveConn(conn: DenoConn): Promise<void> {
  conn.setNoDelay(true);
  let buf: Uint8Array = new Uint8Array(256 * 1024);
  let start = 0, end = 0;
  try {
    for (;;) {
      const n = await conn.read(end === 0 ? buf : buf.subarray(end));
      if (n === null) return;
      end += n;
      const p = scanFrames(buf, start, end);
      if (p > start) {
        await writeAll(conn, buf.subarray(start, p)); // every complete frame of this read, one write
        start = p;
      }
      if (start === end) start = end = 0;
      else if (end === buf.length) {
        buf = compact(buf, start, end);
        end -= start;
        start = 0;
      }
    }
  } finally {
    try {
      conn.close();
    } catch { /* already closed */ }
  }
}

/** Serves the echo on `host:port`; resolves with the bound port. Runs until the process exits. */
export function denoServe(
  host: string,
  port: number,
  exitOnStdinEof: boolean,
): Promise<number> {
  const listener = g.Deno.listen({ hostname: host, port, transport: "tcp" });
  (async () => {
    for await (const conn of listener) {
      serveConn(conn).catch((e) => console.error(`raw_tcp server: ${e}`));
    }
  })();
  if (exitOnStdinEof) {
    (async () => {
      const b = new Uint8Array(64);
      while ((await g.Deno.stdin.read(b)) !== null) { /* drain */ }
      g.Deno.exit(0);
    })();
  }
  return Promise.resolve(listener.addr.port as number);
}

/** Spawns `file --serve` with this Deno binary; resolves with its port and a stop function. */
export async function denoSpawnServer(file: string): Promise<{ port: number; stop: () => void }> {
  const child = new g.Deno.Command(g.Deno.execPath(), {
    args: ["run", "-A", file, "--serve", "--port", "0", "--exit-on-stdin-eof"],
    stdin: "piped",
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  const reader = child.stdout.getReader();
  let text = "";
  while (!text.includes("\n")) {
    const { value, done } = await reader.read();
    if (done) {
      throw new Error(`server child exited before printing its port (${JSON.stringify(text)})`);
    }
    text += new TextDecoder().decode(value);
  }
  reader.releaseLock();
  const m = /^PORT (\d+)$/m.exec(text);
  if (m === null) throw new Error(`server child said ${JSON.stringify(text)}, expected "PORT <n>"`);
  const stop = () => {
    try {
      child.stdin.close();
    } catch { /* gone */ }
    try {
      child.kill("SIGTERM");
    } catch { /* gone */ }
  };
  return { port: Number(m[1]), stop };
}

/** Connects a load generator to `host:port`. */
export async function denoClient(
  host: string,
  port: number,
  payload: number,
  inflight: number,
): Promise<ClientPhase> {
  const conn: DenoConn = await g.Deno.connect({ hostname: host, port, transport: "tcp" });
  conn.setNoDelay(true);
  const core = new EchoClientCore(payload, inflight);
  const fb = core.frameBytes;
  let buf: Uint8Array = new Uint8Array(Math.max(256 * 1024, 2 * fb));
  // batches[k] = the first k request frames; built once so sending allocates nothing.
  const batches = Array.from({ length: inflight + 1 }, (_, k) => core.batch.subarray(0, k * fb));
  return {
    async run(count, lat) {
      // Reading never waits for writing (or a big batch could deadlock against a server that
      // stops reading while its echo is unread): requests go through a separate write chain.
      let queued = core.start(count, lat);
      let writing = false;
      let write_error: unknown = undefined;
      const pump = async () => {
        writing = true;
        try {
          while (queued > 0) {
            const k = Math.min(queued, inflight);
            queued -= k;
            core.stamp(k, performance.now());
            await writeAll(conn, batches[k]);
          }
        } catch (e) {
          write_error = e;
        } finally {
          writing = false;
        }
      };
      const t0 = performance.now();
      pump();
      let start = 0, end = 0;
      while (!core.finished) {
        const n = await conn.read(end === 0 ? buf : buf.subarray(end));
        if (write_error !== undefined) throw write_error;
        if (n === null) {
          throw new Error(`server closed the connection during a phase of ${count} calls`);
        }
        end += n;
        start = core.take(buf, start, end, performance.now());
        const k = core.next();
        if (k > 0) {
          queued += k;
          if (!writing) pump();
        }
        if (start === end) start = end = 0;
        else if (end === buf.length) {
          buf = compact(buf, start, end);
          end -= start;
          start = 0;
        }
      }
      return performance.now() - t0;
    },
    close() {
      conn.close();
    },
  };
}
