/**
 * Links the Bun backends statically for a single-file build: `bun build --compile` cannot follow
 * the runtime-chosen dynamic imports of ffi/ffi.ts and transport/tcp/mod.ts, so this module —
 * evaluated before any other verbus module by cli/verbus_bun.ts — installs them where those
 * modules look first.
 * @module
 */
import { backend } from "../ffi/bun.ts";
import { transport } from "../transport/tcp/bun.ts";

(globalThis as Record<symbol, unknown>)[Symbol.for("verbus.backends")] = {
  ffi: backend,
  tcp: transport,
};
