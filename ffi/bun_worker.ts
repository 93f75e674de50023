/**
 * A Worker of `ffi/bun_pool.ts`: opens one library and runs the blocking calls it is sent,
 * one at a time. Messages: `{open, defs}` once, then `{id, name, args}` → `{id, result | error}`.
 * @module
 */
// @ts-ignore: bun:ffi exists only on Bun
import { dlopen } from "bun:ffi";

// deno-lint-ignore no-explicit-any
let lib: any = null;
// deno-lint-ignore no-explicit-any
const scope = self as any;
scope.onmessage = (e: MessageEvent) => {
  const m = e.data;
  if (m.open) {
    lib = dlopen(m.open, m.defs);
    return;
  }
  try {
    const result = lib.symbols[m.name](...m.args);
    scope.postMessage({ id: m.id, result });
  } catch (err) {
    scope.postMessage({ id: m.id, error: String(err) });
  }
};
