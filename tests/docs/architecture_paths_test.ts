/**
 * docs/ARCHITECTURE.md stays honest about the tree: every repository path it cites in backticks
 * (a file or folder under one of the top-level folders) exists, and a path written for every
 * fabric (`transport/<fabric>/descriptor.ts`) exists for each registered kind — so the
 * walkthroughs ("How to add a fabric", "The path of one call") fail here when a file they name
 * moves.
 */
import { existsSync, readFileSync } from "node:fs";
import { assert, assertEquals, test } from "../harness.ts";
import { FABRICS } from "../../transport/registry.ts";
import { REPO_ROOT } from "../util/proc.ts";

const TOP = ["rpc/", "transport/", "ffi/", "cli/", "tests/", "bench/", "c-helpers/", "util/"]
  .concat(["docs/", "examples/", "scripts/"]);
const DOC = readFileSync(`${REPO_ROOT}/docs/ARCHITECTURE.md`, "utf8");

/** The backticked tokens of `text` that are repository paths (placeholders expanded by the caller). */
function citedPaths(text: string): string[] {
  const out: string[] = [];
  for (const m of text.matchAll(/`([^`\s]+)`/g)) {
    const t = m[1];
    if (TOP.some((p) => t.startsWith(p)) && !/[*…]/.test(t)) out.push(t);
  }
  return out;
}

/** `path` with `<fabric>` / `<kind>` replaced by each registered kind (itself when it has none). */
function expand(path: string): string[] {
  return /<(fabric|kind)>/.test(path)
    ? FABRICS.map((k) => path.replace(/<(fabric|kind)>/g, k))
    : /</.test(path)
    ? []
    : [path];
}

test("every repository path docs/ARCHITECTURE.md cites exists", () => {
  const cited = citedPaths(DOC).flatMap(expand);
  assert(cited.length > 40, `only ${cited.length} paths found: is the pattern still right?`);
  const missing = [...new Set(cited)].filter((p) => !existsSync(`${REPO_ROOT}/${p}`));
  assertEquals(missing, [], "cited in docs/ARCHITECTURE.md but not in the tree");
});

test("the walkthroughs are there and cite the files a change touches", () => {
  for (const title of ["## How to add a fabric", "## The path of one call"]) {
    assert(DOC.includes(`\n${title}\n`), `docs/ARCHITECTURE.md has no section "${title}"`);
  }
  const addFabric = DOC.split("## How to add a fabric")[1].split("\n## ")[0];
  assert(
    citedPaths(addFabric).includes("transport/registry.ts"),
    `"How to add a fabric" names transport/registry.ts`,
  );
  assertEquals(expand("transport/<fabric>/descriptor.ts").length, FABRICS.length);
  const oneCall = DOC.split("## The path of one call")[1].split("\n## ")[0];
  for (
    const p of [
      "rpc/client/client.ts",
      "rpc/session/client/call_spec.ts",
      "rpc/session/client/client_session.ts",
    ]
  ) {
    assert(citedPaths(oneCall).includes(p), `"The path of one call" names ${p}`);
  }
});
