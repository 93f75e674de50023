/**
 * How the direct client routes one call while its fabric session is up: the selector's input
 * filled from the call and the session (headers encoded into the request's metadata block —
 * one past the session's bound sends the call over TCP, saying why —, sizes, the server's
 * snapshot, the error count), the selector's answer, and for the fabric the call's record
 * ({@link CallRouter.spec}) that `ClientSession.submit` reads.
 *
 * Threading: the client's JS thread; nothing allocated per call.
 * @module
 */
import { libraryLogger } from "../../util/log.ts";
import type { ClientCallOptions, ConnectSettings } from "./client_options.ts";
import {
  type SelectInput,
  type SelectorConfig,
  selectorConfigSchema,
  selectPathWithoutReason,
} from "./selector.ts";
import type { ClientSession } from "../session/client/client_session.ts";
import { type CallSpec, newCallSpec, NO_CALL_OPTIONS } from "../session/client/call_spec.ts";

/** What {@link CallRouter.select} decided: the fabric, TCP, or TCP counted as a fallback. */
export const VIA_FABRIC = 0, VIA_TCP = 1, VIA_TCP_REDO = 2;
const EMPTY = new Uint8Array(0);

/** See the module documentation. */
export class CallRouter {
  /** The fabric call's record, refilled per call (no object per call). */
  readonly spec: CallSpec = newCallSpec();
  readonly #settings: ConnectSettings;
  readonly #config: SelectorConfig;
  /** Calls whose headers were past the fabric's metadata bound (sent over TCP). */
  #metaOverBoundCalls = 0;
  /** The selector's input, refilled per call (no object per call). */
  readonly #selectInput: SelectInput = {
    forcePath: undefined,
    fabricUp: false,
    errorCount: 0,
    requestBytes: 0,
    expectedResponseBytes: undefined,
    snapshot: undefined,
    requestFitsSlot: true,
  };

  constructor(settings: ConnectSettings) {
    this.#settings = settings;
    this.#config = selectorConfigSchema.parse(settings.selector);
  }

  /**
   * Picks the path of a call while fabric session `s` is up, with `errors` fabric errors counted
   * against it: {@link VIA_FABRIC} (and fills {@link spec} for `s.submit`), or TCP
   * ({@link VIA_TCP}; {@link VIA_TCP_REDO}: counted as a fallback). Throws what a bad option
   * throws (the metadata encoding).
   */
  select(
    s: ClientSession,
    errors: number,
    service: string,
    method: string,
    request: Uint8Array,
    options: ClientCallOptions,
  ): number {
    const attachment = options.attachment ?? EMPTY;
    // Headers (request_id, user_fields) ride in the request's metadata block; one past the
    // session's bound sends the call over TCP, saying why.
    const metaBytes = options === NO_CALL_OPTIONS ? 0 : s.metaBytes(options);
    const forcePath = options.forcePath ??
      (metaBytes < 0 ? this.#metaOverBound(-metaBytes, s.metaBound) : this.#settings.forcePath);
    const m = s.methodIndex(service, method);
    const bytes = request.length + attachment.length + (metaBytes > 0 ? metaBytes : 0);
    const sel = this.#selectInput;
    sel.forcePath = forcePath;
    sel.fabricUp = !s.failed && m >= 0;
    sel.errorCount = errors;
    sel.requestBytes = bytes;
    sel.expectedResponseBytes = options.expectedResponseBytes;
    sel.snapshot = s.snapshot ?? undefined;
    sel.requestFitsSlot = bytes <= s.slotSize;
    sel.maxResponseBytes = s.maxPoolAnswerBytes; // a larger answer would fail, having run
    const path = selectPathWithoutReason(sel, this.#config);
    if (path === "TCP_FALLBACK") return forcePath === "TCP_FALLBACK" ? VIA_TCP : VIA_TCP_REDO;
    const spec = this.spec; // reused: submit reads it before it returns
    spec.service = service;
    spec.method = method;
    spec.methodIndex = m;
    spec.request = request;
    spec.attachment = attachment;
    spec.path = path;
    spec.timeoutMs = options.timeoutMs ?? this.#settings.timeoutMs;
    spec.logId = options.logId ?? 0;
    spec.options = options;
    spec.preparedMeta = metaBytes; // encoded just above: submit writes it without encoding again
    return VIA_FABRIC;
  }

  /**
   * A call whose headers make a metadata block of `size` bytes, past the session's `bound`: it
   * goes over TCP (returns that path). Logged the first time, and then every 1000th time, with
   * the count.
   */
  #metaOverBound(size: number, bound: number): "TCP_FALLBACK" {
    if (this.#metaOverBoundCalls++ % 1000 === 0) {
      const line = `a call's headers make a ${size}-byte metadata block, past the fabric's ` +
        `bound of ${bound} bytes: it goes over TCP (${this.#metaOverBoundCalls} such call(s) so far)`;
      (this.#settings.logger ?? libraryLogger()).warn(line);
    }
    return "TCP_FALLBACK";
  }
}
