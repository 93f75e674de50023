/**
 * The runtime-neutral FFI vocabulary: native types, symbol tables, pointers and the backend
 * interface that `ffi/deno.ts` and `ffi/bun.ts` implement. Nothing here touches a runtime.
 * @module
 */
import type { RuntimeName } from "./runtime.ts";

/** A C type as symbol tables spell it. `buffer` is a typed array passed by address. */
export type NativeType =
  | "void"
  | "bool"
  | "u8"
  | "i8"
  | "u16"
  | "i16"
  | "u32"
  | "i32"
  | "u64"
  | "i64"
  | "usize"
  | "isize"
  | "f32"
  | "f64"
  | "pointer"
  | "buffer";

/** One C function of a symbol table. */
export interface SymbolDef {
  /** Parameter types, in order. */
  readonly args: readonly NativeType[];
  /** Return type. */
  readonly result: NativeType;
  /** The library may lack it; it is then absent from `symbols` and listed in `missing`. */
  readonly optional?: boolean;
  /**
   * The call may block: it is also exposed under `nonblocking` (a promise), run on another
   * thread (Deno `nonblocking: true`; a Worker on Bun). The synchronous form stays available.
   */
  readonly nonblocking?: boolean;
}

/** A symbol table: C name → definition. Declare tables `as const`. */
export type SymbolTable = Readonly<Record<string, SymbolDef>>;

declare const ptrBrand: unique symbol;
/** An opaque non-null native pointer (a Deno pointer object or a Bun address). */
export type NonNullPtr = { readonly [ptrBrand]: "NativePointer" };
/** A native pointer or NULL. Compare with `null` only; never do arithmetic on it. */
export type Ptr = NonNullPtr | null;

type Wide = "u64" | "i64" | "usize" | "isize";

/** The JavaScript type of an argument of native type `T`. */
export type ArgOf<T extends NativeType> = T extends "pointer" ? Ptr
  : T extends "buffer" ? ArrayBufferView | null
  : T extends Wide ? number | bigint
  : T extends "bool" ? boolean
  : number;

/** The JavaScript type of a result of native type `T`. */
export type ResultOf<T extends NativeType> = T extends "void" ? void
  : T extends "pointer" | "buffer" ? Ptr
  : T extends Wide ? number | bigint
  : T extends "bool" ? boolean
  : number;

type ArgsOf<A extends readonly NativeType[]> = { -readonly [K in keyof A]: ArgOf<A[K]> };

/** The function type of a symbol definition. */
export type FnOf<D extends SymbolDef> = (...args: ArgsOf<D["args"]>) => ResultOf<D["result"]>;

/** Synchronous functions of a table. Optional symbols may be undefined. */
export type SymbolsOf<T extends SymbolTable> =
  & { [K in keyof T as T[K]["optional"] extends true ? never : K]: FnOf<T[K]> }
  & { [K in keyof T as T[K]["optional"] extends true ? K : never]?: FnOf<T[K]> };

/** Promise-returning forms of the table's `nonblocking` symbols. */
export type NonblockingOf<T extends SymbolTable> = {
  [K in keyof T as T[K]["nonblocking"] extends true ? K : never]: (
    ...args: ArgsOf<T[K]["args"]>
  ) => Promise<ResultOf<T[K]["result"]>>;
};

/** A library opened by a backend (no loader policy: see `ffi/loader.ts`). */
export interface RawLibrary<T extends SymbolTable> {
  /** Synchronous calls; call only from the thread that opened the library. */
  readonly symbols: SymbolsOf<T>;
  /** Blocking calls run elsewhere; buffers passed stay referenced until the promise settles. */
  readonly nonblocking: NonblockingOf<T>;
  /** Optional symbols the library lacks. */
  readonly missing: readonly string[];
  /** Unloads the library (and stops any worker). Calls in flight must have settled. */
  close(): void;
}

/** A native callback created from a JavaScript function. */
export interface NativeCallback {
  /** The function pointer to hand to C. Valid until `close()`. */
  readonly ptr: NonNullPtr;
  /** Frees the trampoline. Safe twice. */
  close(): void;
}

/** What each runtime file implements. All methods are for the JS thread that loaded them. */
export interface FfiBackend {
  readonly runtime: RuntimeName;
  /** dlopen `path` with `table`. Throws a plain Error with the loader's message on failure. */
  open<T extends SymbolTable>(path: string, table: T): RawLibrary<T>;
  /** Address of the first byte of a typed array (its memory must stay referenced while used). */
  ptrOf(view: ArrayBufferView): NonNullPtr;
  /** The numeric address of a pointer (0n for NULL). */
  address(p: Ptr): bigint;
  /** A pointer from a numeric address (NULL for 0). */
  fromAddress(addr: bigint | number): Ptr;
  /** Reads at `p + offset`. */
  readU8(p: NonNullPtr, offset: number): number;
  readU16(p: NonNullPtr, offset: number): number;
  readU32(p: NonNullPtr, offset: number): number;
  readI32(p: NonNullPtr, offset: number): number;
  readU64(p: NonNullPtr, offset: number): bigint;
  readPtr(p: NonNullPtr, offset: number): Ptr;
  /** A zero-copy ArrayBuffer over native memory. Valid only while the memory is. */
  view(p: NonNullPtr, byteLength: number, offset?: number): ArrayBuffer;
  /** Reads a NUL-terminated string at `p + offset`. */
  cstring(p: NonNullPtr, offset?: number): string;
  /** Wraps `fn` as a C function pointer of the given signature. */
  callback(def: SymbolDef, fn: (...args: never[]) => unknown): NativeCallback;
}
