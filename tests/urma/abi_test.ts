/**
 * The URMA layout constants (ffi/layouts/urma.ts, UMDK 25.12 – 26.06) against the sizeof /
 * offsetof table of a C program compiled with the simulator's header (build/urma_sim/abi_check).
 */
import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { assert, assertEquals, test } from "../harness.ts";
import { layoutMismatches, parseLayoutTable } from "../../ffi/layouts/layout.ts";
import { URMA_LAYOUTS, URMA_LEADING, URMA_SGE } from "../../ffi/layouts/urma.ts";
import { classifyUmdkVersion } from "../../transport/urma/urma_lib.ts";
import { ABI_CHECK_PATH } from "./util.ts";

const SKIP = existsSync(ABI_CHECK_PATH) ? false : `${ABI_CHECK_PATH} is not built (run make)`;

function table() {
  return parseLayoutTable(execFileSync(ABI_CHECK_PATH, { encoding: "utf8" }));
}

test("every URMA struct size, field offset and flag bit matches abi_check", () => {
  const t = table();
  assertEquals(layoutMismatches(URMA_LAYOUTS, t), []);
  const bad: string[] = [];
  for (const l of URMA_LEADING) {
    for (const [field, offset] of Object.entries(l)) {
      if (field.startsWith("$")) continue;
      const e = t.get(`${l.$struct}.${field}`);
      if (!e || e.offset !== offset) {
        bad.push(`${l.$struct}.${field}: TS ${offset}, C ${e?.offset}`);
      }
    }
  }
  assertEquals(bad, []);
  assert(URMA_LAYOUTS.length >= 20, "every URMA struct verbus uses is covered");
}, { skip: SKIP });

test("a wrong URMA offset is reported, naming the field (the check can fail)", () => {
  const t = table();
  const wrong24 = { ...URMA_SGE, $size: 24, user_tseg: 20 }; // what a 24.12-style layout would say
  const bad = layoutMismatches([wrong24], t);
  assertEquals(bad.length, 2, bad.join("\n"));
  assert(bad.some((b) => b.includes("sizeof(struct urma_sge_t)")), bad.join("\n"));
  assert(bad.some((b) => b.includes("urma_sge_t, user_tseg")), bad.join("\n"));
}, { skip: SKIP });

test("UMDK release check: 25.12 – 26.06 accepted, 24.12 LTS and unknown releases refused", () => {
  assert(
    classifyUmdkVersion("25.12.0").ok && classifyUmdkVersion("26.06").ok &&
      classifyUmdkVersion("26.03.1-2").ok,
    "supported",
  );
  const lts = classifyUmdkVersion("24.12.0");
  assert(
    !lts.ok && lts.reason.includes("24.12") && lts.reason.includes("urma_sge_t 24 B"),
    JSON.stringify(lts),
  );
  const future = classifyUmdkVersion("26.09.0");
  assert(
    !future.ok && future.reason.includes("not a release verbus knows"),
    JSON.stringify(future),
  );
  assert(!classifyUmdkVersion("1.3.0").ok, "not a UMDK release string");
});
