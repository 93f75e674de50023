/**
 * The greeter example's service implementations, typed from the generated descriptors
 * (`gen/`, made by `buf generate`): `greeter.v1.GreeterService` and brpc's
 * `example.EchoService`. Shared by `server.ts` and the tests.
 * @module
 */
import { Code, ConnectError, type ServiceImpl } from "@connectrpc/connect";
import type { EchoService } from "./gen/example/echo_pb.ts";
import type { GreeterService } from "./gen/greeter/v1/greeter_pb.ts";

/**
 * `greeter.v1.GreeterService`: greets `name`; an empty name is InvalidArgument. `count` counts
 * the greetings of this implementation object. `greet` answers synchronously (the fast path);
 * `greetMany` streams `times` greetings, `greetAll` greets every name of a client stream once,
 * `chat` greets each name as it comes.
 */
export function greeterImpl(): ServiceImpl<typeof GreeterService> {
  let count = 0n;
  return {
    greet(request, context) {
      if (request.name === "") {
        throw new ConnectError("name must not be empty", Code.InvalidArgument);
      }
      const from = context.requestHeader.get("x-greeting") ?? "Hello";
      return { greeting: `${from}, ${request.name}!`, count: ++count };
    },
    // Streaming methods run on verbus streams (brpc Streaming RPC on the TCP connection).
    async *greetMany(request, context) {
      if (request.times > 10_000) {
        throw new ConnectError("times must be at most 10000", Code.InvalidArgument);
      }
      const from = context.requestHeader.get("x-greeting") ?? "Hello";
      for (let i = 1; i <= request.times; i++) {
        yield { greeting: `${from} #${i}, ${request.name}!`, count: ++count };
      }
    },
    async greetAll(requests) {
      const names: string[] = [];
      for await (const r of requests) names.push(r.name);
      return { greeting: `Hello, ${names.join(" and ") || "nobody"}!`, count: ++count };
    },
    async *chat(requests) {
      for await (const r of requests) yield { greeting: `Hello, ${r.name}!`, count: ++count };
    },
  };
}

/** brpc's `example.EchoService`, as its echo_server answers: the message back. */
export function echoImpl(): ServiceImpl<typeof EchoService> {
  return {
    echo(request) {
      return Promise.resolve({ message: request.message });
    },
  };
}
