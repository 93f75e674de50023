/**
 * The handshake messages. They travel as baidu_std calls on the built-in service
 * `verbus.Fabric` (methods `Hello` and `Ack`) over the session's TCP connection, so a stock brpc
 * server simply refuses the call (ENOMETHOD from brpc, ENOSERVICE from others) and the client
 * stays on TCP. Hellos are JSON validated by zod (a lying or confused peer gets a HANDSHAKE error
 * naming the field); the ACK is 4 bytes
 * big-endian like brpc's: 1 = the fast fabric is ON, 0 = fall back to TCP. A fabric's own
 * parameters and offer are opaque here: its provider validates them.
 *
 * Control path: every function allocates its result; any thread.
 * @module
 */
import { z } from "zod";
import { VerbusError } from "../../../errors.ts";
import { fabricNameSchema } from "../../../transport/fabric_kinds.ts";
import { parseOptions } from "../../../util/options.ts";
import { peerText } from "../../../util/log_text.ts";
import { type RegionConfig, regionConfigSchema } from "../../region/layout.ts";

/** The built-in handshake service. */
export const FABRIC_SERVICE = "verbus.Fabric";
/**
 * Handshake protocol version, bumped with every change of the hellos or of the session regions'
 * layout (`rpc/region/layout.ts`): both sides compute both regions from the hello's config, so
 * peers of two layouts must never share a session. 1: regions without stream rings; 2: a stream
 * ring at the end of each region and its two control-page words (streams over the fabric).
 */
export const HELLO_VERSION = 2;

/** What each older hello version lacks, for the refusal's text. */
const OLDER_VERSIONS: Readonly<Record<number, string>> = {
  1: "its regions have no stream rings (verbus before streams rode the fabric)",
};

/**
 * A hello of another version than this side's: the peer lays the regions out otherwise (or
 * speaks another hello), so the two stay on TCP. `peerVersion` is the version it announced.
 */
export class HelloVersionError extends VerbusError {
  readonly peerVersion: number;
  constructor(what: string, peerVersion: number, peer: "client" | "server") {
    const older = OLDER_VERSIONS[peerVersion];
    const side = peer === "client" ? "server" : "client";
    super(
      "HANDSHAKE",
      `${what}: field version: the ${peer} speaks hello version ${peerVersion}` +
        `${older ? ` (${older})` : peerVersion > HELLO_VERSION ? " (a newer verbus)" : ""}` +
        `, this ${side} speaks ${HELLO_VERSION}: the region layouts differ, the session stays on TCP`,
    );
    this.peerVersion = peerVersion;
  }
}
/** The most fabrics one hello may name. */
const MAX_HELLO_FABRICS = 8;

/** Fault injection a client may ask of the server for its session (tests and demos). */
const simulateSchema = z.object({
  serverPressure: z.enum(["ring", "objpool"]).optional(),
}).strict();

/** Client → server: who the client is, what it can use, the region it proposes. */
export const clientHelloSchema = z.object({
  version: z.literal(HELLO_VERSION),
  /** The client host's boot id (a UUID), or "" when it could not read it. */
  bootId: z.union([
    z.literal(""),
    z.string().regex(/^[0-9a-f-]{36}$/, "expected a boot id (UUID)"),
  ]),
  /** The client's pid (Linux pids are below 2^22). */
  pid: z.number().int().min(1).max(1 << 22),
  /**
   * Fabrics the client can use, best first, each once (a fabric the server does not know is
   * answered OFF, as one it does not offer).
   */
  fabrics: z.array(fabricNameSchema).max(MAX_HELLO_FABRICS)
    .refine((fs) => new Set(fs).size === fs.length, "a fabric is listed twice"),
  /** The region the client proposes (the server clamps every field to its own maximum). */
  region: regionConfigSchema.partial(),
  /** Per-fabric parameters, keyed by fabric (each provider validates its own). */
  params: z.record(fabricNameSchema, z.unknown()).default({}),
  simulate: simulateSchema.optional(),
}).strict();
export type ClientHello = z.output<typeof clientHelloSchema>;

/** Clamps every field of the client's proposed region to the server's maximum. */
export function clampRegion(max: RegionConfig, proposal: ClientHello["region"]): RegionConfig {
  const out = { ...max };
  for (const k of Object.keys(max) as (keyof RegionConfig)[]) {
    const v = proposal[k];
    if (typeof v === "number") out[k] = Math.min(v, max[k]);
  }
  return out;
}

/** Server → client: the decision per fabric, the final region, the chosen fabric's offer. */
export const serverHelloSchema: z.ZodObject<{
  version: z.ZodLiteral<typeof HELLO_VERSION>;
  sessionId: z.ZodNumber;
  fabric: z.ZodNullable<typeof fabricNameSchema>;
  decisions: z.ZodRecord<
    z.ZodString,
    z.ZodObject<{
      state: z.ZodEnum<{ ON: "ON"; OFF: "OFF" }>;
      reason: z.ZodOptional<z.ZodString>;
    }, z.core.$strip>
  >;
  region: typeof regionConfigSchema;
  offer: z.ZodOptional<z.ZodUnknown>;
  methods: z.ZodArray<z.ZodString>;
  batchBudget: z.ZodNumber;
  largeThreshold: z.ZodNumber;
}, z.core.$strict> = z.object({
  version: z.literal(HELLO_VERSION),
  sessionId: z.number().int().nonnegative(),
  /** The fabric chosen for the data plane, or null: TCP only. */
  fabric: fabricNameSchema.nullable(),
  /** Per-fabric decision and, when OFF, why. */
  decisions: z.record(
    z.string(),
    z.object({ state: z.enum(["ON", "OFF"]), reason: z.string().optional() }),
  ),
  region: regionConfigSchema,
  /** The chosen fabric's offer (its provider validates it). */
  offer: z.unknown().optional(),
  /** "service/method" names; request descriptors carry an index into this list. */
  methods: z.array(z.string().max(512)).max(65536),
  batchBudget: z.number().int().positive(),
  largeThreshold: z.number().int().nonnegative(),
}).strict();
export type ServerHello = z.output<typeof serverHelloSchema>;

const enc = new TextEncoder(), dec = new TextDecoder();

/** Encodes a hello (JSON). */
export function encodeHello(h: ClientHello | ServerHello): Uint8Array {
  return enc.encode(JSON.stringify(h));
}

/**
 * Decodes and validates a hello; throws HANDSHAKE naming the bad field. With `peer` (who sent it)
 * its version is checked first: an integer version other than {@link HELLO_VERSION} throws
 * {@link HelloVersionError} (before the schema, whose fields may differ between versions).
 */
export function decodeHello<T extends z.ZodType>(
  schema: T,
  bytes: Uint8Array,
  what: string,
  peer?: "client" | "server",
): z.output<T> {
  if (peer !== undefined) {
    const v = peekVersion(bytes);
    if (v !== undefined && v !== HELLO_VERSION) throw new HelloVersionError(what, v, peer);
  }
  let json: unknown;
  try {
    json = JSON.parse(dec.decode(bytes));
  } catch (e) {
    throw new VerbusError("HANDSHAKE", `${what}: not JSON (${(e as Error).message})`);
  }
  return parseOptions(schema, json, what, "HANDSHAKE");
}

/** A refused client hello's reason (it quotes the peer's bytes) is cut past this many characters. */
const HELLO_ERROR_MAX = 300;

/**
 * How the server ends a handshake whose client hello `e` refused: FALLBACK_TCP for a hello of
 * another version (the client is sound, its layout differs), FAILED for a malformed one; `why`
 * escaped and bounded for the log and the answer.
 */
export function helloRefusal(e: unknown): { state: "FALLBACK_TCP" | "FAILED"; why: string } {
  const why = peerText(e instanceof Error ? e.message : String(e), HELLO_ERROR_MAX);
  return { state: e instanceof HelloVersionError ? "FALLBACK_TCP" : "FAILED", why };
}

/** The hello's `version` when it is a JSON object with a positive integer version. */
function peekVersion(bytes: Uint8Array): number | undefined {
  try {
    const v = (JSON.parse(dec.decode(bytes)) as { version?: unknown } | null)?.version;
    return typeof v === "number" && Number.isSafeInteger(v) && v > 0 ? v : undefined;
  } catch {
    return undefined; // decodeHello says why
  }
}

/**
 * Client → server, after the session was established: the client's session `sessionId` failed
 * (or was taken down) for `reason`; the server closes it now rather than at the next Hello.
 */
export const byeSchema = z.object({
  sessionId: z.number().int().min(1).max(2 ** 32),
  reason: z.string().max(512),
  /**
   * Server → client only (the answer of a Watch): the requests it had not taken when it ended
   * the session, as `[slot, seq]` — never run, so the client may redo them over TCP.
   */
  untaken: z.array(z.tuple([z.number().int().min(0).max(65535), z.number().int().min(0)]))
    .max(65536).optional(),
}).strict();
export type Bye = z.output<typeof byeSchema>;

/** Encodes a Bye (JSON; the reason is cut to what the schema allows). */
export function encodeBye(b: Bye): Uint8Array {
  return enc.encode(JSON.stringify({ ...b, reason: b.reason.slice(0, 512) }));
}

/** ACK values (4 bytes, big-endian). */
export const ACK_ON = 1, ACK_OFF = 0;

/** The 4-byte ACK. */
export function encodeAck(v: number): Uint8Array {
  const b = new Uint8Array(4);
  new DataView(b.buffer).setUint32(0, v, false);
  return b;
}

/** Parses a 4-byte ACK; throws HANDSHAKE on anything else. */
export function decodeAck(b: Uint8Array): number {
  if (b.length !== 4) throw new VerbusError("HANDSHAKE", `ACK must be 4 bytes, got ${b.length}`);
  const v = new DataView(b.buffer, b.byteOffset, 4).getUint32(0, false);
  if (v !== ACK_ON && v !== ACK_OFF) {
    throw new VerbusError("HANDSHAKE", `ACK value ${v} is neither 0 nor 1`);
  }
  return v;
}

/** This host's boot id (same-host detection), or "" when unreadable. */
export { hostBootId as bootId } from "../../../transport/host.ts";
