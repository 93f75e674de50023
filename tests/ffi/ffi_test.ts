/**
 * The FFI layer on the host (no RDMA needed): backend memory access, callbacks, the loader's
 * env/bundled/system order and its error listing every path, the helper's layout check.
 */
import { spawnSync } from "node:child_process";
import { rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { assert, assertEquals, assertThrows, test } from "../harness.ts";
import { LayoutMismatchError } from "../../errors.ts";
import { ffi } from "../../ffi/ffi.ts";
import { ALL_HELPER_LAYOUTS, loadHelper } from "../../ffi/helper.ts";
import { checkLayouts, layoutMismatches, parseLayoutTable } from "../../ffi/layouts/layout.ts";
import { IBV_WC } from "../../ffi/layouts/verbs.ts";
import { loadLibrary, probeLibrary } from "../../ffi/loader.ts";
import { RUNTIME } from "../../ffi/runtime.ts";
import { cstringArg } from "../../ffi/strings.ts";
import { HELPER_SPEC } from "../../ffi/symbols/helper.ts";

function setEnv(name: string, value: string | undefined): void {
  // deno-lint-ignore no-explicit-any
  const g = globalThis as any;
  if (RUNTIME === "deno") {
    value === undefined ? g.Deno.env.delete(name) : g.Deno.env.set(name, value);
  } else if (value === undefined) delete g.process.env[name];
  else g.process.env[name] = value;
}

test("views over native memory are zero-copy; reads see writes; addresses round-trip", async () => {
  const f = await ffi();
  const buf = new Uint8Array(64);
  const p = f.ptrOf(buf);
  const view = new Uint8Array(f.view(p, 64));
  view[5] = 0xab;
  assertEquals(buf[5], 0xab, "write through the view lands in the typed array");
  new DataView(buf.buffer).setUint32(8, 0xdeadbeef, true);
  new DataView(buf.buffer).setBigUint64(16, 0x1122334455667788n, true);
  assertEquals(f.readU32(p, 8), 0xdeadbeef);
  assertEquals(f.readU64(p, 16), 0x1122334455667788n);
  assertEquals(f.readU8(p, 5), 0xab);
  const addr = f.address(p);
  assert(addr > 0n, "address is non-zero");
  assertEquals(f.address(f.fromAddress(addr)), addr, "fromAddress ∘ address");
  assertEquals(f.fromAddress(0), null, "address 0 is NULL");
  buf.set(cstringArg("verbus"), 32);
  assertEquals(f.cstring(p, 32), "verbus");
  assertThrows(() => f.ptrOf(new Uint8Array(0)), RangeError);
});

test("callbacks: libc qsort calls a JavaScript comparator", async () => {
  const f = await ffi();
  const lib = await loadLibrary({
    name: "libc",
    sonames: ["libc.so.6"],
    table: { qsort: { args: ["buffer", "usize", "usize", "pointer"], result: "void" } } as const,
  });
  let calls = 0;
  const cb = f.callback(
    { args: ["pointer", "pointer"], result: "i32" },
    ((a: never, b: never) => {
      calls++;
      return f.readI32(a, 0) - f.readI32(b, 0);
    }) as (...args: never[]) => unknown,
  );
  const data = new Int32Array([5, -3, 9, 0, 2, 7]);
  lib.symbols.qsort(data, data.length, 4, cb.ptr);
  assertEquals(Array.from(data), [-3, 0, 2, 5, 7, 9]);
  assert(calls > 0, "comparator was called");
  cb.close();
  cb.close(); // safe twice
  lib.close();
  lib.close();
});

test("loader: env override first, then bundled, then sonames; failure lists every path and why", () => {
  // In a process of its own (fixtures/probe_liburma.ts): a suite that already loaded the
  // simulated liburma would find it by its SONAME.
  const fixture = new URL("./fixtures/probe_liburma.ts", import.meta.url).pathname;
  // deno-lint-ignore no-explicit-any
  const g = globalThis as any;
  const [cmd, args] = RUNTIME === "deno"
    ? [g.Deno.execPath(), ["run", "-A", fixture]]
    : [g.process.execPath, [fixture]];
  const run = spawnSync(cmd, args, {
    encoding: "utf8",
    timeout: 60_000,
    env: { ...g.process.env, VERBUS_LIBURMA: "/nonexistent/liburma.so.0" },
  });
  assertEquals(run.status, 0, `fixture failed: ${run.stderr}`);
  const r = JSON.parse(run.stdout.trim().split("\n").pop()!);
  assert(!r.ok, "no liburma on this host");
  assert(r.typed, "typed error");
  assertEquals(r.code, "LIBRARY_NOT_FOUND");
  assertEquals(r.attempts[0], {
    source: "env",
    path: "/nonexistent/liburma.so.0",
    reason: "file not found",
  });
  assertEquals(
    r.attempts.filter((a: { source: string }) => a.source === "system").map((a: { path: string }) =>
      a.path
    ),
    ["liburma.so.0", "/usr/lib64/liburma.so.0"],
  );
  assert(
    r.message.includes("no liburma found: tried") &&
      r.message.includes("/nonexistent/liburma.so.0"),
    r.message,
  );
});

test("loader: a broken env override is recorded with dlopen's reason, and the bundled helper is used", async () => {
  const bogus = join(tmpdir(), `verbus-bogus-${Date.now()}.so`);
  writeFileSync(bogus, "not an ELF file");
  setEnv("VERBUS_HELPER", bogus);
  try {
    const r = await probeLibrary(HELPER_SPEC);
    assert(r.ok, "falls through to the bundled build");
    assertEquals(r.library.source, "bundled");
    assertEquals(r.library.attempts[0].source, "env");
    assertEquals(r.library.attempts[0].path, bogus);
    assert(
      r.library.attempts[0].reason.length > 0 && r.library.attempts[0].reason !== "file not found",
      r.library.attempts[0].reason,
    );
    r.library.close();
  } finally {
    setEnv("VERBUS_HELPER", undefined);
    rmSync(bogus, { force: true });
  }
});

test("helper: every TypeScript layout matches the compiler's table", async () => {
  const h = await loadHelper();
  assertEquals(h.version, "verbus-helper 1");
  assertEquals(layoutMismatches(ALL_HELPER_LAYOUTS, new Map(h.layouts)), []);
  assertEquals(h.layouts.get("ibv_wc"), { offset: 0, size: 48 });
});

test("helper: a wrong offset or size is refused, naming the field", async () => {
  const h = await loadHelper();
  const table = new Map(h.layouts);
  const wrong = { ...IBV_WC, status: 12 };
  const e = assertThrows(() => checkLayouts([wrong], table), LayoutMismatchError);
  assert(e.message.includes("offsetof(ibv_wc, status): TypeScript says 12, C says 8"), e.message);
  const bigger = { ...IBV_WC, $size: 56 };
  assert(
    layoutMismatches([bigger], table)[0].includes("sizeof(struct ibv_wc)"),
    "sizeof mismatch named",
  );
  const unknown = { $struct: "ibv_nothing", $size: 4 } as const;
  assert(
    layoutMismatches([unknown], table)[0].includes("not in the helper's layout table"),
    "missing struct named",
  );
  assertEquals(parseLayoutTable("a 4\na.x 0 4\n").get("a.x"), { offset: 0, size: 4 });
});
