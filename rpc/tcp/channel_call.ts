/**
 * The per-call pieces of a {@link Channel}: the call options and results, and the record of one
 * call waiting for its answer. A call costs this record and its promise; the promise's executor
 * and the timer callback are module functions (no closure per call).
 *
 * Threading: the channel's JS thread.
 * @module
 */
import { ConnectionClosedError, TimeoutError, type VerbusError } from "../../errors.ts";
import type { Int64 } from "../protocol/rpc_meta.ts";

/** Options of one call. */
export interface CallOptions {
  /** Overrides the channel's default timeout, in ms. */
  timeoutMs?: number;
  /** Sent after the request; ownership stays with the caller (it is copied). */
  attachment?: Uint8Array;
  /** `log_id` of the request. */
  logId?: Int64;
  /** `request_id` of the request. */
  requestId?: string;
  /**
   * `user_fields` of the request (a brpc server reads them with `request_user_fields()`). TCP
   * carries them in the RpcMeta; a fabric session in the request's metadata block, up to the
   * session's bound (past it the call goes over TCP, the reason logged).
   */
  userFields?: ReadonlyMap<string, string>;
  /** @internal Encoded `StreamSettings` of a call that opens a stream (`rpc/stream/open.ts`). */
  streamSettings?: Uint8Array;
}

/** A successful answer. The arrays and maps are owned by the caller. */
export interface CallResult {
  response: Uint8Array;
  attachment: Uint8Array;
  /** The answer's `user_fields` (response headers), when it carried any. */
  userFields?: ReadonlyMap<string, string>;
  /** The answer's trailers (a verbus RpcMeta extension), when it carried any. */
  trailers?: ReadonlyMap<string, string>;
}

/**
 * What the channel's calls for a `Client` resolve with: the answer and the path it took (always
 * TCP), built once per call instead of being copied into a result of the client's.
 */
export interface TcpCallResult extends CallResult {
  path: "TCP_FALLBACK";
  fabric: "tcp";
}

/**
 * One call as the channel's entry points hand it down to the frame writer and the pending table,
 * instead of five positional arguments at every step. A channel fills one record per call and
 * reuses it (no object per call): the call is framed and recorded before `call()` returns. A call
 * that must wait for a connection first takes a copy ({@link copyChannelCall}), since the reused
 * record is refilled by the calls made meanwhile. Ownership: the byte arrays stay the caller's (the
 * frame copies them). One JS thread.
 */
export interface ChannelCall {
  /** Full protobuf service name (RpcRequestMeta `service_name`). */
  service: string;
  /** Method name (RpcRequestMeta `method_name`). */
  method: string;
  /** The request payload. */
  request: Uint8Array;
  /** The caller's options, or undefined: the channel's defaults. */
  options: CallOptions | undefined;
  /** Resolve with a {@link TcpCallResult} and report the latency to the channel's observer. */
  asClient: boolean;
}

/** A record with every field set (one shape for every record). */
export function newChannelCall(): ChannelCall {
  return {
    service: "",
    method: "",
    request: new Uint8Array(0),
    options: undefined,
    asClient: false,
  };
}

/** A copy of `call` for a call sent later (after a reconnect). */
export function copyChannelCall(call: ChannelCall): ChannelCall {
  return { ...call };
}

/** What a pending call's own timer calls back into. */
export interface CallOwner {
  _expire(p: PendingCall): void;
}

/** One call waiting for its answer. */
export class PendingCall {
  resolve!: (r: CallResult) => void;
  reject!: (e: VerbusError) => void;
  /** Own timer, only for calls whose timeout differs from the channel default. */
  timer: ReturnType<typeof setTimeout> | undefined = undefined;
  /** Service name (for the errors of this call). */
  readonly service: string;
  /** Method name (for the errors of this call). */
  readonly method: string;
  /** Resolve with a {@link TcpCallResult} and report to the channel's observer. */
  readonly asClient: boolean;
  /**
   * The names and the tag come from `call` (read now: the record is reused); `deadline` is the
   * `performance.now()` when the call times out.
   */
  constructor(
    readonly owner: CallOwner,
    readonly id: number,
    call: ChannelCall,
    readonly timeoutMs: number,
    readonly deadline: number,
  ) {
    this.service = call.service;
    this.method = call.method;
    this.asClient = call.asClient;
  }
}

/** The call whose promise is being created (the executor below runs synchronously). */
let executing: PendingCall | null = null;

/** One executor for every call's promise: no closure is allocated per call. */
function executor(resolve: (r: CallResult) => void, reject: (e: VerbusError) => void): void {
  const p = executing!;
  p.resolve = resolve;
  p.reject = reject;
}

/** The promise of `p` (its resolve and reject are stored in it). */
export function promiseOf<T extends CallResult>(p: PendingCall): Promise<T> {
  executing = p;
  const promise = new Promise<CallResult>(executor);
  executing = null;
  return promise as Promise<T>;
}

/** Timer callback of a call with a timeout of its own. */
export function onTimeout(p: PendingCall): void {
  p.owner._expire(p);
}

/** The error of a call whose deadline passed. */
export function timedOut(p: PendingCall, where: string): TimeoutError {
  return new TimeoutError(
    `call ${p.service}.${p.method} to ${where} timed out after ${p.timeoutMs} ms`,
    { service: p.service, method: p.method, timeoutMs: p.timeoutMs },
  );
}

/**
 * The error of the `count` calls pending when the connection to `where` closed: `why` (the
 * transport's or the parser's error), and the reason the server gave, if it gave one.
 */
export function connectionLost(
  count: number,
  where: string,
  why: VerbusError | undefined,
  serverSaid: string | undefined,
): ConnectionClosedError {
  const said = serverSaid !== undefined ? ` (the server said: ${serverSaid})` : "";
  return new ConnectionClosedError(
    `${count} pending call(s) failed: ` +
      (why ? why.message : `connection to ${where} was closed`) + said,
    { cause: why, context: { remote: where } },
  );
}

/**
 * The calls waiting for an answer, by correlation id. Ids are handed out in order and answers
 * mostly come back in order, so a call lives in slot `id & mask` of a power-of-two array: adding,
 * finding and removing are an index each (a `Map` costs a hash per operation, and garbage as it
 * rehashes). A call still pending when its slot comes round again (a slow one among many
 * fast ones) moves to a small overflow map; the array doubles only when more than half of it is
 * in use.
 */
export class PendingTable {
  #slots: (PendingCall | undefined)[] = new Array(64).fill(undefined);
  #mask = 63;
  #count = 0;
  readonly #overflow = new Map<number, PendingCall>();

  /** Calls pending. */
  get size(): number {
    return this.#count;
  }

  add(p: PendingCall): void {
    if (this.#count * 2 >= this.#slots.length) this.#grow();
    const i = p.id & this.#mask;
    const old = this.#slots[i];
    if (old !== undefined) this.#overflow.set(old.id, old);
    this.#slots[i] = p;
    this.#count++;
  }

  /** The pending call with this id, if any. */
  get(id: number): PendingCall | undefined {
    const p = this.#slots[id & this.#mask];
    if (p !== undefined && p.id === id) return p;
    return this.#overflow.size === 0 ? undefined : this.#overflow.get(id);
  }

  /** Removes `p` (a call {@link get} returned). */
  delete(p: PendingCall): void {
    const i = p.id & this.#mask;
    if (this.#slots[i] === p) this.#slots[i] = undefined;
    else this.#overflow.delete(p.id);
    this.#count--;
  }

  /** Every pending call, oldest (lowest id) first. */
  inOrder(): PendingCall[] {
    const all: PendingCall[] = [...this.#overflow.values()];
    for (const p of this.#slots) if (p !== undefined) all.push(p);
    return all.sort((a, b) => a.id - b.id);
  }

  clear(): void {
    this.#slots.fill(undefined);
    this.#overflow.clear();
    this.#count = 0;
  }

  #grow(): void {
    const old = this.#slots;
    this.#slots = new Array(old.length * 2).fill(undefined);
    this.#mask = this.#slots.length - 1;
    // Distinct low bits stay distinct under the wider mask: no collisions among the moved calls.
    for (const p of old) if (p !== undefined) this.#slots[p.id & this.#mask] = p;
  }
}
