/**
 * The greeter example's client: a `createClient` of the generated `GreeterService` and of brpc's
 * `EchoService` over a verbus transport (shm when the server is on this host, else RDMA / URMA /
 * TCP), printing what came back and the fabric that carried it, then `greetMany`'s greetings
 * streamed back (a brpc stream on the TCP connection).
 *
 *   deno run -A examples/greeter/client.ts PORT [NAME]   (or: bun examples/greeter/client.ts …)
 * @module
 */
import process from "node:process";
import { createClient } from "@connectrpc/connect";
import { createVerbusTransport, RUNTIME } from "../../mod.ts";
import { EchoService } from "./gen/example/echo_pb.ts";
import { GreeterService } from "./gen/greeter/v1/greeter_pb.ts";

const port = Number(process.argv[2]);
const name = process.argv[3] ?? "newcomer";
const transport = createVerbusTransport({ host: "127.0.0.1", port });
const greeter = createClient(GreeterService, transport);
const echo = createClient(EchoService, transport);

const { greeting, count } = await greeter.greet({ name }, { timeoutMs: 2000 });
const { message } = await echo.echo({ message: `echo from ${RUNTIME}` });
const fabric = (await transport.client()).fabric;
console.log(`[${RUNTIME}] ${greeting} (greeting #${count}) | ${message} | fabric: ${fabric}`);
// A server-streaming method: the greetings come one by one on a stream (over the TCP connection).
const streamed: string[] = [];
for await (const r of greeter.greetMany({ name, times: 3 }, { timeoutMs: 2000 })) {
  streamed.push(r.greeting);
}
console.log(`[${RUNTIME}] streamed: ${streamed.join(" | ")}`);
await transport.close();
