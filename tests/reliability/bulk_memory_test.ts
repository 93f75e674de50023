/**
 * Bounded memory under sustained BULK load (issue 12): a server session lends the large requests
 * of handlers marked `borrowsRequest` a reused buffer (one for a synchronous handler, however many
 * calls), never the same one to two calls at once, within `requestBufferBytes`; a handler that
 * owns its requests still gets its own copy each call. Runs over shm.
 * @module
 */
import { connect } from "../../rpc/client/client.ts";
import { borrowsRequest, serve } from "../../rpc/server/server.ts";
import { assert, assertEquals, test } from "../harness.ts";

const SIZE = 20_000;

async function withServer(
  requestBufferBytes: number | undefined,
  fn: (
    call: (m: string, tag: number) => Promise<void>,
    seen: Map<string, Set<ArrayBuffer>>,
  ) => Promise<void>,
): Promise<void> {
  const seen = new Map<string, Set<ArrayBuffer>>([["Lend", new Set()], ["Own", new Set()], [
    "Slow",
    new Set(),
  ]]);
  const check = (m: string, req: Uint8Array): Uint8Array => {
    seen.get(m)!.add(req.buffer as ArrayBuffer);
    const tag = req[0];
    for (let i = 0; i < req.length; i += 997) {
      if (req[i] !== tag) throw new Error(`${m}: byte ${i} is ${req[i]}, not ${tag}`);
    }
    return new Uint8Array([tag]);
  };
  const server = await serve({
    port: 0,
    host: "127.0.0.1",
    services: {
      "t.B": {
        Lend: borrowsRequest((req) => check("Lend", req)),
        Own: (req) => check("Own", req),
        // Async: the request must stay intact while other calls arrive.
        Slow: borrowsRequest(async (req) => {
          await new Promise((r) => setTimeout(r, 5));
          return check("Slow", req);
        }),
      },
    },
    fabric: {
      fabrics: ["shm"],
      ...(requestBufferBytes === undefined ? {} : { requestBufferBytes }),
    },
    logger: { warn: () => {}, info: () => {} },
  });
  const c = await connect({ host: "127.0.0.1", port: server.port }, { logger: { warn: () => {} } });
  try {
    assertEquals(c.fabric, "shm");
    await fn(async (m, tag) => {
      const r = await c.call("t.B", m, new Uint8Array(SIZE).fill(tag));
      assertEquals([r.path, r.response[0]], ["BULK", tag]);
    }, seen);
  } finally {
    await c.close();
    await server.close();
  }
}

test("a borrowing handler's BULK requests reuse one buffer; an owning handler gets fresh copies", () =>
  withServer(undefined, async (call, seen) => {
    for (let i = 0; i < 200; i++) await call("Lend", i & 0xff);
    for (let i = 0; i < 50; i++) await call("Own", i & 0xff);
    assertEquals(seen.get("Lend")!.size, 1, "one lent buffer for 200 calls");
    assertEquals(seen.get("Own")!.size, 50, "a copy per call for a handler that owns it");
  }));

test("calls in flight at once never share a lent buffer, and past the budget requests are copied", () =>
  withServer(3 * 20_480, async (call, seen) => {
    // 32 async borrowing calls in flight, each with its own content; check() verifies every byte
    // after the others arrived. Only 3 buffers fit the budget: the rest come as copies.
    await Promise.all(Array.from({ length: 32 }, (_, i) => call("Slow", i + 1)));
    const n = seen.get("Slow")!.size;
    assert(n > 3, `past the 3 lent buffers requests came as copies (${n} buffers seen)`);
    // The 3 lent buffers are back in the pool: 10 sequential calls reuse them.
    const before = new Set(seen.get("Slow"));
    for (let i = 0; i < 10; i++) await call("Lend", 100 + i);
    assert(before.has([...seen.get("Lend")!][0]), "a freed lent buffer served the later call");
  }));
