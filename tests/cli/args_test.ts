/**
 * The command line takes every option both as `--name value` and as `--name=value` (`verbus
 * call`, `serve`, `doctor`), flags as `--json` or `--json=true|false`, and names what is wrong.
 */
import { assert, assertEquals, assertThrows, test } from "../harness.ts";
import { CALL_HELP, CALL_OPS, CALL_OPTIONS, parseCallArgs } from "../../cli/call_options.ts";
import { parseBenchArgs } from "../../cli/bench.ts";
import { didYouMean, editDistance } from "../../cli/did_you_mean.ts";
import { parseDoctorArgs } from "../../cli/doctor.ts";
import { parseServeArgs, SERVE_OPTIONS } from "../../cli/serve.ts";
import { splitArgs } from "../../cli/options.ts";
import { z } from "zod";

/** A sample value for every option of `verbus call` (null: a flag; two strings: a pair). */
const CALL_SAMPLES: Record<string, string | [string, string] | null> = {
  host: "127.0.0.2",
  port: "8000",
  agent: "a1",
  ns: "list://127.0.0.1:8000,127.0.0.1:8001",
  lb: "c_murmurhash",
  "max-retry": "2",
  "backup-request-ms": "15",
  "request-code": "18446744073709551615",
  ping: null,
  method: "test.PerfTestService/Test",
  "body-hex": "0801",
  "attachment-bytes": "10",
  "brpc-rdma": null,
  "brpc-ubring": null,
  "rdma-device": "rxe0",
  echo: "a=b",
  put: ["k", "v=w"],
  get: "k",
  mget: "a,b",
  profile: "7",
  "large-get": "big:64k",
  bigput: ["bk", "20000"],
  "image-put": ["x.png", "/tmp/x"],
  "image-chunk-size": "4096",
  "brpc-echo": "hi",
  lifecycle: "3",
  "lifecycle-stale": null,
  "lifecycle-repeat-reclaim": null,
  "lifecycle-timeout": null,
  "async-bench": "100",
  "bench-op": "put",
  "async-window": "8",
  "bench-bytes": "128",
  "async-seconds": "1.5",
  "async-warmup": "10",
  "async-sync": null,
  "stream-count": "5",
  stats: null,
  fabric: "urma",
  urma: "sim",
  "source-addr": "10.0.0.1",
  "rdma-mode": "poll",
  "force-path": "lazy",
  "simulate-fabric-down": null,
  "simulate-op-fail": "2",
  "simulate-errors": "3",
  "simulate-server-pressure": "ring",
  header: "traceparent=00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
  "timeout-ms": "900",
  json: null,
};

const SERVE_SAMPLES: Record<string, string | null> = {
  port: "8000",
  host: "0.0.0.0",
  "image-dir": "/tmp/img",
  fabric: "shm,urma",
  urma: "sim",
  "rdma-addr": "10.77.0.2",
  "rdma-port": "7471",
  "rdma-mode": "event",
  "object-ttl-ms": "1500",
  "batch-budget": "32",
  "kv-max-bytes": "1048576",
  "brpc-rdma": null,
  "brpc-ubring": null,
  "rdma-device": "rxe1",
  register: "etcd://127.0.0.1:2379/verbus/demo",
  "register-ttl": "3",
  "register-tag": "2",
  "exit-with-stdin": null,
  json: null,
};

function argv(samples: Record<string, string | [string, string] | null>, form: "space" | "eq") {
  return Object.entries(samples).flatMap(([k, v]) => {
    if (v === null) return [`--${k}`];
    if (Array.isArray(v)) return form === "eq" ? [`--${k}=${v[0]}`, v[1]] : [`--${k}`, ...v];
    return form === "eq" ? [`--${k}=${v}`] : [`--${k}`, v];
  });
}

test("verbus call: every option parses the same as --name value and --name=value", () => {
  assertEquals(Object.keys(CALL_SAMPLES).sort(), [...CALL_OPTIONS].sort(), "a sample per option");
  const spaced = parseCallArgs(argv(CALL_SAMPLES, "space"));
  const eq = parseCallArgs(argv(CALL_SAMPLES, "eq"));
  assertEquals(eq, spaced);
  assertEquals([eq.port, eq.urma, eq.echo, eq.put], [8000, "sim", ["a=b"], ["k", "v=w"]]);
  assertEquals([eq.ns, eq.lb, eq["max-retry"], eq["backup-request-ms"], eq["request-code"]], [
    "list://127.0.0.1:8000,127.0.0.1:8001",
    "c_murmurhash",
    2,
    15,
    (1n << 64n) - 1n,
  ]);
  assertEquals(eq["simulate-fabric-down"], true);
  assertEquals(parseCallArgs(["--port=1", "--json=false"]).json, false);
});

test("verbus call: --echo and --get may repeat (each kept, in order); --ns takes a URL", () => {
  const o = parseCallArgs([
    "--ns=list://a:1,b:2",
    "--echo",
    "x",
    "--get=k1",
    "--echo=y",
    "--get",
    "k2",
  ]);
  assertEquals([o.echo, o.get], [["x", "y"], ["k1", "k2"]]);
  assertEquals(parseCallArgs(["--port", "1", "--ping"]).echo, undefined);
  assertThrows(() => parseCallArgs(["--ns", "127.0.0.1:8000"]), Error, "naming-service URL");
  assertThrows(() => parseCallArgs(["--ns=list://a:1", "--max-retry", "17"]), Error, "max-retry");
  assertThrows(() => parseCallArgs(["--ping"]), Error, "--ns URL");
  assertThrows(
    () => parseCallArgs(["--ns=list://a:1", "--request-code=18446744073709551616"]),
    Error,
    "request-code",
  );
  assertThrows(
    () => parseCallArgs(["--ns=list://a:1", "--request-code=-1"]),
    Error,
    "request-code",
  );
  const spec = z.object({ port: z.string(), echo: z.array(z.string()) });
  assertEquals(splitArgs(["--port=1", "--port=2", "--echo=a"], spec), { port: "2", echo: ["a"] });
});

test("verbus serve and doctor: every option in both forms", () => {
  assertEquals(Object.keys(SERVE_SAMPLES).sort(), [...SERVE_OPTIONS].sort(), "a sample per option");
  const spaced = parseServeArgs(argv(SERVE_SAMPLES, "space"));
  assertEquals(parseServeArgs(argv(SERVE_SAMPLES, "eq")), spaced);
  assertEquals([spaced.port, spaced.urma, spaced["batch-budget"]], [8000, "sim", 32]);
  assertEquals(
    parseDoctorArgs(["--urma=sim", "--json"]),
    parseDoctorArgs(["--urma", "sim", "--json"]),
  );
  assertEquals(parseDoctorArgs(["--urma=sim"]).urma, "sim");
});

test("what is wrong is named: unknown option, missing value, a flag given a value", () => {
  const spec = z.object({
    port: z.string(),
    json: z.boolean(),
    put: z.tuple([z.string(), z.string()]),
  });
  assertThrows(() => splitArgs(["--nope=1"], spec), Error, "unknown option --nope");
  assertThrows(() => splitArgs(["--port"], spec), Error, "--port needs a value");
  assertThrows(() => splitArgs(["--json=yes"], spec), Error, "--json takes no value");
  assertThrows(() => splitArgs(["--put=k"], spec), Error, "--put takes two values");
  assertThrows(() => splitArgs(["port"], spec), Error, "unexpected argument");
  assertEquals(splitArgs(["--port=", "--json"], spec), { port: "", json: true });
  const e = assertThrows(() => parseServeArgs(["--port=99999"]), Error, "port");
  assert(/65535/.test(e.message), e.message);
});

test("verbus call: ops run in the order given, each as often as given", () => {
  const o = parseCallArgs([
    "--port=1",
    "--get",
    "k",
    "--put",
    "k",
    "v",
    "--echo",
    "a",
    "--echo=b",
    "--ping",
    "--ping",
    "--ping",
    "--bigput=b1",
    "10",
    "--bigput",
    "b2",
    "20",
    "--lifecycle-stale=false",
    "--stats",
  ]);
  assertEquals(o.ops.map((op) => [op.name, op.arg]), [
    ["get", "k"],
    ["put", ["k", "v"]],
    ["echo", "a"],
    ["echo", "b"],
    ["ping", true],
    ["ping", true],
    ["ping", true],
    ["bigput", ["b1", 10]],
    ["bigput", ["b2", 20]],
    ["stats", true],
  ]);
  assertEquals(parseCallArgs(["--port=1", "--json"]).ops, []);
  // every occurrence is checked, not only the last
  const e = assertThrows(
    () => parseCallArgs(["--port=1", "--lifecycle", "x", "--lifecycle", "2"]),
    Error,
    "--lifecycle",
  );
  assertEquals(e.message, `--lifecycle: expected a number, got "x"`);
});

test("every op of verbus call is in its help with its argument forms", () => {
  for (const op of CALL_OPS) {
    assert(new RegExp(`^  --${op}\\b`, "m").test(CALL_HELP), `--${op} in the help`);
  }
  const line = (op: string) => CALL_HELP.split("\n").find((l) => l.startsWith(`  --${op} `)) ?? "";
  assert(line("put").includes("--put K V"), line("put"));
  assert(line("bigput").includes("KEY BYTES"), line("bigput"));
  assert(line("large-get").includes("big:SIZE|KEY"), line("large-get"));
  assert(/big:64k/.test(CALL_HELP) && /keys starting\s+big: are reserved/.test(CALL_HELP));
  assert(CALL_HELP.includes("run in the order given, each as often as it is given"));
});

test("bad values in plain words, naming the option and what was given", () => {
  const msg = (f: () => unknown) => {
    try {
      f();
    } catch (e) {
      return (e as Error).message;
    }
    return "no error";
  };
  assertEquals(
    msg(() => parseCallArgs(["--port", "abc", "--ping"])),
    `--port: expected a number, got "abc"`,
  );
  assertEquals(
    msg(() => parseCallArgs(["--port=1", "--force-path", "sideways"])),
    `--force-path: expected one of eager, lazy, bulk, tcp, got "sideways"`,
  );
  assertEquals(
    msg(() => parseServeArgs(["--port=99999"])),
    `--port: expected at most 65535, got "99999"`,
  );
  assertEquals(msg(() => parseServeArgs([])), "--port is required");
  assertEquals(
    msg(() => parseBenchArgs(["--inflight", "1,0"])),
    `--inflight: "0": expected at least 1`,
  );
  assertEquals(
    msg(() => parseCallArgs(["--port=1", "--timeout-ms=1.5"])),
    `--timeout-ms: expected a whole number, got "1.5"`,
  );
  for (
    const m of [
      msg(() => parseCallArgs(["--port", "abc"])),
      msg(() => parseServeArgs(["--port=x"])),
    ]
  ) {
    assert(!/Invalid input|field |received NaN|option:/.test(m), `zod's wording: ${m}`);
  }
});

test("a mistyped option: did you mean the closest one", () => {
  const unknown = (args: string[]) =>
    assertThrows(() => parseCallArgs(["--port=1", ...args])).message;
  assertEquals(unknown(["--ecko", "x"]), "unknown option --ecko (did you mean --echo?)");
  assertEquals(
    unknown(["--timout-ms=5"]),
    "unknown option --timout-ms (did you mean --timeout-ms?)",
  );
  assertEquals(unknown(["--pign"]), "unknown option --pign (did you mean --ping?)");
  assertEquals(unknown(["--frobnicate"]), "unknown option --frobnicate");
  assertEquals(unknown(["-x"]), "unknown option -x");
  assertThrows(() => parseServeArgs(["--prot=1"]), Error, "did you mean --port?");
  assertEquals(
    [editDistance("ecko", "echo"), editDistance("pign", "ping"), editDistance("", "ab")],
    [1, 1, 2],
  );
  assertEquals(didYouMean("serv", ["doctor", "serve", "call"]), "serve");
  assertEquals(didYouMean("zzz", ["doctor", "serve", "call"]), undefined);
});

test("a value that looks like an option is a forgotten value; --name=VALUE gives it", () => {
  assertThrows(
    () => parseCallArgs(["--port=1", "--echo", "--ping"]),
    Error,
    "--echo needs a value",
  );
  assertEquals(parseCallArgs(["--port=1", "--echo=--ping"]).ops, [{ name: "echo", arg: "--ping" }]);
  assertThrows(
    () => parseCallArgs(["--port=1", "--put", "k", "--ping"]),
    Error,
    "--put takes two values",
  );
  assertThrows(
    () => parseCallArgs(["--port=1", "--ping", "--", "x"]),
    Error,
    "unexpected argument",
  );
});
