/**
 * The options of `connect()` (rpc/client/client.ts): the TCP channel's options plus the fabric, region,
 * path-selection, re-negotiation, fault-injection and progress-loop settings. One zod schema
 * gives the types, the defaults and the messages (unknown keys are rejected; a message names the
 * bad field). Also the option and result types of one client call.
 *
 * Pure declarations: any thread; parsing allocates a fresh options object.
 * @module
 */
import { z } from "zod";
import { fabricDescriptorSchema } from "../../transport/fabric_descriptor.ts";
import { fabricChoiceSchema } from "../../transport/fabric_kinds.ts";
import type { PartialDefault } from "../../util/options.ts";
import type { ChannelOptionsShape } from "../tcp/channel_options.ts";
import { type CallOptions, type CallResult, ChannelOptionsSchema } from "../tcp/channel.ts";
import { regionConfigSchema } from "../region/layout.ts";
import { type CallPath, callPathSchema, selectorConfigSchema } from "./selector.ts";
import { progressOptionsSchema } from "../session/engine/progress.ts";

/** Fault injection (tests and demos): what `verbus call --simulate-*` sets. */
export const faultsSchema: z.ZodObject<{
  fabricDown: z.ZodDefault<z.ZodBoolean>;
  opFail: z.ZodDefault<z.ZodNumber>;
  errors: z.ZodDefault<z.ZodNumber>;
  serverPressure: z.ZodOptional<z.ZodEnum<{ ring: "ring"; objpool: "objpool" }>>;
}, z.core.$strict> = z.object({
  /**
   * Take the fabric session down once it is established: the server is told (it closes its
   * side), calls go over TCP, and the client re-negotiates after `reestablishMs`.
   */
  fabricDown: z.boolean().default(false),
  /**
   * The first session's Nth fabric operation (1-based: writes, publications, reads) really fails
   * inside the endpoint, which fails the session: a call whose request was not yet published
   * goes over TCP once; a call the server already has fails with FABRIC (never run twice).
   * 0 = never.
   */
  opFail: z.number().int().min(0).default(0),
  /** Start with this many fabric errors counted (over the threshold → TCP). */
  errors: z.number().int().min(0).default(0),
  /** Ask the server to publish ring or object-pool pressure for this session. */
  serverPressure: z.enum(["ring", "objpool"]).optional(),
}).strict();

/** Options of `connect()`; unknown keys are rejected and messages name the field. */
export const connectOptionsSchema: z.ZodObject<
  ChannelOptionsShape & {
    fabric: z.ZodDefault<typeof fabricChoiceSchema>;
    extraFabrics: z.ZodDefault<z.ZodArray<typeof fabricDescriptorSchema>>;
    region: PartialDefault<(typeof regionConfigSchema)["shape"]>;
    selector: PartialDefault<(typeof selectorConfigSchema)["shape"]>;
    providerOptions: z.ZodDefault<z.ZodRecord<z.ZodString, z.ZodUnknown>>;
    forcePath: z.ZodOptional<typeof callPathSchema>;
    reestablishMs: z.ZodDefault<z.ZodNumber>;
    refreshEvery: z.ZodDefault<z.ZodNumber>;
    faults: z.ZodDefault<typeof faultsSchema>;
    progress: typeof progressOptionsSchema;
    shared: z.ZodDefault<z.ZodBoolean>;
  },
  z.core.$strict
> = ChannelOptionsSchema.extend({
  /**
   * Which data plane to use: the best the two hosts share (auto), one fabric (a registered kind
   * or the kind of one of `extraFabrics`), or TCP only.
   */
  fabric: fabricChoiceSchema.default("auto"),
  /**
   * Fabric descriptors beside the registered ones (a fabric under development, a test's
   * throw-away fabric): `auto` offers them after the registered fabrics, `fabric` may name one.
   */
  extraFabrics: z.array(fabricDescriptorSchema).default([]),
  /** The region to propose (the server may shrink it). */
  region: regionConfigSchema.partial().default({}),
  /** Path-selection thresholds. */
  selector: selectorConfigSchema.partial().default({}),
  /** Per-fabric provider options (e.g. `verbs: { sourceAddr, port }`, `urma: { library }`). */
  providerOptions: z.record(z.string(), z.unknown()).default({}),
  /** Force every call onto one path. */
  forcePath: callPathSchema.optional(),
  /** After a session fails, negotiate a new one this long after (doubling while it fails; 0 = never). */
  reestablishMs: z.number().int().min(0).max(3_600_000).default(2000),
  /** Refresh the server's control-page snapshot every N fabric calls (0 = never). */
  refreshEvery: z.number().int().min(0).default(64),
  /**
   * Use the process's one connection (and fabric session) to this server, the one cluster
   * clients and Connect transports naming the same address and options use, instead of a client
   * of its own (`rpc/cluster/shared_client.ts`): `close()` then gives this hold back, and
   * `stats()` counts every user's calls. Default false: a client of its own.
   */
  shared: z.boolean().default(false),
  faults: faultsSchema.default({ fabricDown: false, opFail: 0, errors: 0 }),
  /** Progress-loop tunables. */
  progress: progressOptionsSchema,
}).strict();

/** `connect()` options as users write them (every field optional). */
export type ClientOptions = z.input<typeof connectOptionsSchema>;
/** `connect()` options after validation (defaults filled in). */
export type ConnectSettings = z.output<typeof connectOptionsSchema>;

/** The part of `settings` that is the TCP channel's: everything that is not the fabric's. */
export function channelOptionsOf(settings: ConnectSettings): z.output<typeof ChannelOptionsSchema> {
  const {
    fabric: _fabric,
    extraFabrics: _extraFabrics,
    region: _region,
    selector: _selector,
    forcePath: _forcePath,
    refreshEvery: _refreshEvery,
    faults: _faults,
    progress: _progress,
    providerOptions: _providerOptions,
    reestablishMs: _reestablishMs,
    shared: _shared,
    ...channelOptions
  } = settings;
  return channelOptions;
}

/** Options of one call. */
export interface ClientCallOptions extends CallOptions {
  /** Force this call's path. */
  forcePath?: CallPath;
  /** How large the caller expects the response to be (LAZY when ≥ the large threshold). */
  expectedResponseBytes?: number;
}

/** A call's answer and how it travelled. The caller owns the byte arrays. */
export interface ClientCallResult extends CallResult {
  /** The path the call really took. */
  path: CallPath;
  /** What carried it: "shm", "verbs", "urma", "urma (simulated)" or "tcp". */
  fabric: string;
}

/** One call of `Client.callMany`. The request bytes are copied before `callMany` returns. */
export interface BatchCall {
  /** Full service name (e.g. `example.EchoService`). */
  service: string;
  /** Method name. */
  method: string;
  /** The request payload. */
  request: Uint8Array;
  /** Per-call options. */
  options?: ClientCallOptions;
}
