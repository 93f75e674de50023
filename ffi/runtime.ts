/**
 * Runtime detection for the FFI layer: re-exports `util/runtime.ts` (pure detection shared by
 * every layer).
 * @module
 */
export { getEnv, RUNTIME, type RuntimeName, runtimeVersion } from "../util/runtime.ts";
