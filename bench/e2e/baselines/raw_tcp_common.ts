/**
 * Runtime-independent parts of the raw TCP echo baseline (`raw_tcp.ts`): flags, the frame scanner
 * the server uses, and the client's pipelining core. Frames are `u32 big-endian length` + payload.
 * Nothing here allocates per message.
 * @module
 */

/** Parsed command line of `raw_tcp.ts`. */
export interface RawTcpArgs {
  /** Payload bytes per call. */
  payload: number;
  /** Calls outstanding at once. */
  inflight: number;
  /** Measured calls. */
  calls: number;
  /** Unmeasured calls run first. */
  warmup: number;
  /** Server only. */
  serve: boolean;
  /** Server only: exit when stdin reaches EOF (set by the parent that spawned it). */
  exitOnStdinEof: boolean;
  /** Client only, against `HOST:PORT`. */
  connect: string;
  /** Server port (0 = ephemeral). */
  port: number;
  /** Server bind address. */
  host: string;
}

/** One connected load generator. */
export interface ClientPhase {
  /** Runs `count` calls; records each latency (µs) into `lat` when given; resolves with the elapsed ms. */
  run(count: number, lat: Float64Array | null): Promise<number>;
  /** Closes the connection. */
  close(): void;
}

/** Largest frame payload either side accepts (64 MiB). */
export const MAX_PAYLOAD = 64 * 1024 * 1024;

const USAGE = "usage: raw_tcp.ts [--payload N] [--inflight N] [--calls N] [--warmup N] " +
  "[--serve [--port P] [--host H] [--exit-on-stdin-eof] | --connect HOST:PORT]";

// deno-lint-ignore no-explicit-any
const g = globalThis as any;

/** Prints `msg` and the usage to stderr and exits with code 2. */
export function usageError(msg: string): never {
  console.error(`raw_tcp: ${msg}\n${USAGE}`);
  if (typeof g.Bun !== "undefined") g.process.exit(2);
  else g.Deno.exit(2);
  throw new Error("unreachable");
}

/** Parses the flags of `raw_tcp.ts`; exits 2 on a bad one. */
export function parseArgs(argv: readonly string[]): RawTcpArgs {
  const o: RawTcpArgs = {
    payload: 64,
    inflight: 1,
    calls: 10000,
    warmup: 1000,
    serve: false,
    exitOnStdinEof: false,
    connect: "",
    port: 0,
    host: "127.0.0.1",
  };
  const ints = ["payload", "inflight", "calls", "warmup", "port"] as const;
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i].replace(/^--/, "");
    if (flag === "serve") o.serve = true;
    else if (flag === "exit-on-stdin-eof") o.exitOnStdinEof = true;
    else if ((ints as readonly string[]).includes(flag) || flag === "connect" || flag === "host") {
      const v = argv[++i];
      if (v === undefined) usageError(`--${flag} needs a value`);
      if (flag === "connect" || flag === "host") o[flag] = v;
      else {
        const n = Number(v);
        if (!Number.isInteger(n) || n < 0) {
          usageError(`--${flag} must be a non-negative integer, got ${v}`);
        }
        o[flag as (typeof ints)[number]] = n;
      }
    } else usageError(`unknown flag ${argv[i]}`);
  }
  if (!o.serve && (o.inflight < 1 || o.calls < 1)) {
    usageError("--inflight and --calls must be >= 1");
  }
  if (o.payload > MAX_PAYLOAD) usageError(`--payload must be <= ${MAX_PAYLOAD}`);
  return o;
}

/** The p-quantile (0..1) of sorted latencies in µs (nearest rank), rounded to 0.1 µs. */
export function quantileUs(sorted: Float64Array, p: number): number {
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil(p * sorted.length) - 1));
  return Math.round(sorted[i] * 10) / 10;
}

function readU32BE(b: Uint8Array, p: number): number {
  return ((b[p] << 24) | (b[p + 1] << 16) | (b[p + 2] << 8) | b[p + 3]) >>> 0;
}

/**
 * Returns the end of the last complete frame in `buf[start, end)` (`start` if none). Throws when a
 * frame header announces more than {@link MAX_PAYLOAD} bytes.
 */
export function scanFrames(buf: Uint8Array, start: number, end: number): number {
  let p = start;
  while (end - p >= 4) {
    const len = readU32BE(buf, p);
    if (len > MAX_PAYLOAD) throw new Error(`frame of ${len} bytes exceeds ${MAX_PAYLOAD}`);
    if (end - p - 4 < len) break;
    p += 4 + len;
  }
  return p;
}

/** Total bytes of the (partial) frame at `buf[start]`, or 4 when its header is incomplete. */
export function frameBytesAt(buf: Uint8Array, start: number, end: number): number {
  return end - start >= 4 ? 4 + readU32BE(buf, start) : 4;
}

/**
 * The client's pipelining state: a prebuilt batch of `inflight` identical request frames (send
 * `batch[0, k * frameBytes)` for k requests) and a ring of send times. Responses arrive in order.
 */
export class EchoClientCore {
  /** Bytes of one frame (4 + payload). */
  readonly frameBytes: number;
  /** `inflight` request frames back to back; never modified after construction. */
  readonly batch: Uint8Array;
  readonly #payload: number;
  readonly #inflight: number;
  readonly #times: Float64Array;
  #head = 0;
  #tail = 0;
  #total = 0;
  #issued = 0;
  #stamped = 0;
  #done = 0;
  #completed = 0;
  #lat: Float64Array | null = null;

  constructor(payload: number, inflight: number) {
    this.#payload = payload;
    this.#inflight = inflight;
    this.frameBytes = 4 + payload;
    this.batch = new Uint8Array(this.frameBytes * inflight);
    for (let f = 0; f < inflight; f++) {
      const at = f * this.frameBytes;
      new DataView(this.batch.buffer).setUint32(at, payload, false);
      for (let i = 0; i < payload; i++) this.batch[at + 4 + i] = (i * 31 + 7) & 0xff;
    }
    this.#times = new Float64Array(inflight);
  }

  /** Starts a phase of `total` calls; returns how many requests to send first (issued now). */
  start(total: number, lat: Float64Array | null): number {
    this.#total = total;
    this.#stamped =
      this.#done =
      this.#completed =
      this.#head =
      this.#tail =
        0;
    this.#lat = lat;
    this.#issued = Math.min(this.#inflight, total);
    return this.#issued;
  }

  /** Records that `k` issued requests are being written at `now` (ms); call in write order. */
  stamp(k: number, now: number): void {
    for (let i = 0; i < k; i++) {
      this.#times[this.#tail] = now;
      this.#tail = this.#tail + 1 === this.#inflight ? 0 : this.#tail + 1;
    }
    this.#stamped += k;
  }

  /**
   * Consumes the complete responses in `buf[start, end)` received at `now` (ms); returns the end of
   * the last one. Checks every length and the bytes of the first response of each read.
   */
  take(buf: Uint8Array, start: number, end: number, now: number): number {
    let p = start, c = 0;
    const fb = this.frameBytes;
    while (end - p >= fb) {
      const len = readU32BE(buf, p);
      if (len !== this.#payload) {
        throw new Error(`response ${this.#done}: length ${len}, expected ${this.#payload}`);
      }
      if (c === 0) {
        for (let i = 0; i < len; i++) {
          if (buf[p + 4 + i] !== this.batch[4 + i]) {
            throw new Error(`response ${this.#done}: byte ${i} differs`);
          }
        }
      }
      if (this.#lat !== null) this.#lat[this.#done] = (now - this.#times[this.#head]) * 1000;
      this.#head = this.#head + 1 === this.#inflight ? 0 : this.#head + 1;
      this.#done++;
      p += fb;
      c++;
    }
    if (this.#done > this.#stamped) {
      throw new Error(`got ${this.#done} responses for ${this.#stamped} requests`);
    }
    this.#completed = c;
    return p;
  }

  /** How many new requests the last {@link take} freed (they count as issued from now on). */
  next(): number {
    const k = Math.min(this.#completed, this.#total - this.#issued);
    this.#completed = 0;
    this.#issued += k;
    return k;
  }

  /** Whether every call of the phase was answered. */
  get finished(): boolean {
    return this.#done === this.#total;
  }
}
