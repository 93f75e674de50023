/**
 * verbus — RPC for Deno and Bun over RDMA verbs, URMA, shared memory and TCP (brpc baidu_std).
 *
 * The public API, exported by name. Everything not exported here is internal.
 *
 * ```ts
 * import { connect, serve } from "./mod.ts";
 * const server = await serve({ port: 8000, services: { "example.EchoService": { Echo: (req) => req } } });
 * const client = await connect("127.0.0.1:8000");           // TCP, then the best fabric both share
 * const { response, path, fabric } = await client.call("example.EchoService", "Echo", bytes);
 * ```
 * @module
 */

// Errors.
export {
  ClosedError,
  ConnectFailedError,
  ConnectionClosedError,
  errnoName,
  LayoutMismatchError,
  LibraryLoadError,
  NativeError,
  ProtocolError,
  TimeoutError,
  VerbusError,
} from "./errors.ts";
export type { LoadAttempt, VerbusErrorCode } from "./errors.ts";
export {
  BRPC_ERRNO,
  brpcErrorName,
  EINTERNAL,
  ELIMIT,
  ELOGOFF,
  ENOMETHOD,
  ENOSERVICE,
  EOVERCROWDED,
  EREQUEST,
  ERPCTIMEDOUT,
  RpcError,
} from "./rpc/errors.ts";

// Runtime.
export { RUNTIME, runtimeVersion } from "./ffi/runtime.ts";
export type { RuntimeName } from "./ffi/runtime.ts";

// Client: TCP channel + fabric session + path selection.
export { Client, clientOptionsSchema, connect, faultsSchema } from "./rpc/client.ts";
export type {
  ClientCallOptions,
  ClientCallResult,
  ClientOptions,
  ClientStats,
} from "./rpc/client.ts";
// The plain baidu_std channel (TCP only; also talks to stock brpc servers).
export { Channel, ChannelOptionsSchema, connect as connectChannel } from "./rpc/channel.ts";
export type { CallOptions, CallResult, ChannelOptions } from "./rpc/channel.ts";

// Server.
export { serve, ServeOptionsSchema, Server, typedMethod } from "./rpc/server.ts";
export type {
  CallContext,
  Handler,
  Logger,
  ServeOptions,
  ServerStats,
  ServiceMap,
} from "./rpc/server.ts";
export { fabricHostOptionsSchema } from "./rpc/session/fabric_host.ts";
export type { FabricHostOptions } from "./rpc/session/fabric_host.ts";

// Paths, region and telemetry.
export {
  callPathSchema,
  DEFAULT_SELECTOR_CONFIG,
  selectorConfigSchema,
  selectPath,
} from "./rpc/selector.ts";
export type { CallPath, Selection, SelectorConfig } from "./rpc/selector.ts";
export { computeLayout, parseRegionConfig, regionConfigSchema } from "./rpc/region/layout.ts";
export type { RegionConfig, RegionConfigInput, RegionLayout } from "./rpc/region/layout.ts";
export { formatTelemetry } from "./rpc/region/telemetry.ts";
export type { TelemetrySnapshot } from "./rpc/region/telemetry.ts";

// Fabrics.
export type { FabricEndpoint, FabricKind } from "./transport/fabric.ts";
export { probeHost } from "./transport/capabilities.ts";
export type { FabricName, HostCapabilities } from "./transport/capabilities.ts";

// The demo services and their client.
export { demoService } from "./rpc/demo/service.ts";
export type { DemoServiceOptions, DemoServices } from "./rpc/demo/service.ts";
export { DemoClient } from "./rpc/demo/client.ts";
