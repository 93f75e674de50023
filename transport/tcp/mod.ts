/**
 * TCP for the running runtime: `transport` is the Deno or the Bun implementation of
 * {@link TcpTransport}, chosen once at load by dynamic import (the specifier is not a literal so
 * `deno check` never type-checks the Bun file).
 *
 * ```ts
 * import { tcp } from "./transport/tcp/mod.ts";
 * const listener = await tcp.listen({ host: "127.0.0.1", port: 0, onConnection(conn) {} });
 * const conn = await tcp.connect({ host: "127.0.0.1", port: listener.port });
 * ```
 * @module
 */
import { VerbusError } from "../../errors.ts";
import { RUNTIME } from "../../ffi/runtime.ts";
import { presetBackends } from "../../ffi/ffi.ts";
import type { TcpTransport } from "./tcp.ts";

export type {
  AcceptPause,
  CloseHandler,
  ConnectOptions,
  DataHandler,
  ListenOptions,
  NetAddress,
  TcpConn,
  TcpListener,
  TcpTransport,
} from "./tcp.ts";
export { RawReader } from "./raw_reader.ts";

if (RUNTIME === "unsupported") {
  throw new VerbusError("UNSUPPORTED_RUNTIME", "verbus TCP needs Deno or Bun");
}
const file: string = RUNTIME === "deno" ? "./deno.ts" : "./bun.ts";

/** The TCP transport of this runtime. Usable from the main JS thread only. */
export const tcp: TcpTransport = (presetBackends()?.tcp as TcpTransport | undefined) ??
  ((await import(file)) as { transport: TcpTransport }).transport;
