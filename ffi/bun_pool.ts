/**
 * Bun's stand-in for Deno's nonblocking FFI calls: a pool of Workers, each with the library
 * opened, each running one blocking call at a time. Typed-array arguments are turned into
 * addresses on the calling thread and stay referenced (in `inflight`) until the call settles.
 * Idle workers are unref'd so they never keep the process alive; busy ones are ref'd.
 * @module
 */
// @ts-ignore: bun:ffi exists only on Bun
import { ptr } from "bun:ffi";
import type { SymbolDef } from "./types.ts";

/** A blocking FFI call running on a worker: how to settle it, and the buffers it borrows. */
interface WorkerCallInFlight {
  resolve(v: unknown): void;
  reject(e: unknown): void;
  /** Keeps buffers alive while native code may touch them. */
  keep: unknown[];
}

interface PooledWorker {
  worker: Worker & { ref(): void; unref(): void };
  busy: boolean;
  /** The call it runs (valid while busy). */
  current: number;
}

/**
 * Where the worker script is: next to this file, or — inside a single-file build, where every
 * module's `import.meta.url` is the binary's and extra entry points keep their path from the
 * repository root (`bun build --compile cli/verbus_bun.ts ffi/bun_worker.ts`) — at ffi/.
 */
function workerUrl(): URL {
  const compiled = import.meta.url.includes("/$bunfs/");
  return new URL(compiled ? "./ffi/bun_worker.ts" : "./bun_worker.ts", import.meta.url);
}

/** Most workers one library keeps; further calls queue. */
const MAX_WORKERS = 128;

/** A pool of Workers running the blocking symbols of one library. */
export class WorkerPool {
  #workers: PooledWorker[] = [];
  #queue: Array<() => void> = [];
  #inflight = new Map<number, WorkerCallInFlight>();
  #nextId = 1;
  #closed = false;

  constructor(
    private readonly path: string,
    private readonly defs: Record<string, { args: string[]; returns: string }>,
  ) {}

  /** Runs `name(...args)` on a worker. Settles with its result or the worker's error. */
  call(name: string, def: SymbolDef, args: unknown[]): Promise<unknown> {
    if (this.#closed) return Promise.reject(new Error("library closed"));
    const keep: unknown[] = [];
    const wire = args.map((a, i) => {
      if (def.args[i] === "buffer" && a !== null && a !== undefined) {
        keep.push(a);
        void (a as ArrayBufferView).buffer; // pin JSC's bytes before taking the address
        return ptr(a as ArrayBufferView);
      }
      return a;
    });
    return new Promise((resolve, reject) => {
      const id = this.#nextId++;
      this.#inflight.set(id, { resolve, reject, keep });
      const run = () => {
        const w = this.#idle();
        w.busy = true;
        w.current = id;
        w.worker.ref();
        w.worker.postMessage({ id, name, args: wire });
      };
      if (this.#workers.some((w) => !w.busy) || this.#workers.length < MAX_WORKERS) run();
      else this.#queue.push(run);
    });
  }

  #idle(): PooledWorker {
    const free = this.#workers.find((w) => !w.busy);
    if (free) return free;
    const worker = new Worker(workerUrl()) as PooledWorker["worker"];
    const pw: PooledWorker = { worker, busy: false, current: 0 };
    worker.postMessage({ open: this.path, defs: this.defs });
    worker.onmessage = (e: MessageEvent) => {
      const { id, result, error } = e.data as { id: number; result?: unknown; error?: string };
      const p = this.#inflight.get(id);
      this.#inflight.delete(id);
      pw.busy = false;
      worker.unref();
      if (p) {
        if (error !== undefined) p.reject(new Error(error));
        else p.resolve(result);
      }
      const next = this.#queue.shift();
      if (next) next();
    };
    worker.onerror = (e: ErrorEvent) => {
      // Only this worker's call fails; the worker leaves the pool and queued calls go on.
      const p = pw.busy ? this.#inflight.get(pw.current) : undefined;
      if (p) {
        this.#inflight.delete(pw.current);
        p.reject(new Error(`ffi worker failed: ${e.message}`));
      }
      this.#workers = this.#workers.filter((w) => w !== pw);
      worker.terminate();
      const next = this.#queue.shift();
      if (next) next();
    };
    this.#workers.push(pw);
    return pw;
  }

  /** Terminates every worker; calls in flight reject. Safe twice. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    for (const w of this.#workers) w.worker.terminate();
    for (const p of this.#inflight.values()) p.reject(new Error("library closed"));
    this.#inflight.clear();
    this.#workers = [];
  }
}
