/**
 * The layering of the source tree, checked on every run (Deno and Bun): `ffi/` ← `transport/` ←
 * `rpc/` ← (`mod.ts`, `cli/`, `examples/`); `util/` and `errors.ts` may be imported by anyone and
 * import nothing above them; a fabric (`transport/shm|verbs|urma/`) never imports another; `cli/`
 * and `examples/` use the public entry points; no source files import each other at load time (an
 * import cycle, told as a path `a → b → c → a`); no source file passes 550 lines (past 400 it is
 * named in a warning, as is a cycle closed only by type-only or lazy imports).
 *
 * The checker ({@link checkLayering}) is a pure function over `{ file → { imports, lines } }`, so
 * each rule is proved able to fail on a synthetic graph with one violation per rule; the same
 * rules then run, one test case each, over the real tree read from disk (every non-test `.ts`
 * file of ffi/, transport/, rpc/, util/, cli/, examples/, plus errors.ts and mod.ts). A failure
 * names the file and the import (or the line count, or the cycle). The import parser and the
 * cycle finder live in tests/util/import_graph.ts and tests/util/import_cycles.ts.
 * @module
 */
import { dirname, resolve } from "node:path";
import { assert, assertEquals, test } from "./harness.ts";
import {
  parseImportEdges,
  parseImports,
  readTree,
  type SourceFacts,
  type SourceGraph,
} from "./util/import_graph.ts";
import { findCycles, formatCycle } from "./util/import_cycles.ts";
import { FABRICS } from "../transport/registry.ts";

export { codeOnly, parseImports, type SourceFacts, type SourceGraph } from "./util/import_graph.ts";
/** One broken rule: which rule, which file, and what it imports (absent for the size rule). */
export interface Violation {
  rule: RuleId;
  file: string;
  import?: string;
  message: string;
}

/**
 * The largest a non-test source file may be. Lines count as `wc -l` counts them, comments and
 * blank lines included: a file is split along its concerns, never squeezed by trimming comments.
 */
export const MAX_SOURCE_LINES = 550;
/** Past this many lines a source file is named in a warning: time to look for a second concern. */
export const WARN_SOURCE_LINES = 400;
/**
 * Load-time import cycles let through, each with the reason; an entry names the cycle's files.
 * The others found were fixed by moving the shared type or constant to the module that owns it.
 * An entry belongs here only while its files are being changed by other work.
 */
export const ALLOWED_CYCLES: readonly { members: readonly string[]; why: string }[] = [
  {
    // rpc_meta.ts re-exports its encoder and decoder, which import the extension field numbers
    // (FIELD_TRAILERS, FIELD_ERROR_DETAILS) back from it. rpc/protocol/ is being changed by the
    // metadata and streams work; when it is quiet the field numbers move to a leaf the three
    // share (or the re-exports go) and this entry with them.
    members: [
      "rpc/protocol/rpc_meta.ts",
      "rpc/protocol/rpc_meta_decode.ts",
      "rpc/protocol/rpc_meta_encode.ts",
    ],
    why: "files being changed by the metadata and streams work",
  },
];
/** A fabric's folder is named by its kind (the registry's list: no second list here). */
const FABRIC_DIRS: readonly string[] = FABRICS;
const FABRIC_GLOB = `transport/${FABRIC_DIRS.join("|")}/`;
/** cli/bun_preset.ts links the Bun backends statically for `bun build --compile` (see its header). */
const BUN_PRESET = "cli/bun_preset.ts";
const BUN_PRESET_IMPORTS = ["ffi/bun.ts", "transport/tcp/bun.ts"];

const isExternal = (spec: string) => !spec.endsWith(".ts") || !/^[a-z_]+(\/|\.ts$)/.test(spec);
const under = (path: string, dir: string) => path.startsWith(`${dir}/`);
const fabricOf = (path: string) =>
  FABRIC_DIRS.find((f) => under(path, `transport/${f}`)) as string | undefined;
const isFabric = (path: string) => fabricOf(path) !== undefined;
const isShared = (path: string) => path === "errors.ts" || under(path, "util");

/** The rules, each a predicate saying why `file` must not import `target` (undefined: allowed). */
const RULES = {
  "rpc-below": {
    title: `rpc/ imports neither ffi/ nor a fabric (${FABRIC_GLOB})`,
    why: (file: string, target: string) =>
      under(file, "rpc") && (under(target, "ffi") || isFabric(target))
        ? `rpc/ must not import ffi/ or ${FABRIC_GLOB}`
        : undefined,
  },
  "rpc-not-above": {
    title: "rpc/ imports nothing above it (examples/, cli/, mod.ts)",
    why: (file: string, target: string) =>
      under(file, "rpc") &&
        (under(target, "examples") || under(target, "cli") || target === "mod.ts")
        ? "rpc/ must not import examples/, cli/ or mod.ts"
        : undefined,
  },
  "transport-below": {
    title: "transport/ imports nothing above it (rpc/, examples/, cli/, mod.ts)",
    why: (file: string, target: string) =>
      under(file, "transport") &&
        (under(target, "rpc") || under(target, "examples") || under(target, "cli") ||
          target === "mod.ts")
        ? "transport/ must not import rpc/, examples/, cli/ or mod.ts"
        : undefined,
  },
  "fabric-isolation": {
    title: `a fabric (${FABRIC_GLOB}) imports no other fabric`,
    why: (file: string, target: string) => {
      const from = fabricOf(file), to = fabricOf(target);
      return from && to && from !== to
        ? `a fabric must not import another fabric (${from} → ${to})`
        : undefined;
    },
  },
  "ffi-bottom": {
    title: "ffi/ imports nothing above it (transport/, rpc/, examples/, cli/, mod.ts)",
    why: (file: string, target: string) =>
      under(file, "ffi") && !under(target, "ffi") && !isShared(target)
        ? "ffi/ may import only ffi/, util/ and errors.ts"
        : undefined,
  },
  "shared-leaf": {
    title: "util/ and errors.ts import only util/, errors.ts and packages",
    why: (file: string, target: string) =>
      isShared(file) && !isShared(target)
        ? "util/ and errors.ts may import only util/, errors.ts and packages"
        : undefined,
  },
  "cli-public-api": {
    title: "cli/ imports only mod.ts, examples/demo/mod.ts, cli/, util/ and errors.ts",
    why: (file: string, target: string) => {
      if (!under(file, "cli")) return undefined;
      if (file === BUN_PRESET && BUN_PRESET_IMPORTS.includes(target)) return undefined;
      return target === "mod.ts" || target === "examples/demo/mod.ts" || under(target, "cli") ||
          isShared(target)
        ? undefined
        : "cli/ must use mod.ts and examples/demo/mod.ts, not internals";
    },
  },
  "examples-public-api": {
    title: "examples/ import mod.ts, not rpc/, transport/, ffi/ or cli/ internals",
    why: (file: string, target: string) =>
      under(file, "examples") &&
        (under(target, "rpc") || under(target, "transport") || under(target, "ffi") ||
          under(target, "cli"))
        ? "examples/ must use mod.ts, not rpc/, transport/ or ffi/ internals"
        : undefined,
  },
  "import-cycle": {
    title: "no source files import each other at load time (no import cycle)",
    why: () => undefined,
  },
  "file-size": { title: `no source file passes ${MAX_SOURCE_LINES} lines`, why: () => undefined },
} satisfies Record<string, Rule>;
/** A layering rule: its title, and why `file` must not import `target` (undefined: allowed). */
interface Rule {
  title: string;
  why(file: string, target: string): string | undefined;
}
/** The name of one layering rule. */
export type RuleId = keyof typeof RULES;
const RULE_IDS = Object.keys(RULES) as RuleId[];

/**
 * Every violation of every rule in `graph` (pure: no I/O), in file order, then the load-time
 * import cycles not in `allowed`, each named by its first file and told as a path.
 */
export function checkLayering(
  graph: SourceGraph,
  allowed: readonly { members: readonly string[] }[] = ALLOWED_CYCLES,
): Violation[] {
  const out: Violation[] = [];
  for (const file of Object.keys(graph).sort()) {
    const { imports, lines } = graph[file];
    for (const target of imports) {
      if (isExternal(target)) continue;
      for (const rule of RULE_IDS) {
        const why = (RULES[rule] as Rule).why(file, target);
        if (why) {
          out.push({ rule, file, import: target, message: `${file} imports ${target}: ${why}` });
        }
      }
    }
    if (lines > MAX_SOURCE_LINES) {
      out.push({
        rule: "file-size",
        file,
        message: `${file} has ${lines} lines (more than ${MAX_SOURCE_LINES}): split it along its ` +
          "concerns",
      });
    }
  }
  const same = (a: readonly string[], b: readonly string[]) =>
    a.length === b.length && [...a].sort().every((f, i) => f === [...b].sort()[i]);
  for (const { path, members } of findCycles(graph)) {
    if (allowed.some((a) => same(a.members, members))) continue;
    out.push({
      rule: "import-cycle",
      file: path[0],
      import: path[1],
      message: `${path[0]}: import cycle ${formatCycle(path)}` +
        (members.length > path.length - 1 ? ` (${members.length} files in all)` : "") +
        ": move what they share to the module that owns it",
    });
  }
  return out;
}

/**
 * What deserves a look but fails nothing: files past {@link WARN_SOURCE_LINES} lines, and
 * cycles that close only through type-only or lazy (`import("…")`) imports, which load no module
 * at load time.
 */
export function layeringWarnings(graph: SourceGraph): string[] {
  const out: string[] = [];
  for (const file of Object.keys(graph).sort()) {
    const { lines } = graph[file];
    if (lines > WARN_SOURCE_LINES && lines <= MAX_SOURCE_LINES) {
      out.push(`${file} has ${lines} lines (more than ${WARN_SOURCE_LINES})`);
    }
  }
  const atLoad = new Set(findCycles(graph).map((c) => c.members.join(" ")));
  for (const { path, members } of findCycles(graph, (f) => f.imports)) {
    if (atLoad.has(members.join(" "))) continue;
    out.push(
      `type-only or lazy import cycle ${formatCycle(path)}` +
        (members.length > path.length - 1 ? ` (${members.length} files in all)` : ""),
    );
  }
  return out;
}

const REPO = resolve(dirname(new URL(import.meta.url).pathname), "..");
const SOURCE_DIRS = ["ffi", "transport", "rpc", "util", "cli", "examples"];
const SOURCE_FILES = ["errors.ts", "mod.ts"];

// ---- the checker can fail: one synthetic violation per rule ----

const CLEAN: SourceGraph = {
  "ffi/loader.ts": {
    imports: ["node:fs", "ffi/runtime.ts", "errors.ts", "util/runtime.ts"],
    lines: 10,
  },
  "util/options.ts": { imports: ["zod", "errors.ts", "util/hex.ts"], lines: 10 },
  "errors.ts": { imports: [], lines: 10 },
  "transport/registry.ts": { imports: ["zod", "transport/provider.ts"], lines: 10 },
  "transport/shm/provider.ts": { imports: ["transport/proof.ts", "ffi/libc.ts"], lines: 10 },
  "transport/tcp/tcp.ts": { imports: ["errors.ts"], lines: 10 },
  "rpc/client/client.ts": {
    imports: ["transport/registry.ts", "transport/tcp/mod.ts"],
    lines: 400,
  },
  "cli/call.ts": { imports: ["mod.ts", "examples/demo/mod.ts", "cli/options.ts"], lines: 10 },
  "cli/options.ts": { imports: ["util/options.ts", "zod"], lines: 10 },
  "cli/main.ts": { imports: ["cli/call.ts", "cli/options.ts"], lines: 10 },
  [BUN_PRESET]: { imports: BUN_PRESET_IMPORTS, lines: 10 },
  "examples/demo/service.ts": {
    imports: ["mod.ts", "errors.ts", "examples/demo/codec.ts"],
    lines: 10,
  },
  "mod.ts": {
    imports: ["rpc/client/client.ts", "transport/registry.ts", "ffi/loader.ts"],
    lines: 10,
  },
};

/** One graph with exactly one violation of each rule (file, import). */
const BROKEN: Record<RuleId, [string, SourceFacts, string?]> = {
  "rpc-below": [
    "rpc/session/engine/progress.ts",
    { imports: ["transport/verbs/qp.ts"], lines: 1 },
    "transport/verbs/qp.ts",
  ],
  "rpc-not-above": ["rpc/session/client/client_session.ts", {
    imports: ["examples/demo/service.ts"],
    lines: 1,
  }, "examples/demo/service.ts"],
  "transport-below": ["transport/verbs/provider.ts", {
    imports: ["rpc/session/handshake/hello.ts"],
    lines: 1,
  }, "rpc/session/handshake/hello.ts"],
  "fabric-isolation": ["transport/urma/endpoint.ts", {
    imports: ["transport/verbs/send_queue.ts"],
    lines: 1,
  }, "transport/verbs/send_queue.ts"],
  "ffi-bottom": ["ffi/helper.ts", { imports: ["transport/cpu.ts"], lines: 1 }, "transport/cpu.ts"],
  "shared-leaf": ["util/runtime.ts", { imports: ["ffi/runtime.ts"], lines: 1 }, "ffi/runtime.ts"],
  "cli-public-api": [
    "cli/doctor.ts",
    { imports: ["transport/capabilities.ts"], lines: 1 },
    "transport/capabilities.ts",
  ],
  "examples-public-api": [
    "examples/demo/client.ts",
    { imports: ["rpc/errors.ts"], lines: 1 },
    "rpc/errors.ts",
  ],
  "import-cycle": [
    "cli/call.ts",
    { imports: ["mod.ts", "cli/options.ts", "cli/main.ts"], lines: 10 },
    "cli/main.ts",
  ],
  "file-size": ["rpc/session/client/client_session.ts", { imports: [], lines: 664 }],
};

test("layering checker: a clean graph passes", () => {
  assertEquals(checkLayering(CLEAN).map((v) => v.message), []);
});

for (const rule of RULE_IDS) {
  test(`layering checker: the rule "${RULES[rule].title}" fails naming the file`, () => {
    const [file, facts, target] = BROKEN[rule];
    const found = checkLayering({ ...CLEAN, [file]: facts });
    assertEquals(found.map((v) => [v.rule, v.file, v.import]), [[rule, file, target]]);
    assert(found[0].message.startsWith(file), found[0].message);
    if (target) assert(found[0].message.includes(target), found[0].message);
    else assert(found[0].message.includes(String(facts.lines)), found[0].message);
  });
}

test("layering checker: the cli/bun_preset.ts exception is that file and those imports only", () => {
  const found = checkLayering({
    ...CLEAN,
    [BUN_PRESET]: { imports: [...BUN_PRESET_IMPORTS, "ffi/helper.ts"], lines: 1 },
    "cli/serve.ts": { imports: ["ffi/bun.ts"], lines: 1 },
  });
  assertEquals(found.map((v) => [v.file, v.import]), [
    [BUN_PRESET, "ffi/helper.ts"],
    ["cli/serve.ts", "ffi/bun.ts"],
  ]);
});

test("layering parser: static, type, side-effect, re-export and literal dynamic imports", () => {
  const source = [
    "/** ```ts",
    ' * import { connect } from "./mod.ts";',
    " * ``` */",
    'import { z } from "zod";',
    "import {",
    "  type A,",
    "  b as c,",
    '} from "../transport/fabric.ts";',
    'import type { D } from "./d.ts";',
    'import * as ns from "../ffi/ffi.ts";',
    'import "./side.ts";',
    '// import { gone } from "../rpc/gone.ts";',
    'export { e } from "./e.ts";',
    'export type { F } from "../util/f.ts";',
    'export * from "./all.ts";',
    'const help = `x ${"y"} import { h } from "./not_code.ts"`;',
    "const re = /[\"']\\/\\//; // a regex with quotes and slashes",
    'const lazy = () => import("./shm/provider.ts");',
    "const dyn = (f: string) => import(f);",
    'const s = "// not a comment";',
    'export const last = await import("node:fs");',
  ].join("\n");
  assertEquals(parseImports("transport/registry.ts", source), [
    "zod",
    "transport/fabric.ts",
    "transport/d.ts",
    "ffi/ffi.ts",
    "transport/side.ts",
    "transport/e.ts",
    "util/f.ts",
    "transport/all.ts",
    "transport/shm/provider.ts",
    "node:fs",
  ]);
});

test("layering checker: a cycle is told as a path, a → b → c → a, named by its first file", () => {
  const graph: SourceGraph = {
    ...CLEAN,
    "transport/a.ts": { imports: ["transport/b.ts"], lines: 1 },
    "transport/b.ts": { imports: ["transport/c.ts", "errors.ts"], lines: 1 },
    "transport/c.ts": { imports: ["transport/a.ts"], lines: 1 },
  };
  assertEquals(checkLayering(graph).map((v) => v.message), [
    "transport/a.ts: import cycle transport/a.ts → transport/b.ts → transport/c.ts → " +
    "transport/a.ts: move what they share to the module that owns it",
  ]);
  const allowed = [{ members: ["transport/c.ts", "transport/b.ts", "transport/a.ts"] }];
  assertEquals(checkLayering(graph, allowed), [], "an allowed cycle passes");
  assertEquals(checkLayering(graph, [{ members: ["transport/a.ts", "transport/b.ts"] }]).length, 1);
});

test("layering checker: a cycle closed only by type-only or lazy imports is a warning", () => {
  const graph: SourceGraph = {
    ...CLEAN,
    "transport/fabric.ts": { imports: ["transport/kinds.ts"], lines: 1, loads: [] },
    "transport/kinds.ts": { imports: ["transport/fabric.ts"], lines: 1 },
  };
  assertEquals(checkLayering(graph), []);
  assertEquals(layeringWarnings(graph), [
    "type-only or lazy import cycle transport/fabric.ts → transport/kinds.ts → transport/fabric.ts",
  ]);
});

test("layering checker: past 400 lines is a warning, past 550 a failure", () => {
  const graph: SourceGraph = {
    ...CLEAN,
    "rpc/big.ts": { imports: [], lines: 450 },
    "rpc/bigger.ts": { imports: [], lines: 551 },
    "rpc/limit.ts": { imports: [], lines: 550 },
  };
  assertEquals(checkLayering(graph).map((v) => [v.rule, v.file]), [["file-size", "rpc/bigger.ts"]]);
  assertEquals(layeringWarnings(graph), [
    "rpc/big.ts has 450 lines (more than 400)",
    "rpc/limit.ts has 550 lines (more than 400)",
  ]);
});

test("layering parser: each import's kind (at load, type-only, lazy)", () => {
  const source = [
    'import { a } from "./a.ts";',
    'import type { B } from "./b.ts";',
    'import { type C, type D as E } from "./c.ts";',
    'import { type F, g } from "./g.ts";',
    'import "./side.ts";',
    'export type { H } from "./h.ts";',
    'export { type I } from "./i.ts";',
    'export * from "./all.ts";',
    'const lazy = () => import("./lazy.ts");',
  ].join("\n");
  assertEquals(parseImportEdges("rpc/x.ts", source).map((e) => `${e.kind} ${e.spec}`), [
    "load rpc/a.ts",
    "type rpc/b.ts",
    "type rpc/c.ts",
    "load rpc/g.ts",
    "load rpc/side.ts",
    "type rpc/h.ts",
    "type rpc/i.ts",
    "load rpc/all.ts",
    "lazy rpc/lazy.ts",
  ]);
});

// ---- the real tree, one case per rule ----

let tree: SourceGraph | undefined;
for (const rule of RULE_IDS) {
  test(`layering (this tree): ${RULES[rule].title}`, () => {
    tree ??= readTree(REPO, SOURCE_DIRS, SOURCE_FILES);
    assert(Object.keys(tree).length > 50, "the source tree was read");
    const found = checkLayering(tree).filter((v) => v.rule === rule);
    assert(
      found.length === 0,
      `${found.length} violation(s):\n${found.map((v) => `  ${v.message}`).join("\n")}`,
    );
  });
}

test("layering (this tree): warnings (files past 400 lines, type-only or lazy cycles)", () => {
  tree ??= readTree(REPO, SOURCE_DIRS, SOURCE_FILES);
  const warnings = layeringWarnings(tree);
  for (const w of warnings) console.log(`  warning: ${w}`);
});
