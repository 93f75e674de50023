/**
 * brpc RDMA connections on the process's progress engine (`rpc/session/engine/engine.ts`): a connection
 * whose QP is on the verbs hub's shared CQ is registered with the engine under its hub token, as
 * a verbus verbs session is. The engine's turn collects the hub (one CQ poll hands every
 * connection its completions and announces it), runs the announced connections' `step` (receive
 * blocks reposted, credits returned, queued bytes sent), spins while work comes (its spin policy,
 * fitted to the machine) and then parks ONE wait on the hub's completion channel for the whole
 * process. The engine is held while the connection is open.
 *
 * Threading: the JS thread of the connection (the engine is per thread).
 * @module
 */
import type { BrpcRdmaConn } from "../../transport/brpc_rdma/mod.ts";
import { type EngineSession, ProgressEngine, type Registration } from "../session/engine/engine.ts";

/** Nothing arrives for a driven connection outside its hub token (never called: it has one). */
const noInbound = (): Promise<boolean> => Promise.resolve(false);

/**
 * Drives `conn` on this thread's engine from now until the returned function is called (at its
 * close). `conn.readiness` must be set.
 */
export function driveOnEngine(conn: BrpcRdmaConn): () => void {
  const readiness = conn.readiness;
  if (readiness === undefined) throw new TypeError("a brpc RDMA connection without a shared CQ");
  const driven: EngineSession = {
    endpoint: { readiness, waitInbound: noInbound },
    step: () => conn.step(),
    wantsTurn: () => false,
    seenDoorbell: () => 0,
  };
  let engine: ProgressEngine | null = null;
  let reg: Registration | null = null;
  let ended = false;
  void ProgressEngine.forThread().then((e) => {
    if (ended) return;
    engine = e;
    reg = e.add(driven); // its first turn runs at once: what completed before is handled there
    e.hold(conn);
  });
  return () => {
    ended = true;
    reg?.remove();
    engine?.release(conn);
  };
}
