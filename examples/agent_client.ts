/**
 * A local process calling a remote server through a same-host agent (`verbus agent`): the calls
 * look like any client's, and each result says the remote path and fabric the agent used.
 *
 *   verbus agent --connect HOST:PORT --listen demo &
 *   deno run -A examples/agent_client.ts demo [ID]      (or: bun examples/agent_client.ts demo)
 * @module
 */
import { connect, RUNTIME } from "../mod.ts";
import { DemoClient } from "./demo/mod.ts";

// deno-lint-ignore no-explicit-any
const g = globalThis as any;
const [name = "default", id = "1"] = RUNTIME === "deno" ? g.Deno.args : g.process.argv.slice(2);
const client = await connect(`agent:${name}`);
let last = "";
const demo = new DemoClient(async (service, method, request, options) => {
  const r = await client.call(service, method, request, options);
  last = `path=${r.path} fabric=${r.fabric} via=${r.via}`;
  return r;
});
const enc = new TextEncoder(), dec = new TextDecoder();
const say = (op: string, what: string) =>
  console.log(`[${RUNTIME} #${id}] ${op.padEnd(6)} ${last}  ${what}`);
say("ping", `rtt ${(await demo.ping()).rttUs.toFixed(0)} µs`);
say("echo", dec.decode(await demo.echo(enc.encode(`hello from process ${id}`))));
await demo.put(`color-${id}`, enc.encode(["red", "green", "blue"][Number(id) % 3]));
say("put", `color-${id}`);
say("get", `color-${id} = ${dec.decode((await demo.get(`color-${id}`))!)}`);
await demo.put(`blob-${id}`, new Uint8Array(40_000).fill(Number(id)));
say("put", `blob-${id}: 40000 bytes`);
say("get", `blob-${id}: ${(await demo.get(`blob-${id}`))!.length} bytes`);
console.log(`[${RUNTIME} #${id}] ${client.formatStats().split("\n").join(` | `)}`);
await client.close();
