/**
 * The no-lost-wake-up stress of the engine suites (shm in tests/fabric/engine_test.ts, URMA in
 * tests/urma/engine_test.ts): many clients, each making calls with random pauses across the
 * progress loop's spin and sleep thresholds; every answer is checked and a call that waits for
 * a lost wake-up times out.
 * @module
 */
import { assertEquals } from "../harness.ts";
import { type ClientOptions, connect } from "../../rpc/client/client.ts";
import { pattern, SMALL_REGION } from "./util.ts";

/** What a stress run talks to. */
export interface StressTarget {
  /** The server's port (127.0.0.1). */
  port: number;
  /** An echo method: "service/method". */
  echo: string;
  /** The fabric every client must get (its label, e.g. "urma (simulated)"). */
  label: string;
  /** Client options (the fabric). */
  client?: ClientOptions;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** `n` clients each make `calls` calls with random pauses of 0–`pauseMs`; every answer checked. */
export async function stress(
  t: StressTarget,
  n: number,
  calls: number,
  pauseMs: number,
): Promise<void> {
  const [service, method] = t.echo.split("/");
  const clients = await Promise.all(
    Array.from({ length: n }, () =>
      connect({ host: "127.0.0.1", port: t.port }, {
        region: SMALL_REGION,
        logger: { warn: () => {} },
        ...t.client,
      })),
  );
  try {
    await Promise.all(clients.map(async (c, k) => {
      assertEquals(c.fabric, t.label, JSON.stringify(c.handshake));
      for (let i = 0; i < calls; i++) {
        const r = await c.call(service, method, pattern(32, k * 1000 + i), {
          timeoutMs: 4000, // a lost wake-up would park the call for good: this catches it
        });
        assertEquals([r.path, r.response], ["EAGER", pattern(32, k * 1000 + i)], `${k}/${i}`);
        if (Math.random() < 0.5) await sleep(Math.random() * pauseMs);
      }
    }));
  } finally {
    await Promise.all(clients.map((c) => c.close()));
  }
}
