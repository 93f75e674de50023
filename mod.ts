/**
 * verbus — RPC for Deno and Bun over RDMA verbs, URMA, shared memory and TCP (brpc baidu_std).
 *
 * The public API, exported by name. Everything not exported here is internal. The example
 * services (`verbus.Demo`, brpc's echo) are not part of it: they have their own entry point,
 * `examples/demo/mod.ts`.
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

// Runtime and the bundled build.
export { RUNTIME, runtimeVersion } from "./util/runtime.ts";
export type { RuntimeName } from "./util/runtime.ts";
export { buildDirs } from "./ffi/loader.ts";

// Client: TCP channel + fabric session + path selection.
export { Client, connect, connectOptionsSchema, faultsSchema } from "./rpc/client.ts";
export type {
  BatchCall,
  ClientCallOptions,
  ClientCallResult,
  ClientOptions,
  ClientStats,
} from "./rpc/client.ts";
// The plain baidu_std channel (TCP only; also talks to stock brpc servers).
export { Channel, ChannelOptionsSchema, connect as connectChannel } from "./rpc/channel.ts";
export type { CallOptions, CallResult, ChannelOptions } from "./rpc/channel.ts";

// Server.
export { borrowsRequest, serve, ServeOptionsSchema, Server, typedMethod } from "./rpc/server.ts";
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

// Fabrics: the one list of names, and what this host can do (`verbus doctor`).
export { fabricKindSchema, FABRICS } from "./transport/registry.ts";
export type { FabricKind } from "./transport/registry.ts";
export type { FabricEndpoint } from "./transport/fabric.ts";
export { probeHost } from "./transport/capabilities.ts";
export type { FabricName, HostCapabilities } from "./transport/capabilities.ts";

// The same-host agent: many local processes share one remote connection through a shared-memory
// MPSC ring (`verbus agent`; clients join with `connect("agent:NAME")`).
export { Agent, agentOptionsSchema, startAgent } from "./rpc/agent/agent.ts";
export type { AgentOptions, AgentStats } from "./rpc/agent/agent.ts";
export { AgentClient, agentClientOptionsSchema, connectAgent } from "./rpc/agent/agent_client.ts";
export type {
  AgentCallResult,
  AgentClientOptions,
  AgentClientStats,
} from "./rpc/agent/agent_client.ts";
