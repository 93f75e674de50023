/**
 * Cross-runtime: a verbus server running on the other runtime (a child process), called from
 * this one. Run the suite on both runtimes to cover both directions.
 */
import { RUNTIME } from "../../ffi/runtime.ts";
import { connect } from "../../rpc/tcp/channel.ts";
import { ENOMETHOD, RpcError } from "../../rpc/errors.ts";
import { assertEquals, assertRejects, test } from "../harness.ts";
import { otherRuntime, withChild } from "../util/proc.ts";

const te = new TextEncoder();
const td = new TextDecoder();
const other = otherRuntime();

test(`a server on ${other} answers a client on ${RUNTIME}`, async () => {
  await withChild(other, "tests/fixtures/echo_server.ts", {}, async (child) => {
    const ch = await connect({ host: "127.0.0.1", port: child.port });
    try {
      assertEquals(
        td.decode((await ch.call("example.EchoService", "Runtime", new Uint8Array(0))).response),
        other,
      );
      const big = new Uint8Array(1 << 20).map((_, i) => (i * 7) & 0xff);
      const r = await ch.call("example.EchoService", "Echo", big, {
        attachment: te.encode("att"),
        logId: 5,
      });
      assertEquals(r.response, big);
      assertEquals(td.decode(r.attachment), "att");
      const many = await Promise.all(
        Array.from(
          { length: 300 },
          (_, i) => ch.call("example.EchoService", "Echo", te.encode(`#${i}`)),
        ),
      );
      many.forEach((m, i) => assertEquals(td.decode(m.response), `#${i}`));
      const e = await assertRejects(
        () => ch.call("example.EchoService", "Nope", new Uint8Array(0)),
        RpcError,
      );
      assertEquals(e.errorCode, ENOMETHOD);
    } finally {
      await ch.close();
    }
  });
}, { timeoutMs: 60_000 });
