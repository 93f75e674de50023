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
 * the greetings of this implementation object. Answers synchronously (the fast path).
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
