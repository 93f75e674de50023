/**
 * Selecting liburma: never the simulator by accident (VERBUS_LIBURMA unset → "no liburma found:
 * tried ..."), the simulator when named (VERBUS_LIBURMA or an explicit path), reported as simulated.
 */
import { assert, assertEquals, assertRejects, test } from "../harness.ts";
import { LibraryLoadError } from "../../errors.ts";
import { listUrmaDevices, UrmaContext } from "../../transport/urma/context.ts";
import { UrmaStatusError } from "../../transport/urma/errors.ts";
import { loadUrma } from "../../transport/urma/urma_lib.ts";
import { SIM_ABI, SIM_PATH, SKIP_NO_SIM } from "./util.ts";
import { getEnvRaw, setEnv } from "./sim_path.ts";

test("VERBUS_LIBURMA unset: the simulator is not picked up; the error lists every path tried", async () => {
  const saved = getEnvRaw("VERBUS_LIBURMA");
  setEnv("VERBUS_LIBURMA", undefined);
  try {
    const e = await assertRejects(() => loadUrma(), LibraryLoadError);
    assert(e.message.startsWith("no liburma found: tried"), e.message);
    assert(!e.message.includes("urma_sim"), `the simulator must not be a candidate:\n${e.message}`);
    assertEquals(e.attempts.map((a) => [a.source, a.path]), [["system", "liburma.so.0"], [
      "system",
      "/usr/lib64/liburma.so.0",
    ]]);
  } finally {
    setEnv("VERBUS_LIBURMA", saved);
  }
});

test(
  'even with the simulator loaded in this process, dlopen("liburma.so.0") resolving to it is refused',
  async () => {
    await loadUrma(SIM_PATH); // loaded explicitly: its soname liburma.so.0 now resolves to it
    const saved = getEnvRaw("VERBUS_LIBURMA");
    setEnv("VERBUS_LIBURMA", undefined);
    try {
      const e = await assertRejects(() => loadUrma(), LibraryLoadError);
      assert(e.message.startsWith("no liburma found: tried"), e.message);
      assert(e.attempts[0].reason.includes("simulated liburma already loaded"), e.message);
    } finally {
      setEnv("VERBUS_LIBURMA", saved);
    }
  },
  { skip: SKIP_NO_SIM },
);

test(
  "VERBUS_LIBURMA naming the simulator loads it, marked simulated, its ABI chosen by its header table",
  async () => {
    const saved = getEnvRaw("VERBUS_LIBURMA");
    setEnv("VERBUS_LIBURMA", SIM_PATH);
    try {
      const u = await loadUrma();
      assert(u.simulated, "simulated");
      assertEquals([u.version, u.abi, u.path], [`${SIM_ABI}-sim`, SIM_ABI, SIM_PATH]);
      assert(u.abiEvidence.startsWith("header layout table "), u.abiEvidence);
      assertEquals(u.layouts.name, SIM_ABI);
      assertEquals(listUrmaDevices(u), ["sim_ub0"]);
      const ctx = UrmaContext.open(u);
      try {
        assert(ctx.kind.includes("(simulated)"), ctx.kind);
        const attr = ctx.query();
        assertEquals([attr.maxJfcDepth, attr.maxRecvSge], [65536, 4]);
        assertEquals(ctx.eid.length, 16);
      } finally {
        ctx.close();
      }
    } finally {
      setEnv("VERBUS_LIBURMA", saved);
    }
  },
  { skip: SKIP_NO_SIM },
);

test("bad input is an error with its URMA name, never a crash", async () => {
  const u = await loadUrma(SIM_PATH);
  const ctx = UrmaContext.open(u);
  try {
    // a JFC deeper than the device allows
    const e = (() => {
      try {
        ctx.createJfc(1 << 20);
      } catch (x) {
        return x as UrmaStatusError;
      }
      throw new Error("expected a failure");
    })();
    assert(
      e instanceof UrmaStatusError && e.statusName === "URMA_EINVAL" && e.message.includes("depth"),
      e.message,
    );
    // forged pointers are refused by the simulator's handle table
    const s = u.lib.symbols;
    assertEquals(s.urma_delete_jetty(u.ffi.fromAddress(0x1000)), 22);
    assertEquals(s.urma_poll_jfc(u.ffi.fromAddress(0xdead0), 4, new Uint8Array(320)), -1);
    assertEquals(s.urma_post_jetty_send_wr(null, new Uint8Array(80), null), 22);
    assertEquals(s.urma_init(new Uint8Array(16)), 17, "urma_init twice → URMA_EEXIST");
    // a context with children refuses to go; close() closes children first
    const jfc = ctx.createJfc(4);
    assertEquals(s.urma_delete_context(ctx.handle), 0x1000, "URMA_FAIL: objects still open");
    ctx.close();
    assert(jfc.closed, "child closed first");
  } finally {
    ctx.close();
  }
}, { skip: SKIP_NO_SIM });
