/**
 * The greeter example's server: `greeter.v1.GreeterService` and brpc's `example.EchoService`,
 * registered from their generated descriptors. Prints `listening on HOST:PORT`, serves until
 * SIGINT / SIGTERM.
 *
 *   deno run -A examples/greeter/server.ts [PORT]     (or: bun examples/greeter/server.ts [PORT])
 *
 * PORT 0 (the default) picks a free port.
 * @module
 */
import process from "node:process";
import { RUNTIME, serve } from "../../mod.ts";
import { EchoService } from "./gen/example/echo_pb.ts";
import { GreeterService } from "./gen/greeter/v1/greeter_pb.ts";
import { echoImpl, greeterImpl } from "./service.ts";

const port = Number(process.argv[2] ?? 0);
const server = await serve({
  port,
  services: [[GreeterService, greeterImpl()], [EchoService, echoImpl()]],
});
// The pid lets `make example`'s test check that no process and no /dev/shm object of it remains.
console.log(
  `[${RUNTIME}] greeter listening on ${server.host}:${server.port} (pid ${process.pid})`,
);
const stop = async () => {
  await server.close();
  process.exit(0);
};
process.on("SIGINT", stop);
process.on("SIGTERM", stop);
