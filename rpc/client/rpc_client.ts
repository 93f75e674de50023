/**
 * One client interface for every way of reaching a service: a direct connection to one server
 * (`direct_client.ts`), a same-host agent (`rpc/agent/agent_client.ts`), and a cluster of servers
 * behind a naming service. `connect()` (`client.ts`) picks the kind from the address; callers
 * program against {@link RpcClient}.
 *
 * {@link ClientBase} holds what every kind does the same way — the async handles (`submit` →
 * handle → `poll` / `wait`), `callMany` and disposal — so each kind writes only `call`,
 * `progress`, its stats and `close`.
 *
 * Threading: a client belongs to the JS thread that created it.
 * @module
 */
import { CallHandles } from "./call_handles.ts";
import type { BatchCall, ClientCallOptions, ClientCallResult } from "./client_options.ts";

/** What every verbus client offers; `R` is its result (each kind adds its own fields). */
export interface RpcClient<R extends ClientCallResult = ClientCallResult> {
  /** What carries its calls now ("shm", "verbs", "urma", "tcp", "agent", …). */
  readonly fabric: string;
  /**
   * Makes one call; resolves with the answer and the path it really took. The request bytes
   * are the caller's again once this returns (copied or sent).
   *
   * At most once: verbus moves a call to another path (TCP) or, a cluster client, to another
   * server only while no server has taken it (no free slot, a session that ended before the
   * server took it, a connection that could not be made, a refusal before dispatch: ELOGOFF,
   * ELIMIT, EOVERCROWDED). Once a server took the call, its outcome is final: an answer the
   * server ran but could not deliver (its object pool had no room in time) fails with ERESPONSE
   * saying so, a lost session or a deadline fails the call, and none of them is redone. A
   * cluster call marked `idempotent` opts in to more (a retry after a broken connection, a
   * backup request).
   */
  call(
    service: string,
    method: string,
    request: Uint8Array,
    options?: ClientCallOptions,
  ): Promise<R>;
  /** Many calls at once: the answers in order, or the first error. */
  callMany(calls: readonly BatchCall[]): Promise<R[]>;
  /** Starts a call without waiting; returns a handle for {@link poll} / {@link wait}. */
  submit(service: string, method: string, request: Uint8Array, options?: ClientCallOptions): number;
  /** Advances the client's calls once; returns how many completed. */
  progress(): number;
  /** The result of a finished call (the handle is then released), or undefined while running. Throws its error. */
  poll(handle: number): R | undefined;
  /** Waits for a call started with {@link submit}; releases the handle. */
  wait(handle: number): Promise<R>;
  /** Counters (each kind its own shape). */
  stats(): unknown;
  /** The counters for a person to read. */
  formatStats(): string;
  /** Ends every call in flight and releases every connection. Safe twice. */
  close(): Promise<void>;
  [Symbol.asyncDispose](): Promise<void>;
}

/** The part of {@link RpcClient} every kind does the same way. */
export abstract class ClientBase<R extends ClientCallResult> implements RpcClient<R> {
  readonly #handles = new CallHandles<R>();

  abstract readonly fabric: string;
  abstract call(
    service: string,
    method: string,
    request: Uint8Array,
    options?: ClientCallOptions,
  ): Promise<R>;
  abstract progress(): number;
  abstract stats(): unknown;
  abstract formatStats(): string;
  abstract close(): Promise<void>;

  /** Many calls at once: the answers in order, or the first error (`Promise.all`). */
  callMany(calls: readonly BatchCall[]): Promise<R[]> {
    return Promise.all(calls.map((c) => this.call(c.service, c.method, c.request, c.options)));
  }

  /** Starts a call without waiting; returns a handle for poll()/wait(). */
  submit(
    service: string,
    method: string,
    request: Uint8Array,
    options: ClientCallOptions = {},
  ): number {
    return this.#handles.add(this.call(service, method, request, options));
  }

  /** The result of a finished call (the handle is then released), or undefined while running. Throws its error. */
  poll(handle: number): R | undefined {
    return this.#handles.poll(handle);
  }

  /** Waits for a call started with submit(); releases the handle. */
  wait(handle: number): Promise<R> {
    return this.#handles.wait(handle);
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }
}
