/**
 * The host summary `verbus doctor` prints (`transport/capabilities.ts`), gathered from each
 * fabric's own probe: its shape, and that each fabric's verdict lands in `fabrics`.
 * @module
 */
import { existsSync, readdirSync } from "node:fs";
import { pid } from "node:process";
import { assert, assertEquals, test } from "../harness.ts";
import { RUNTIME } from "../../util/runtime.ts";
import { probeHost } from "../../transport/capabilities.ts";
import { hostBootId } from "../../transport/host.ts";
import { probeShm } from "../../transport/shm/probe.ts";
import { probeVerbs } from "../../transport/verbs/probe.ts";
import { probeUrma } from "../../transport/urma/probe.ts";
import { SIM_ABI, SIM_PATH, SKIP_NO_SIM } from "../urma/util.ts";

test("probeHost: runtime, helper, the three libraries, devices, shm and the fabrics list", async () => {
  const c = await probeHost();
  assertEquals(c.runtime.name, RUNTIME);
  assert(c.helper.found && c.helper.layoutOk, `the helper loads: ${c.helper.error}`);
  assertEquals(Object.keys(c.libraries).sort(), ["libibverbs", "librdmacm", "liburma"]);
  for (const lib of Object.values(c.libraries)) {
    assert(lib.found ? typeof lib.path === "string" : typeof lib.error === "string");
    assert(Array.isArray(lib.tried));
  }
  assert(Array.isArray(c.rdma.devices));
  assertEquals(typeof c.rdma.qpSettings.timeout, "number");
  assertEquals(typeof c.rdma.qpSettings.maxInline, "number");
  assert(Array.isArray(c.urma.devices) && typeof c.urma.simulated === "boolean");
  assertEquals(c.shm, { usable: true });
  assertEquals(c.fabrics.at(-1), "tcp");
  assert(c.fabrics.includes("shm"), `shm is usable here: ${c.fabrics}`);
});

test("each fabric's probe feeds the summary: verbs, urma and shm verdicts", async () => {
  const [c, verbs, urma, shm] = await Promise.all([
    probeHost(),
    probeVerbs(true),
    probeUrma(),
    probeShm(),
  ]);
  assertEquals(c.fabrics.includes("verbs"), verbs.usable);
  assertEquals(c.fabrics.includes("urma"), urma.usable);
  assertEquals(c.fabrics.includes("shm"), shm.usable);
  assertEquals(c.libraries.librdmacm.found, verbs.librdmacm.found);
  assertEquals(c.libraries.liburma.found, urma.liburma.found);
  const order = c.fabrics.map((f) => ["verbs", "urma", "shm", "tcp"].indexOf(f));
  assertEquals(order, [...order].sort((a, b) => a - b), "best first");
});

test(
  "probeHost with the simulated liburma lists URMA as usable and says it is simulated",
  async () => {
    const c = await probeHost(SIM_PATH);
    assert(c.libraries.liburma.found, `found: ${c.libraries.liburma.error}`);
    assertEquals(c.urma.simulated, true);
    assert(c.urma.devices.length > 0 && c.urma.devices.every((d) => d.includes("simulated")));
    assert(c.fabrics.includes("urma"));
    assertEquals(c.urma.abi?.name, SIM_ABI);
    assert(c.urma.abi!.evidence.includes("header layout table"), c.urma.abi!.evidence);
  },
  { skip: SKIP_NO_SIM },
);

test("the shm probe leaves no object behind; the boot id is this host's", async () => {
  const mine = () => readdirSync("/dev/shm").filter((n) => n.startsWith(`verbus-doctor-${pid}-`));
  assertEquals(await probeShm(), { usable: true });
  assertEquals(mine(), []);
  const id = hostBootId();
  if (existsSync("/proc/sys/kernel/random/boot_id")) assert(/^[0-9a-f-]{36}$/.test(id), id);
});
