/**
 * Bun half of the raw TCP echo baseline: `Bun.listen` / `Bun.connect` with `binaryType:
 * "uint8array"`. Bun's `socket.write` is unbuffered (it returns the bytes the kernel took), so each
 * side keeps a small pending-output buffer that `drain` flushes; received chunks are parsed in
 * place and only a partial trailing frame is copied (into a per-connection carry buffer).
 * See `raw_tcp.ts`.
 * @module
 */
import { type ClientPhase, EchoClientCore, scanFrames } from "./raw_tcp_common.ts";

// deno-lint-ignore no-explicit-any
const g = globalThis as any;

/** The part of Bun's Socket used here. */
interface BunSocket {
  write(data: Uint8Array, byteOffset?: number, byteLength?: number): number;
  setNoDelay?(on?: boolean): boolean;
  end(): void;
}

/** Output that the kernel did not take yet, flushed on `drain`, kept in order. */
class PendingOut {
  #buf = new Uint8Array(64 * 1024);
  #start = 0;
  #end = 0;

  /** Writes `src[a, b)` now, or queues what the socket does not take. */
  send(s: BunSocket, src: Uint8Array, a: number, b: number): void {
    if (this.#end > this.#start) return this.#append(src, a, b);
    const n = s.write(src, a, b - a);
    if (n < 0) throw new Error("socket is closed");
    if (n < b - a) this.#append(src, a + n, b);
  }

  /** Called on `drain`. */
  flush(s: BunSocket): void {
    if (this.#end === this.#start) return;
    const n = s.write(this.#buf, this.#start, this.#end - this.#start);
    if (n > 0) this.#start += n;
    if (this.#start === this.#end) this.#start = this.#end = 0;
  }

  #append(src: Uint8Array, a: number, b: number): void {
    const n = b - a;
    if (this.#end + n > this.#buf.length) {
      const live = this.#end - this.#start;
      if (live + n <= this.#buf.length) this.#buf.copyWithin(0, this.#start, this.#end);
      else {
        const next = new Uint8Array(Math.max(2 * this.#buf.length, live + n));
        next.set(this.#buf.subarray(this.#start, this.#end));
        this.#buf = next;
      }
      this.#start = 0;
      this.#end = live;
    }
    this.#buf.set(src.subarray(a, b), this.#end);
    this.#end += n;
  }
}

/**
 * Reassembles frames across chunks: `feed` returns the bytes to parse — the chunk itself when
 * nothing is carried over (no copy) — and `keep` stores the unparsed tail for the next chunk.
 */
class Carry {
  #buf = new Uint8Array(64 * 1024);
  #len = 0;

  /** The carried bytes followed by `chunk` (or just `chunk`). */
  feed(chunk: Uint8Array): Uint8Array {
    if (this.#len === 0) return chunk;
    this.#ensure(this.#len + chunk.length);
    this.#buf.set(chunk, this.#len);
    this.#len += chunk.length;
    return this.#buf.subarray(0, this.#len);
  }

  /** Keeps `src[p, src.length)` (`src` is what {@link feed} returned) for the next chunk. */
  keep(src: Uint8Array, p: number): void {
    const rest = src.length - p;
    if (rest > 0 && src.buffer === this.#buf.buffer) this.#buf.copyWithin(0, p, src.length);
    else if (rest > 0) {
      this.#len = 0;
      this.#ensure(rest);
      this.#buf.set(src.subarray(p));
    }
    this.#len = rest;
  }

  #ensure(n: number): void {
    if (n <= this.#buf.length) return;
    const next = new Uint8Array(Math.max(n, 2 * this.#buf.length));
    next.set(this.#buf.subarray(0, this.#len));
    this.#buf = next;
  }
}

/** Serves the echo on `host:port`; resolves with the bound port. */
export function bunServe(host: string, port: number, exitOnStdinEof: boolean): Promise<number> {
  type State = { out: PendingOut; carry: Carry };
  const server = g.Bun.listen({
    hostname: host,
    port,
    socket: {
      binaryType: "uint8array",
      open(s: BunSocket & { data: State }) {
        s.setNoDelay?.(true);
        s.data = { out: new PendingOut(), carry: new Carry() };
      },
      data(s: BunSocket & { data: State }, chunk: Uint8Array) {
        const src = s.data.carry.feed(chunk);
        const p = scanFrames(src, 0, src.length);
        if (p > 0) s.data.out.send(s, src, 0, p); // every complete frame of this chunk, one write
        s.data.carry.keep(src, p);
      },
      drain(s: BunSocket & { data: State }) {
        s.data.out.flush(s);
      },
      error(_s: BunSocket, e: Error) {
        console.error(`raw_tcp server: ${e}`);
      },
    },
  });
  if (exitOnStdinEof) {
    g.process.stdin.resume();
    g.process.stdin.on("end", () => g.process.exit(0));
  }
  return Promise.resolve(server.port as number);
}

/** Spawns `file --serve` with this Bun binary; resolves with its port and a stop function. */
export async function bunSpawnServer(file: string): Promise<{ port: number; stop: () => void }> {
  const child = g.Bun.spawn([
    g.process.execPath,
    file,
    "--serve",
    "--port",
    "0",
    "--exit-on-stdin-eof",
  ], {
    stdin: "pipe",
    stdout: "pipe",
    stderr: "inherit",
  });
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
      child.stdin.end();
    } catch { /* gone */ }
    child.kill("SIGTERM");
  };
  return { port: Number(m[1]), stop };
}

/** Connects a load generator to `host:port`. */
export async function bunClient(
  host: string,
  port: number,
  payload: number,
  inflight: number,
): Promise<ClientPhase> {
  const core = new EchoClientCore(payload, inflight);
  const fb = core.frameBytes;
  const out = new PendingOut();
  const carry = new Carry();
  let phase: { resolve: (ms: number) => void; reject: (e: unknown) => void; t0: number } | null =
    null;
  const fail = (e: unknown) => {
    const p = phase;
    phase = null;
    p?.reject(e);
  };
  const socket: BunSocket = await g.Bun.connect({
    hostname: host,
    port,
    socket: {
      binaryType: "uint8array",
      data(s: BunSocket, chunk: Uint8Array) {
        if (phase === null) return;
        try {
          const src = carry.feed(chunk);
          const p = core.take(src, 0, src.length, performance.now());
          carry.keep(src, p);
          if (core.finished) {
            const done = phase;
            phase = null;
            done.resolve(performance.now() - done.t0);
            return;
          }
          const k = core.next();
          if (k > 0) {
            core.stamp(k, performance.now());
            out.send(s, core.batch, 0, k * fb);
          }
        } catch (e) {
          fail(e);
        }
      },
      drain(s: BunSocket) {
        out.flush(s);
      },
      close() {
        fail(new Error("server closed the connection"));
      },
      error(_s: BunSocket, e: Error) {
        fail(e);
      },
    },
  });
  socket.setNoDelay?.(true);
  return {
    run(count, lat) {
      return new Promise<number>((resolve, reject) => {
        const k = core.start(count, lat);
        phase = { resolve, reject, t0: performance.now() };
        core.stamp(k, phase.t0);
        out.send(socket, core.batch, 0, k * fb);
      });
    },
    close() {
      phase = null;
      socket.end();
    },
  };
}
