/**
 * The Bun FFI backend: `bun:ffi` (`dlopen`, `ptr`, `read`, `toArrayBuffer`, `JSCallback`).
 * Bun has no nonblocking FFI calls, so blocking symbols run in a small pool of Workers
 * (`ffi/bun_worker.ts`), each of which opens the same library. Loaded only on Bun.
 * @module
 */
// @ts-ignore: bun:ffi exists only on Bun (this file is never loaded by Deno)
import { CString, dlopen, JSCallback, ptr, read, toArrayBuffer } from "bun:ffi";
import type {
  FfiBackend,
  NativeCallback,
  NativeType,
  NonNullPtr,
  Ptr,
  RawLibrary,
  SymbolDef,
  SymbolTable,
} from "./types.ts";
import { WorkerPool } from "./bun_pool.ts";

/** Maps a neutral native type to Bun's FFIType name. */
export function bunType(t: NativeType): string {
  switch (t) {
    case "pointer":
    case "buffer":
      return "ptr";
    case "usize":
      return "u64";
    case "isize":
      return "i64";
    default:
      return t;
  }
}

/** Bun's dlopen definition of one symbol. */
export function bunDef(d: SymbolDef): { args: string[]; returns: string } {
  return { args: d.args.map(bunType), returns: bunType(d.result) };
}

function open<T extends SymbolTable>(path: string, table: T): RawLibrary<T> {
  const required: Record<string, unknown> = {};
  for (const [name, d] of Object.entries(table)) if (!d.optional) required[name] = bunDef(d);
  const libs = [dlopen(path, required)];
  const symbols: Record<string, unknown> = { ...libs[0].symbols };
  const missing: string[] = [];
  // Bun's dlopen fails as a whole on a missing symbol: probe optional ones one at a time.
  for (const [name, d] of Object.entries(table)) {
    if (!d.optional) continue;
    try {
      const one = dlopen(path, { [name]: bunDef(d) });
      libs.push(one);
      symbols[name] = one.symbols[name];
    } catch {
      missing.push(name);
    }
  }
  const blocking = Object.entries(table).filter(([n, d]) => d.nonblocking && !missing.includes(n));
  let pool: WorkerPool | null = null;
  const nonblocking: Record<string, unknown> = {};
  for (const [name, d] of blocking) {
    nonblocking[name] = (...args: unknown[]) => {
      pool ??= new WorkerPool(path, Object.fromEntries(blocking.map(([n, dd]) => [n, bunDef(dd)])));
      return pool.call(name, d, args);
    };
  }
  let closed = false;
  return {
    symbols: symbols as RawLibrary<T>["symbols"],
    nonblocking: nonblocking as RawLibrary<T>["nonblocking"],
    missing,
    close() {
      if (closed) return;
      closed = true;
      pool?.close();
      for (const l of libs) l.close();
    },
  };
}

function n(p: NonNullPtr): number {
  return p as unknown as number;
}

export const backend: FfiBackend = {
  runtime: "bun",
  open,
  ptrOf(view) {
    if (view.byteLength === 0) {
      throw new RangeError("ptrOf: the typed array has no backing memory (length 0?)");
    }
    // JSC keeps small typed arrays inside the GC heap and moves their bytes to a fresh backing
    // store the first time `.buffer` is read. Materialize it now, so the address handed to
    // native code stays valid however the array is used afterwards.
    void view.buffer;
    return ptr(view) as unknown as NonNullPtr;
  },
  address(p) {
    return p === null ? 0n : BigInt(p as unknown as number);
  },
  fromAddress(addr) {
    const v = Number(addr);
    return (v === 0 ? null : v) as unknown as Ptr;
  },
  readU8: (p, o) => read.u8(n(p), o),
  readU16: (p, o) => read.u16(n(p), o),
  readU32: (p, o) => read.u32(n(p), o),
  readI32: (p, o) => read.i32(n(p), o),
  readU64: (p, o) => BigInt(read.u64(n(p), o)),
  readPtr: (p, o) => {
    const v = read.ptr(n(p), o);
    return (v === 0 ? null : v) as unknown as Ptr;
  },
  view: (p, len, o = 0) => toArrayBuffer(n(p), o, len),
  cstring: (p, o = 0) => new CString(n(p), o).toString(),
  callback(def, fn): NativeCallback {
    const cb = new JSCallback(fn, bunDef(def));
    let closed = false;
    return {
      ptr: cb.ptr as unknown as NonNullPtr,
      close() {
        if (!closed) {
          closed = true;
          cb.close();
        }
      },
    };
  },
};
