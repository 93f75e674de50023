/**
 * `verbus call --method SERVICE/METHOD --body-hex HEX [--attachment-bytes N]` against the demo
 * server, through the verbus client (shm/TCP here) and through a channel in brpc's RDMA mode
 * (`--brpc-rdma`: on this host it stays on TCP, saying why); and brpc's
 * `test.PerfTestService/Test` (example/rdma_performance/test.proto), its bytes written out by
 * hand from the .proto.
 */
import { echoReport, runBrpcMode, runMethod } from "../../cli/call_method.ts";
import { parseCallArgs } from "../../cli/call_options.ts";
import type { OpReport } from "../../cli/call.ts";
import { demoService } from "../../examples/demo/mod.ts";
import { connect, connectChannel, serve } from "../../mod.ts";
import { assert, assertEquals, test } from "../harness.ts";

async function demo() {
  return await serve({ port: 0, services: demoService(), brpcRdma: {}, logger: { warn() {} } });
}

test("PerfTestService/Test: cpu_usage answered, attachment echoed only when asked", async () => {
  const server = await demo();
  const ch = await connectChannel(`127.0.0.1:${server.port}`);
  try {
    const att = new Uint8Array(3000).fill(7);
    // PerfTestRequest { echo_attachment: true } = field 1 varint 1 → 08 01
    const yes = await ch.call("test.PerfTestService", "Test", Uint8Array.of(8, 1), {
      attachment: att,
    });
    assertEquals(yes.attachment, att);
    // PerfTestResponse { cpu_usage = 1 (string) } → 0a <len> <utf-8>
    assertEquals(yes.response[0], 0x0a);
    assertEquals(yes.response[1], yes.response.length - 2);
    const no = await ch.call("test.PerfTestService", "Test", Uint8Array.of(8, 0), {
      attachment: att,
    });
    assertEquals(no.attachment.length, 0);
    const bad = await ch.call("test.PerfTestService", "Test", new Uint8Array(0)).catch((e) => e);
    assert(String(bad.message).includes("echo_attachment"), String(bad.message));
  } finally {
    await ch.close();
    await server.close();
  }
});

test("verbus call --method: response hex and attachment size, via the client and --brpc-rdma", async () => {
  const server = await demo();
  const args = [
    "--port",
    String(server.port),
    "--method",
    "example.EchoService/Echo",
    "--body-hex",
    "0a026869", // EchoRequest { message: "hi" }
    "--attachment-bytes",
    "20000",
  ];
  const client = await connect(`127.0.0.1:${server.port}`, { logger: { warn() {} } });
  try {
    const o = parseCallArgs(args);
    const r = await runMethod((s, m, b, a) => client.call(s, m, b, { attachment: a }), o);
    assert(r.ok, r.error);
    assertEquals(r.result, { response_hex: "0a026869", attachment_bytes: 20000 });
    const reports: OpReport[] = [];
    const lines: string[] = [];
    const warn = console.error;
    console.error = (m: string) => void lines.push(m);
    let rc: number;
    try {
      rc = await runBrpcMode(parseCallArgs([...args, "--brpc-rdma"]), (x) => void reports.push(x));
    } finally {
      console.error = warn;
    }
    assertEquals(rc, 0);
    assertEquals(reports.length, 1);
    assertEquals(reports[0].result, { response_hex: "0a026869", attachment_bytes: 20000 });
    assertEquals(reports[0].fabric, "tcp"); // no RDMA device on this host
    // --brpc-echo in brpc mode prints the answer's message, as it does without the mode.
    const echoed: OpReport[] = [];
    console.error = () => {};
    try {
      rc = await runBrpcMode(
        parseCallArgs(["--port", String(server.port), "--brpc-echo", "hello", "--brpc-rdma"]),
        (x) => void echoed.push(x),
      );
    } finally {
      console.error = warn;
    }
    assertEquals(rc, 0);
    assertEquals(echoed.map((r) => [r.op, r.ok, r.result]), [["brpc-echo", true, "hello"]]);
    assertEquals(
      echoReport({ ...echoed[0], result: { response_hex: "ff", attachment_bytes: 0 } }).ok,
      false,
    );
    const bad = await runMethod(
      () => Promise.reject(new Error("x")),
      parseCallArgs([
        "--port",
        "1",
        "--method",
        "no-slash",
      ]),
    );
    assert(!bad.ok && bad.error!.includes("SERVICE/METHOD"), bad.error);
  } finally {
    await client.close();
    await server.close();
  }
});
