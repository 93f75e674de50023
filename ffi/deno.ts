/**
 * The Deno FFI backend: `Deno.dlopen`, `Deno.UnsafePointer(View)`, `Deno.UnsafeCallback`.
 * Blocking symbols are also bound with `nonblocking: true` (Deno runs them on a worker thread).
 * Loaded only on Deno, by dynamic import from `ffi/ffi.ts`.
 * @module
 */
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

const NB = "$nonblocking";

function denoType(t: NativeType): Deno.NativeType | "void" {
  return t === "bool" ? "bool" : t;
}

function denoDef(d: SymbolDef, nonblocking: boolean, name?: string) {
  return {
    ...(name ? { name } : {}),
    parameters: d.args.map(denoType) as Deno.NativeType[],
    result: denoType(d.result),
    ...(d.optional ? { optional: true } : {}),
    ...(nonblocking ? { nonblocking: true } : {}),
  };
}

function open<T extends SymbolTable>(path: string, table: T): RawLibrary<T> {
  const defs: Record<string, Deno.ForeignFunction> = {};
  for (const [name, d] of Object.entries(table)) {
    defs[name] = denoDef(d, false) as Deno.ForeignFunction;
    if (d.nonblocking) defs[name + NB] = denoDef(d, true, name) as Deno.ForeignFunction;
  }
  const lib = Deno.dlopen(path, defs);
  const symbols: Record<string, unknown> = {};
  const nonblocking: Record<string, unknown> = {};
  const missing: string[] = [];
  // deno-lint-ignore no-explicit-any
  const raw = lib.symbols as Record<string, any>;
  for (const [name, d] of Object.entries(table)) {
    if (raw[name] === undefined || raw[name] === null) {
      missing.push(name);
      continue;
    }
    symbols[name] = raw[name];
    if (d.nonblocking) nonblocking[name] = raw[name + NB];
  }
  let closed = false;
  return {
    symbols: symbols as RawLibrary<T>["symbols"],
    nonblocking: nonblocking as RawLibrary<T>["nonblocking"],
    missing,
    close() {
      if (closed) return;
      closed = true;
      lib.close();
    },
  };
}

function nn(p: NonNullPtr): Deno.PointerObject {
  return p as unknown as Deno.PointerObject;
}

export const backend: FfiBackend = {
  runtime: "deno",
  open,
  ptrOf(view) {
    const p = Deno.UnsafePointer.of(view as unknown as BufferSource);
    if (p === null) {
      throw new RangeError("ptrOf: the typed array has no backing memory (length 0?)");
    }
    return p as unknown as NonNullPtr;
  },
  address(p) {
    return p === null ? 0n : BigInt(Deno.UnsafePointer.value(p as unknown as Deno.PointerObject));
  },
  fromAddress(addr) {
    return Deno.UnsafePointer.create(BigInt(addr)) as unknown as Ptr;
  },
  readU8: (p, o) => new Deno.UnsafePointerView(nn(p)).getUint8(o),
  readU16: (p, o) => new Deno.UnsafePointerView(nn(p)).getUint16(o),
  readU32: (p, o) => new Deno.UnsafePointerView(nn(p)).getUint32(o),
  readI32: (p, o) => new Deno.UnsafePointerView(nn(p)).getInt32(o),
  readU64: (p, o) => BigInt(new Deno.UnsafePointerView(nn(p)).getBigUint64(o)),
  readPtr: (p, o) => new Deno.UnsafePointerView(nn(p)).getPointer(o) as unknown as Ptr,
  view: (p, len, o = 0) => Deno.UnsafePointerView.getArrayBuffer(nn(p), len, o),
  cstring: (p, o = 0) => Deno.UnsafePointerView.getCString(nn(p), o),
  callback(def, fn): NativeCallback {
    const cb = new Deno.UnsafeCallback(
      denoDef(def, false) as Deno.UnsafeCallbackDefinition,
      fn as unknown as Deno.UnsafeCallbackFunction,
    );
    let closed = false;
    return {
      ptr: cb.pointer as unknown as NonNullPtr,
      close() {
        if (!closed) {
          closed = true;
          cb.close();
        }
      },
    };
  },
};
