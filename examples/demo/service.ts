/**
 * The built-in demo services as a transport-independent method table: `verbus.Demo` (Ping, Echo,
 * KvPut, KvGet, MGet, Profile, LargeGet, BigPut, ImagePut, and Count: server-streaming on a
 * brpc stream, `count.ts`) and brpc's `example.EchoService`
 * (Echo). The same handlers run behind the TCP server and, in later layers, behind the shared
 * memory / RDMA / URMA session loops: nothing here knows about transports.
 *
 * Buffer ownership: a handler reads the request (and request attachment) only while it runs and
 * never retains them (KV values are copied) — except `Echo`, which owns its request (as every
 * handler not marked `borrowsRequest` does) and answers with it and its attachment themselves. It
 * returns a buffer the caller may send as is; that buffer is fresh, except for `Echo` (the request)
 * and `LargeGet`, which returns the object source's shared buffer without a copy (the LAZY path
 * serves it in place) — callers must treat every response as read-only.
 *
 * Errors: malformed or refused requests throw {@link VerbusError}s (see `codec.ts`,
 * `kv_store.ts`, `large_object.ts`, `image_upload.ts`); every handler passes them through
 * {@link toRequestError}, so the server answers EREQUEST (ELIMIT for a full store) with the
 * original message, and anything unexpected as EINTERNAL.
 *
 * @module
 */
import { z } from "zod";
import { VerbusError } from "../../errors.ts";
import {
  BRPC_PERF_SERVICE,
  cpuUsageSampler,
  decodePerfTestRequest,
  encodePerfTestResponse,
} from "./brpc_perf.ts";
import { parseOptions } from "../../util/options.ts";
import { borrowsRequest, ELIMIT, EREQUEST, RpcError } from "../../mod.ts";
import {
  decodeEchoMessage,
  decodeImageChunk,
  decodeKeyRequest,
  decodeMGetRequest,
  decodePingRequest,
  decodeProfileRequest,
  decodePutRequest,
  encodeDynamicArray,
  encodeEchoMessage,
  encodeGetResponse,
  encodeImageChunkResult,
  encodePingResponse,
  encodeProfile,
  encodePutResponse,
  type Profile,
} from "./codec.ts";
import { type ImageUploadOptions, ImageUploadStore } from "./image_upload.ts";
import { KvStore } from "./kv_store.ts";
import { LargeObjectSource, type LargeObjectSourceOptions } from "./large_object.ts";
import { countHandler } from "./count.ts";

/** Full protobuf name of the demo service. */
export const DEMO_SERVICE = "verbus.Demo";
/** Full protobuf name of brpc's echo example service. */
export const BRPC_ECHO_SERVICE = "example.EchoService";
/** Methods of {@link DEMO_SERVICE}. */
export const DEMO_METHODS = [
  "Ping",
  "Echo",
  "KvPut",
  "KvGet",
  "MGet",
  "Profile",
  "LargeGet",
  "BigPut",
  "ImagePut",
  "Count",
] as const;
/** One method name of {@link DEMO_SERVICE}. */
export type DemoMethod = (typeof DEMO_METHODS)[number];

/**
 * What a demo handler needs from the server's per-call context: the request attachment (read
 * only, valid during the call) and a slot for the response attachment (owned by the server once
 * set).
 */
export interface DemoCallContext {
  /** The request's attachment (brpc attachment), if any. */
  readonly requestAttachment?: Uint8Array;
  /** Set by a handler to send an attachment with the response. */
  responseAttachment?: Uint8Array;
}

/** A demo method handler: request bytes in, response bytes out. */
export type DemoHandler = (
  request: Uint8Array,
  ctx: DemoCallContext,
) => Uint8Array | Promise<Uint8Array>;

/**
 * The method tables returned by {@link demoService}, keyed by full service name; usable directly
 * as `serve({ services })` (a `ServiceMap`).
 */
export type DemoServices = {
  /** `verbus.Demo`. */
  readonly "verbus.Demo": Readonly<Record<DemoMethod, DemoHandler>>;
  /** brpc's `example.EchoService`. */
  readonly "example.EchoService": Readonly<{ Echo: DemoHandler }>;
  /** brpc's `test.PerfTestService` (example/rdma_performance). */
  readonly "test.PerfTestService": Readonly<{ Test: DemoHandler }>;
};

const options_schema = z.strictObject({
  kv: z.instanceof(KvStore).optional(),
  uploads: z.instanceof(ImageUploadStore).optional(),
  imageDir: z.string().min(1).optional(),
  maxSmallValueBytes: z.number().int().min(0).max(2 ** 31 - 1).optional(),
  maxMGetKeys: z.number().int().min(1).max(1 << 20).optional(),
  large: z.object({
    maxBytes: z.number().int().optional(),
    cacheBytes: z.number().int().optional(),
  }).optional(),
  upload: z.object({
    maxChunkBytes: z.number().int().optional(),
    maxImageBytes: z.number().int().optional(),
    maxUploads: z.number().int().optional(),
    idleTimeoutMs: z.number().positive().optional(),
    durable: z.boolean().optional(),
  }).optional(),
  profile: z.custom<(id: bigint) => Profile | undefined>(
    (v) => typeof v === "function",
    "must be a function",
  )
    .optional(),
});

/** Options of {@link demoService}. Every instance given is shared, not copied. */
export interface DemoServiceOptions {
  /** The KV store (default: a new {@link KvStore} with default limits). */
  kv?: KvStore;
  /** The upload store (default: a new {@link ImageUploadStore} in `imageDir`). */
  uploads?: ImageUploadStore;
  /**
   * Image directory when `uploads` is not given (default: a private temp directory made at the
   * first upload and removed when the process exits; see {@link ImageUploadOptions.imageDir}).
   */
  imageDir?: string;
  /** Largest KvPut value; bigger ones must use BigPut (default 1 MiB). */
  maxSmallValueBytes?: number;
  /** Most keys in one MGet (default 4096). */
  maxMGetKeys?: number;
  /** LargeGet object source limits. */
  large?: LargeObjectSourceOptions;
  /** Upload limits when `uploads` is not given. */
  upload?: Omit<ImageUploadOptions, "imageDir">;
  /** Profile lookup (default {@link syntheticProfile}); `undefined` means no such user. */
  profile?: (id: bigint) => Profile | undefined;
}

const TAGS = [
  "rdma",
  "urma",
  "shm",
  "tcp",
  "brpc",
  "deno",
  "bun",
  "storage",
  "ml",
  "video",
] as const;

/**
 * The demo's deterministic profile of user `id` (synthetic data so PROFILE works without a
 * database): the same id always yields the same profile on every host.
 */
export function syntheticProfile(id: bigint): Profile {
  const n = Number(id % 1_000_003n);
  const tags: string[] = [];
  for (let i = 0; i < n % 5; i++) tags.push(TAGS[(n + i * 3) % TAGS.length]);
  const friends: bigint[] = [];
  for (let i = 1n; i <= BigInt(n % 7); i++) {
    friends.push((id * 31n + i * 0x9e3779b9n) & 0xffffffffffffffffn);
  }
  return {
    id,
    name: `user-${id}`,
    email: `user${id}@example.com`,
    age: 18 + (n % 63),
    score: (n % 100_000) / 100,
    createdMs: 1_600_000_000_000 + n * 1000,
    active: n % 3 !== 0,
    tags,
    friends,
  };
}

const REQUEST_CODES = new Set(["PROTOCOL", "BOUNDS", "INVALID_ARGUMENT", "INTEGRITY", "NOT_FOUND"]);

/**
 * The error a server should report for `e` thrown by a demo handler: a refused request becomes an
 * {@link RpcError} EREQUEST (a full store or too many uploads: ELIMIT) whose text is the original
 * message and whose context `reason` is the original code; anything else is returned unchanged (the
 * dispatcher reports it as EINTERNAL).
 */
export function toRequestError(e: unknown): unknown {
  if (e instanceof VerbusError && !(e instanceof RpcError)) {
    if (REQUEST_CODES.has(e.code)) {
      return new RpcError(EREQUEST, e.message, { ...e.context, reason: e.code });
    }
    if (e.code === "FULL") return new RpcError(ELIMIT, e.message, { ...e.context, reason: e.code });
  }
  return e;
}

const utf8_decoder = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

function keyText(bytes: Uint8Array, what: string): string {
  try {
    return utf8_decoder.decode(bytes);
  } catch (cause) {
    throw new VerbusError("INVALID_ARGUMENT", `${what}: key is not valid UTF-8`, { cause });
  }
}

function guarded(fn: DemoHandler): DemoHandler {
  return (request, ctx) => {
    try {
      return fn(request, ctx);
    } catch (e) {
      throw toRequestError(e);
    }
  };
}

/**
 * Builds the demo method tables. Handlers share the given (or newly made) KV and upload stores;
 * see the module documentation for buffer ownership and errors. Throws `INVALID_OPTIONS` for bad
 * options.
 */
export function demoService(options: DemoServiceOptions = {}): DemoServices {
  parseOptions(options_schema, options, "demoService options");
  const kv = options.kv ?? new KvStore();
  const uploads = options.uploads ??
    new ImageUploadStore({ ...options.upload, imageDir: options.imageDir });
  const large = new LargeObjectSource(kv, options.large);
  const max_small = options.maxSmallValueBytes ?? 1024 * 1024;
  const max_keys = options.maxMGetKeys ?? 4096;
  const profile = options.profile ?? syntheticProfile;

  const put = (request: Uint8Array, what: string, limit: number): Uint8Array => {
    const { key, value } = decodePutRequest(request, `${what} request`);
    if (value.length > limit) {
      throw new VerbusError(
        "BOUNDS",
        `${what}: value of ${value.length} bytes exceeds the limit of ${limit} bytes${
          what === "KvPut" ? " (use BigPut)" : ""
        }`,
      );
    }
    const text = keyText(key, what);
    if (text.startsWith("big:")) {
      throw new VerbusError(
        "INVALID_ARGUMENT",
        `${what}: keys starting with "big:" are reserved for generated objects`,
      );
    }
    const replaced = kv.put(text, value);
    return encodePutResponse({ replaced, length: value.length });
  };

  // Echo owns its request (it is not marked `borrowsRequest`): it answers with the request and
  // its attachment themselves, no copy (a copy per call costs ~0.2-0.7 µs on Deno, most of the
  // server's work for a 64 B echo over TCP). brpc's echo decodes and re-encodes instead.
  const echo_attachment = (ctx: DemoCallContext) => {
    const a = ctx.requestAttachment;
    if (a !== undefined && a.length > 0) ctx.responseAttachment = a;
  };

  const demo: Record<DemoMethod, DemoHandler> = {
    Ping: (request) =>
      encodePingResponse({
        nonce: decodePingRequest(request),
        serverTimeUs: BigInt(Date.now()) * 1000n,
      }),
    Echo: (request, ctx) => {
      echo_attachment(ctx);
      return request;
    },
    KvPut: (request) => put(request, "KvPut", max_small),
    KvGet: (request) => encodeGetResponse(kv.get(decodeKeyRequest(request, "KvGet request"))),
    MGet: (request) => encodeDynamicArray(kv.mget(decodeMGetRequest(request, max_keys))),
    Profile: (request) => {
      const id = decodeProfileRequest(request);
      const p = profile(id);
      if (p === undefined) throw new VerbusError("NOT_FOUND", `Profile: no user with id ${id}`);
      return encodeProfile(p);
    },
    LargeGet: (request) =>
      large.get(keyText(decodeKeyRequest(request, "LargeGet request"), "LargeGet")),
    BigPut: (request) => put(request, "BigPut", kv.maxValueBytes),
    ImagePut: (request) => encodeImageChunkResult(uploads.handleChunk(decodeImageChunk(request))),
    // Server-streaming (a brpc stream on the call's TCP connection): it needs the server's context.
    Count: countHandler as unknown as DemoHandler,
  };
  for (const m of DEMO_METHODS) demo[m] = guarded(demo[m]);
  // They copy what they keep (the KV copies the value): a fabric session may lend them its buffer.
  for (const m of ["KvPut", "BigPut"] as const) demo[m] = borrowsRequest(demo[m]);

  const brpc_echo: DemoHandler = guarded((request, ctx) => {
    const message = decodeEchoMessage(request, "EchoRequest");
    echo_attachment(ctx);
    return encodeEchoMessage(message);
  });

  const cpu = cpuUsageSampler();
  const brpc_perf: DemoHandler = guarded((request, ctx) => {
    if (decodePerfTestRequest(request).echoAttachment) echo_attachment(ctx);
    return encodePerfTestResponse(cpu());
  });

  return Object.freeze({
    [DEMO_SERVICE]: Object.freeze(demo),
    [BRPC_ECHO_SERVICE]: Object.freeze({ Echo: brpc_echo }),
    [BRPC_PERF_SERVICE]: Object.freeze({ Test: brpc_perf }),
  }) as DemoServices;
}
