/**
 * Hostile handshakes over real verbs (Soft-RoCE VM, server on rxe1 10.77.0.2, client bound to
 * rxe0 10.77.0.1): every end of a pending handshake — ACK 0, ACK 1 without the proof, a
 * malformed ACK, no ACK in time, a refused new Hello, the connection closed — releases the PD,
 * MR, CQ, QP and CM id its offer pinned (`rdma resource show` before and after) and its fds;
 * then a real client still gets verbs. (tests/reliability/handshake_endings.ts; the host suite
 * runs the same over shm and the simulated URMA.)
 */
import { test } from "../harness.ts";
import type { ClientFabricProvider } from "../../transport/provider.ts";
import { createClientProvider } from "../../transport/verbs/provider.ts";
import { endingsRelease } from "../reliability/handshake_endings.ts";
import { held } from "../reliability/util.ts";
import { kernelResourceCounts } from "./fabric_verbs_util.ts";

const SERVER = "10.77.0.2", CLIENT = "10.77.0.1";

test(
  "verbs: each end of a pending handshake releases its PD, MR, CQ, QP, CM id and fds",
  async () => {
    let provider: ClientFabricProvider | null = null;
    await endingsRelease({
      label: "verbs",
      host: SERVER,
      // No prepared pool (preparedQps 0): a pooled bundle is kept on purpose, so only without it
      // does "released" mean back to the counts before.
      fabric: { fabrics: ["verbs"], providerOptions: { verbs: { addr: SERVER, preparedQps: 0 } } },
      client: {
        fabric: "verbs",
        providerOptions: { verbs: { sourceAddr: CLIENT, preparedQps: 0 } },
      },
      want: "verbs",
      ackTimeoutMs: 5000, // the VM is slow: ACKs must not time out before the test sends them
      hello: async () => {
        const p = await createClientProvider({ sourceAddr: CLIENT, preparedQps: 0 });
        if (typeof p === "string") throw new Error(p);
        provider = p;
        return { fabrics: ["verbs"], params: { verbs: p.params() } };
      },
      release: () => provider?.close(),
      count: () => ({ fds: held().fds, ...kernelResourceCounts() }),
    });
  },
  { timeoutMs: 180_000 },
);
