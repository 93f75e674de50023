/**
 * The example services verbus ships, as their own entry point (they are not part of the library):
 * `verbus.Demo` (Ping, Echo, KvPut, KvGet, MGet, Profile, LargeGet, BigPut, ImagePut), brpc's
 * `example.EchoService`, the typed {@link DemoClient}, and the request codecs and large-object
 * helpers that `verbus serve` / `verbus call`, the tests and the benchmarks use. Built only on the
 * public API (`mod.ts`). Buffer ownership and threads: see each module; everything here runs on
 * the caller's JS thread.
 *
 * ```ts
 * import { serve } from "../../mod.ts";
 * import { demoService } from "./mod.ts";
 * const server = await serve({ port: 8000, services: demoService() });
 * ```
 * @module
 */

// The services.
export {
  BRPC_ECHO_SERVICE,
  DEMO_METHODS,
  DEMO_SERVICE,
  demoService,
  syntheticProfile,
} from "./service.ts";
export type {
  DemoCallContext,
  DemoHandler,
  DemoMethod,
  DemoServiceOptions,
  DemoServices,
} from "./service.ts";
export { KvStore } from "./kv_store.ts";
export { ImageUploadStore } from "./image_upload.ts";
export type { ImageUploadOptions } from "./image_upload.ts";
export { decodeEchoMessage, encodeEchoMessage } from "./brpc_echo.ts";
export { countIndexOf, encodeCountRequest } from "./count.ts";
export {
  BRPC_PERF_SERVICE,
  decodePerfTestRequest,
  decodePerfTestResponse,
  encodePerfTestRequest,
  encodePerfTestResponse,
} from "./brpc_perf.ts";
export type { KvStoreOptions } from "./kv_store.ts";

// The typed client.
export { DemoClient } from "./client.ts";
export type {
  Caller,
  DemoCallOptions,
  DemoCallResult,
  ImagePutResult,
  PingReply,
} from "./client.ts";

// Request and response codecs (what a hand-rolled caller sends).
export {
  decodeGetResponse,
  decodeKeyRequest,
  encodeKeyRequest,
  encodePingRequest,
  encodePutRequest,
} from "./codec.ts";
export type { Profile, PutResult } from "./codec.ts";

// The deterministic large objects behind `LargeGet big:<size>`.
export { generateLargeObject, parseBigKey, verifyLargeObject } from "./large_object.ts";
