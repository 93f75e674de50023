/**
 * One call's data as it travels from the client's `call()` down to a session slot: a record the
 * caller fills and {@link ClientSession.submit} reads (instead of ten positional arguments). The
 * fast path fills one record per client and reuses it (no object per call): `submit` reads it
 * before it returns and keeps only what the slot needs. A caller that waits before submitting
 * (backpressure) takes a copy ({@link copyCallSpec}), since the reused record is refilled by the
 * calls made meanwhile.
 *
 * Ownership: `request`, `service`, `method` and `options` are kept by the slot (not copied) until
 * the call settles, for a TCP redo when the server has no room for the answer; `request` and
 * `attachment` bytes are copied into the region before `submit` returns. One JS thread.
 * @module
 */
import type { ClientCallOptions } from "../../client/client_options.ts";

/** How a fabric call carries its request: inline in the slot, or the answer read lazily, or BULK. */
export type FabricPath = "EAGER" | "LAZY" | "BULK";

/** One call, as `ClientSession.submit` reads it. */
export interface CallSpec {
  /** Service name (kept for a TCP redo, and for errors). */
  service: string;
  /** Method name (kept for a TCP redo, and for errors). */
  method: string;
  /** The method's index in the server's list (the hello's `methods`). */
  methodIndex: number;
  /** The request body. */
  request: Uint8Array;
  /** brpc's attachment (empty for none). */
  attachment: Uint8Array;
  /** The path the selector chose (BULK also when the request does not fit a slot). */
  path: FabricPath;
  /** The call's deadline from now in ms (0: none). */
  timeoutMs: number;
  /** brpc's log_id. */
  logId: number | bigint;
  /** The caller's options (headers ride the metadata block). */
  options: ClientCallOptions;
  /**
   * The size `ClientSession.metaBytes(options)` just returned (nothing encoded since), so submit
   * writes the block without encoding it again; -1: submit encodes it.
   */
  preparedMeta: number;
}

const EMPTY = new Uint8Array(0);
/** The options of a call that gave none (compared by identity: no metadata block). */
export const NO_CALL_OPTIONS: ClientCallOptions = Object.freeze({});

/** A record with every field set (one shape for every record: the JIT sees one class). */
export function newCallSpec(): CallSpec {
  return {
    service: "",
    method: "",
    methodIndex: -1,
    request: EMPTY,
    attachment: EMPTY,
    path: "EAGER",
    timeoutMs: 0,
    logId: 0,
    options: NO_CALL_OPTIONS,
    preparedMeta: -1,
  };
}

/** A copy of `spec` for a submit made later: its metadata block is encoded again then. */
export function copyCallSpec(spec: CallSpec): CallSpec {
  return { ...spec, preparedMeta: -1 };
}
