/**
 * Which fabric session carries the streams of a client connection: the server sessions' stream
 * pipes of this thread by connection ({@link sessionStreams}), and the request header an opening
 * call names its client's session with ({@link STREAM_SESSION_FIELD}). A call cannot reach a
 * session that is not its connection's.
 *
 * Threading: the server's JS thread.
 * @module
 */
import type { FabricStreams } from "./stream_ring.ts";

/**
 * The server sessions' pipes of this thread, by client connection (`host:port` of the client, as
 * the fabric host keys its sessions): how `acceptStream` finds the session of the connection an
 * opening call came on (a call cannot reach a session that is not its connection's).
 */
export const sessionStreams = {
  byConnection: new Map<string, FabricStreams>(),
  /** Registers the session of connection `where` (a newer session replaces it). */
  add(where: string, fs: FabricStreams): void {
    this.byConnection.set(where, fs);
  },
  /** Forgets it (only when it is still the one registered). */
  remove(where: string, fs: FabricStreams): void {
    if (this.byConnection.get(where) === fs) this.byConnection.delete(where);
  },
  /** The pipe of connection `where`'s session, if it is alive. */
  find(where: string): FabricStreams | undefined {
    const fs = this.byConnection.get(where);
    return fs !== undefined && !fs.closed ? fs : undefined;
  },
};

/**
 * The request header of an opening call whose stream rides the client's fabric session (value
 * "1"): the server accepts it on the session of the call's connection, and answers on its pipe.
 */
export const STREAM_SESSION_FIELD = "x-verbus-stream-session";
