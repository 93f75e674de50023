/**
 * `connect("HOST:PORT", { shared: true })`: the process's one client of that server — the one
 * cluster clients and Connect transports naming the same address and options use
 * (`server_pool.ts`) — seen through a view of its own. The view is the shared {@link Client}
 * (every method and getter, `instanceof Client`) except `close()`, which gives this user's hold
 * back (the connection closes with its last user) and after which the view's calls fail CLOSED.
 *
 * What sharing means for the user: `stats()` and `handshake` are the shared client's (every
 * user's calls); a connection that breaks is broken for every user (a cluster client then makes
 * a new one for itself; this view, like any direct client, stays on the broken one — connect
 * again); options that hold functions (a logger) are not part of the key, so users whose
 * options differ only there share.
 *
 * Threading: the JS thread of the pool (one per thread).
 * @module
 */
import { ClosedError } from "../../errors.ts";
import type { ClientOptions } from "../client/client_options.ts";
import type { Client } from "../client/direct_client.ts";
import { type ServerLease, ServerPool } from "./server_pool.ts";

/** The methods that start calls: refused once the view is closed. */
const CALLS: ReadonlySet<PropertyKey> = new Set(["call", "callMany", "wait"]);

/**
 * Holds `address`'s shared client (connecting it if no user has yet) and returns a view of it.
 * Rejects as `connect()` does (CONNECT_FAILED, INVALID_OPTIONS…), holding nothing then.
 */
export async function connectShared(
  address: string | { host: string; port: number },
  options: ClientOptions,
): Promise<Client> {
  const text = typeof address === "string"
    ? address
    : address.host.includes(":")
    ? `[${address.host}]:${address.port}`
    : `${address.host}:${address.port}`;
  const lease = ServerPool.forThread().acquire(text, options);
  try {
    return sharedView(await lease.client(), lease);
  } catch (e) {
    lease.release();
    throw e;
  }
}

/** The view of {@link connectShared} (see the module documentation). */
function sharedView(client: Client, lease: ServerLease): Client {
  let released = false;
  const close = (): Promise<void> => {
    if (!released) {
      released = true;
      lease.release();
    }
    return Promise.resolve();
  };
  const closed = () =>
    Promise.reject(new ClosedError(`this view of the shared client of ${lease.address}`));
  const refuseSubmit = () => {
    throw new ClosedError(`this view of the shared client of ${lease.address}`);
  };
  /** Methods bound to the shared client once each (no allocation per call). */
  const bound = new Map<PropertyKey, unknown>();
  return new Proxy(client, {
    get(target, prop) {
      if (prop === "close" || prop === Symbol.asyncDispose) return close;
      if (released && CALLS.has(prop)) return closed;
      if (released && prop === "submit") return refuseSubmit;
      const v = Reflect.get(target, prop, target);
      if (typeof v !== "function") return v;
      let f = bound.get(prop);
      if (f === undefined) bound.set(prop, f = (v as (...a: unknown[]) => unknown).bind(target));
      return f;
    },
  });
}
