/**
 * One connection per server, shared: a process keeps one direct client — one TCP connection and
 * at most one fabric session — per (server address, connection options), however many cluster
 * clients, Connect transports and `connect("HOST:PORT", { shared: true })` users name that
 * server. As brpc keys its sockets by address and a signature of the transport, the key here is
 * the address as written plus the options (so a TCP-only user and a fabric user of one server do
 * not share; `shared` itself is not part of it). A server's client is made lazily, at its first
 * call, and closed when the last user releases it.
 *
 * Fabric sessions are capped per process (`maxFabricSessions`): past the cap a new server's
 * client is TCP-only and says why in its handshake reason — shared memory and queue pairs are
 * finite, and a cluster of thousands of servers must not exhaust them.
 *
 * Threading: one pool per JS thread ({@link ServerPool.forThread}); its clients belong to it.
 * @module
 */
import { type Client, connectDirect } from "../client/direct_client.ts";
import type { ClientOptions } from "../client/client_options.ts";

/** One user's hold on a server's shared client. */
export interface ServerLease {
  /** The server's `host:port`. */
  readonly address: string;
  /** The shared client, connected at the first ask (rejects when connecting fails). */
  client(): Promise<Client>;
  /** Why the client is TCP-only although its options ask for a fabric (the cap), if it is. */
  readonly note: string | undefined;
  /**
   * Drops the client after a broken connection so the next {@link client} connects anew (only
   * if it is still `broken`, the one this user saw fail). Other users of the server see it too.
   */
  reset(broken: Client): void;
  /** Gives the hold back; the last one closes the client. Safe twice. */
  release(): void;
}

interface Entry {
  key: string;
  address: string;
  options: ClientOptions;
  refs: number;
  client: Promise<Client> | null;
  /** The settled client (for reset and close without awaiting). */
  ready: Client | null;
  /** It holds a fabric session slot of the cap. */
  fabric: boolean;
  /** Why its client is TCP-only against its options (the cap), if it is. */
  note: string | undefined;
}

/** The shared clients of one JS thread. */
export class ServerPool {
  static #forThread: ServerPool | null = null;
  readonly #entries = new Map<string, Entry>();
  #fabricSessions = 0;
  /** Fabric sessions this pool opens at most (default 256); past it, servers get TCP. */
  maxFabricSessions = 256;

  /** This thread's pool. */
  static forThread(): ServerPool {
    return ServerPool.#forThread ??= new ServerPool();
  }

  /** Servers with a shared client now (tests, stats). */
  get size(): number {
    return this.#entries.size;
  }

  /** Fabric sessions held now (against {@link maxFabricSessions}). */
  get fabricSessions(): number {
    return this.#fabricSessions;
  }

  /** A hold on `address`'s client made with `options` (nothing connects until asked). */
  acquire(address: string, keyed: ClientOptions = {}): ServerLease {
    const { shared: _shared, ...options } = keyed;
    const key = `${address}|${JSON.stringify(options)}`;
    let e = this.#entries.get(key);
    if (!e) {
      e = {
        key,
        address,
        options,
        refs: 0,
        client: null,
        ready: null,
        fabric: false,
        note: undefined,
      };
      this.#entries.set(key, e);
    }
    e.refs++;
    const entry = e;
    let released = false;
    return {
      address,
      get note() {
        return entry.note;
      },
      client: () => this.#client(entry),
      reset: (broken) => this.#reset(entry, broken),
      release: () => {
        if (released) return;
        released = true;
        if (--entry.refs === 0) this.#drop(entry);
      },
    };
  }

  #client(e: Entry): Promise<Client> {
    if (e.client) return e.client;
    const wantsFabric = e.options.fabric !== "tcp";
    const capped = wantsFabric && this.#fabricSessions >= this.maxFabricSessions;
    if (wantsFabric && !capped) {
      e.fabric = true;
      this.#fabricSessions++;
    }
    e.note = capped
      ? `the fabric sessions of this process are at their cap (${this.maxFabricSessions}): TCP only`
      : undefined;
    const options: ClientOptions = capped ? { ...e.options, fabric: "tcp" } : e.options;
    const p = connectDirect(e.address, options).then((c) => {
      if (e.client === p) e.ready = c;
      else void c.close(); // reset or dropped while connecting
      return c;
    }, (err) => {
      if (e.client === p) this.#forget(e);
      throw err;
    });
    e.client = p;
    return p;
  }

  /** The client made for `e` is gone (failed to connect, broken, dropped). */
  #forget(e: Entry): void {
    e.client = null;
    e.ready = null;
    if (e.fabric) {
      e.fabric = false;
      this.#fabricSessions--;
    }
  }

  #reset(e: Entry, broken: Client): void {
    if (e.ready !== broken) return;
    this.#forget(e);
    void broken.close();
  }

  #drop(e: Entry): void {
    this.#entries.delete(e.key);
    const c = e.ready, p = e.client;
    this.#forget(e);
    if (c) void c.close();
    else p?.then((late) => late.close(), () => {});
  }
}
