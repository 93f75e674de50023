/**
 * Links the Bun backends statically for a single-file build: `bun build --compile` cannot follow
 * the runtime-chosen dynamic imports of ffi/ffi.ts and transport/tcp/mod.ts, so this module —
 * evaluated before any other verbus module by cli/verbus_bun.ts — installs them where those
 * modules look first (`globalThis[Symbol.for("verbus.backends")]`).
 *
 * This is the one file of cli/ that imports below `mod.ts` (the layering test allows exactly these
 * two imports here): the backends are runtime-specific internals that the public API must not
 * export, and only a static import makes the bundler include them. Run once, on the main thread,
 * before anything else; it allocates nothing after that.
 * @module
 */
import { backend } from "../ffi/bun.ts";
import { transport } from "../transport/tcp/bun.ts";

(globalThis as Record<symbol, unknown>)[Symbol.for("verbus.backends")] = {
  ffi: backend,
  tcp: transport,
};
