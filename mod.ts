/**
 * verbus — RPC for Deno and Bun over RDMA verbs, URMA, shared memory and TCP (brpc baidu_std).
 *
 * The public API, exported by name. Everything not exported here is internal.
 * @module
 */
export {
  ClosedError,
  errnoName,
  LayoutMismatchError,
  LibraryLoadError,
  NativeError,
  VerbusError,
} from "./errors.ts";
export type { LoadAttempt, VerbusErrorCode } from "./errors.ts";
export { RUNTIME, runtimeVersion } from "./ffi/runtime.ts";
export type { RuntimeName } from "./ffi/runtime.ts";
