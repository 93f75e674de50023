/**
 * The test matrix's fabrics, from the descriptors: prints, one a line, the kinds whose shared
 * fabric suites (tests/fabric, `VERBUS_TEST_FABRIC=<kind>`) run `where` (host or vm), leaving out
 * the kinds named by `--except` (the host suite already runs shm, the default). scripts/test.sh
 * and tests/vm/run.sh read it, so a new fabric's descriptor puts it in the matrix.
 *
 *   deno run -A scripts/fabric_matrix.ts host|vm [--except shm,…]
 * @module
 */
import { FABRIC_DESCRIPTORS } from "../transport/registry.ts";

const g = globalThis as { Deno?: { args: string[] }; process?: { argv: string[] } };
const args = g.Deno ? g.Deno.args : g.process!.argv.slice(2);
const where = args[0];
if (where !== "host" && where !== "vm") {
  throw new Error(`scripts/fabric_matrix.ts: expected host or vm, not ${where ?? "nothing"}`);
}
const at = args.indexOf("--except");
const except = at >= 0 ? (args[at + 1] ?? "").split(",") : [];
for (const d of FABRIC_DESCRIPTORS) {
  const settings = d.testSettings?.({ libraryPaths: {} });
  if (settings?.where === where && !except.includes(d.kind)) console.log(d.kind);
}
