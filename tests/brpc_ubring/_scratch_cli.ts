import { connect } from "../../rpc/channel.ts";
const lines: string[] = [];
const ch = await connect("127.0.0.1:8602", {
  brpcUbring: {},
  timeoutMs: 5000,
  logger: { warn: (m) => lines.push(m) },
});
try {
  for (let i = 0; i < 3; i++) {
    const r = await ch.call("test.PerfTestService", "Test", new Uint8Array([8, 1]), {
      attachment: new Uint8Array(5000).fill(7),
    });
    console.log(ch.transport, r.response, r.attachment.length);
  }
  const t0 = performance.now();
  let n = 0;
  while (performance.now() - t0 < 1000) {
    await ch.call("test.PerfTestService", "Test", new Uint8Array([8, 0]));
    n++;
  }
  console.log("depth1 calls/s", n);
} catch (e) {
  console.log("ERR", e);
}
console.log(lines);
await ch.close();
