/** doctor's brpc-rdma line: usable only with the helper, libibverbs and an ACTIVE port with a GID. */
import { brpcRdmaCapability } from "../../transport/brpc_rdma/probe.ts";
import type { RdmaCapabilities } from "../../transport/verbs/probe.ts";
import { assert, assertEquals, test } from "../harness.ts";

const lib = { found: true, tried: [] };
const port = (state: string, gids: string[]) => ({
  port: 1,
  state,
  activeMtu: 1024,
  maxMtu: 4096,
  linkLayer: "Ethernet",
  lid: 0,
  gids: gids.map((gid, index) => ({ index, gid })),
});
const rdma = (ports: ReturnType<typeof port>[]) =>
  ({
    devices: [{ name: "rxe0", guid: "0", ports }],
    qpSettings: {},
  }) as unknown as RdmaCapabilities;
const v4 = "0000:0000:0000:0000:0000:ffff:0a4d:0001",
  zero = "fe80:0000:0000:0000:0000:0000:0000:0000";

test("brpc-rdma capability: the last GID with an interface id on an ACTIVE port", () => {
  const ok = brpcRdmaCapability(
    true,
    lib,
    rdma([port("ACTIVE", ["fe80:0000:0000:0000:0205:06ff:fe07:0809", v4, zero])]),
  );
  assertEquals(ok, { usable: true, where: `rxe0 port 1, gid[1] ${v4}` });
  assert(!brpcRdmaCapability(true, lib, rdma([port("DOWN", [v4])])).usable);
  assert(
    brpcRdmaCapability(true, lib, rdma([port("ACTIVE", [zero])])).reason!.includes("usable GID"),
  );
  assert(brpcRdmaCapability(false, lib, rdma([])).reason!.includes("helper"));
  assert(
    brpcRdmaCapability(true, { found: false, tried: [] }, rdma([])).reason!.includes("libibverbs"),
  );
  const none = brpcRdmaCapability(
    true,
    lib,
    { devices: [], reason: "no RDMA support" } as unknown as RdmaCapabilities,
  );
  assertEquals(none, { usable: false, reason: "no RDMA support" });
});
