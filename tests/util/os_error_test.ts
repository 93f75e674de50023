/**
 * Socket errors name the errno and the address on both runtimes: the runtimes' error shapes read
 * alike (util/os_error.ts), and a refused connect and a busy port, made for real on the runtime
 * running the test, carry `ECONNREFUSED (errno 111)` / `EADDRINUSE (errno 98)` and the address in
 * their message and their context.
 */
import { ConnectFailedError, VerbusError } from "../../errors.ts";
import { tcp } from "../../transport/tcp/mod.ts";
import { describeOsError, osErrorInfo } from "../../util/os_error.ts";
import { assert, assertEquals, assertRejects, test } from "../harness.ts";

/** An error shaped as a runtime throws it. */
function shaped(name: string, message: string, fields: Record<string, unknown>): Error {
  const e = new Error(message);
  e.name = name;
  return Object.assign(e, fields);
}

test("os errors: Deno's and Bun's shapes give the same name and number", () => {
  const deno = shaped("ConnectionRefused", "Connection refused (os error 111)", {
    code: "ECONNREFUSED",
  });
  const bun = shaped("Error", "Failed to connect", {
    code: "ECONNREFUSED",
    errno: -111,
    syscall: "connect",
  });
  assertEquals(osErrorInfo(deno), {
    code: "ECONNREFUSED",
    errno: 111,
    detail: "Connection refused",
  });
  assertEquals(osErrorInfo(bun), {
    code: "ECONNREFUSED",
    errno: 111,
    syscall: "connect",
    detail: "Failed to connect",
  });
  assertEquals(describeOsError(deno), "ECONNREFUSED (errno 111): Connection refused");
  assertEquals(describeOsError(bun), "ECONNREFUSED (errno 111): Failed to connect");
  const busy = shaped("Error", "Failed to listen at 127.0.0.1", {
    code: "EADDRINUSE",
    errno: 98,
    syscall: "listen",
  });
  assertEquals(describeOsError(busy), "EADDRINUSE (errno 98): Failed to listen at 127.0.0.1");
});

test("os errors: a resolver code has no errno; an unnamed os error keeps its number; plain errors", () => {
  const dns = shaped("Error", "getaddrinfo ENOTFOUND x.invalid", {
    code: "ENOTFOUND",
    errno: 4,
    syscall: "getaddrinfo",
  });
  assertEquals(osErrorInfo(dns), {
    code: "ENOTFOUND",
    syscall: "getaddrinfo",
    detail: "getaddrinfo ENOTFOUND x.invalid",
  });
  assertEquals(osErrorInfo(shaped("Other", "Something odd (os error 71)", {})), {
    errno: 71,
    detail: "Something odd",
  });
  assertEquals(
    describeOsError(shaped("Other", "Something odd (os error 71)", {})),
    "Other: Something odd",
  );
  assertEquals(describeOsError(new Error("plain")), "plain");
  assertEquals(describeOsError("a string"), "a string");
});

test("a refused connect names ECONNREFUSED, errno 111 and the address", async () => {
  // port 1 (tcpmux): nothing listens there on a test host
  const port = 1;
  const e = await assertRejects(() => tcp.connect({ host: "127.0.0.1", port }), ConnectFailedError);
  assert(
    e.message.startsWith(`cannot connect to 127.0.0.1:${port}: ECONNREFUSED (errno 111)`),
    e.message,
  );
  assertEquals([e.context.code, e.context.errno, e.context.port], ["ECONNREFUSED", 111, port]);
});

test("a busy port names EADDRINUSE, errno 98 and the address", async () => {
  const l = await tcp.listen({ host: "127.0.0.1", port: 0, onConnection: (c) => c.close() });
  try {
    const e = await assertRejects(
      () => tcp.listen({ host: "127.0.0.1", port: l.port, onConnection: (c) => c.close() }),
      VerbusError,
    );
    assertEquals(e.code, "LISTEN_FAILED");
    assert(
      e.message.startsWith(`cannot listen on 127.0.0.1:${l.port}: EADDRINUSE (errno 98)`),
      e.message,
    );
    assertEquals([e.context.code, e.context.errno], ["EADDRINUSE", 98]);
  } finally {
    l.close();
  }
});
