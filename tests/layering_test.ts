/**
 * The layering of the source tree, checked on every run (Deno and Bun): `ffi/` ← `transport/` ←
 * `rpc/` ← (`mod.ts`, `cli/`, `examples/`); `util/` and `errors.ts` may be imported by anyone and
 * import nothing above them; a fabric (`transport/shm|verbs|urma/`) never imports another; `cli/`
 * and `examples/` use the public entry points; no source file passes 400 lines.
 *
 * The checker ({@link checkLayering}) is a pure function over `{ file → { imports, lines } }`, so
 * each rule is proved able to fail on a synthetic graph with one violation per rule; the same
 * rules then run, one test case each, over the real tree read from disk (every non-test `.ts`
 * file of ffi/, transport/, rpc/, util/, cli/, examples/, plus errors.ts and mod.ts). A failure
 * names the file and the import (or the line count).
 * @module
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, posix, relative, resolve } from "node:path";
import { assert, assertEquals, test } from "./harness.ts";

/** One source file: what it imports (repo-relative paths, or bare specifiers) and its lines. */
export interface SourceFacts {
  imports: string[];
  lines: number;
}
/** The import graph of a tree: repo-relative path (`rpc/client.ts`) → its facts. */
export type SourceGraph = Record<string, SourceFacts>;
/** One broken rule: which rule, which file, and what it imports (absent for the size rule). */
export interface Violation {
  rule: RuleId;
  file: string;
  import?: string;
  message: string;
}

/** The largest a non-test source file may be. */
export const MAX_SOURCE_LINES = 400;
const FABRIC_DIRS = ["shm", "verbs", "urma"] as const;
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
    title: "rpc/ imports neither ffi/ nor a fabric (transport/shm|verbs|urma/)",
    why: (file: string, target: string) =>
      under(file, "rpc") && (under(target, "ffi") || isFabric(target))
        ? "rpc/ must not import ffi/ or transport/shm|verbs|urma/"
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
    title: "a fabric (transport/shm|verbs|urma/) imports no other fabric",
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

/** Every violation of every rule in `graph` (pure: no I/O), in file order. */
export function checkLayering(graph: SourceGraph): Violation[] {
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
        message: `${file} has ${lines} lines (more than ${MAX_SOURCE_LINES})`,
      });
    }
  }
  return out;
}

/**
 * `text` with its comments and the text of its template literals blanked (string literals,
 * `${…}` expressions and regex literals kept), so that only code is searched for imports.
 */
export function codeOnly(text: string): string {
  let out = "";
  let i = 0;
  let last = ""; // last significant character outside strings and comments
  const braces: number[] = []; // open `${` depths of the templates we are inside
  let depth = 0;
  const template = () => {
    // inside a template literal, from just after the backquote (or a closing `}` of `${}`):
    // its text is blanked (it is not code), its `${…}` expressions are scanned as code
    for (; i < text.length; i++) {
      const c = text[i];
      if (c === "\\") {
        out += "  ";
        i++;
      } else if (c === "`") {
        out += c;
        i++;
        last = "`";
        return;
      } else if (c === "$" && text[i + 1] === "{") {
        out += "${";
        i += 2;
        braces.push(++depth);
        last = "{";
        return;
      } else out += c === "\n" ? c : " ";
    }
  };

  while (i < text.length) {
    const c = text[i], n = text[i + 1];
    if (c === "/" && n === "/") {
      while (i < text.length && text[i] !== "\n") i++;
    } else if (c === "/" && n === "*") {
      const end = text.indexOf("*/", i + 2);
      const stop = end < 0 ? text.length : end + 2;
      out += text.slice(i, stop).replace(/[^\n]/g, " ");
      i = stop;
    } else if (c === '"' || c === "'") {
      let j = i + 1;
      while (j < text.length && text[j] !== c && text[j] !== "\n") j += text[j] === "\\" ? 2 : 1;
      out += text.slice(i, j + 1);
      i = j + 1;
      last = c;
    } else if (c === "`") {
      out += c;
      i++;
      template();
    } else if (
      c === "/" && (last === "" || "(,=:[!&|?{};+-*%<>~^".includes(last) ||
        /\b(return|typeof|case|in|of)\s*$/.test(out.slice(-12)))
    ) {
      let j = i + 1, inClass = false;
      while (j < text.length && text[j] !== "\n" && (inClass || text[j] !== "/")) {
        if (text[j] === "\\") j++;
        else if (text[j] === "[") inClass = true;
        else if (text[j] === "]") inClass = false;
        j++;
      }
      out += text.slice(i, j + 1);
      i = j + 1;
      last = "/";
    } else {
      if (c === "{") depth++;
      if (c === "}") {
        if (braces.length && braces[braces.length - 1] === depth) {
          braces.pop();
          depth--;
          out += c;
          i++;
          template();
          continue;
        }
        depth--;
      }
      if (!/\s/.test(c)) last = c;
      out += c;
      i++;
    }
  }
  return out;
}

const IMPORT_PATTERNS = [
  // import x from "m"; import type { a, b as c } from "m"; import * as ns from "m"
  /\bimport\s+(?:type\s+)?[\w$\s{},*]*?\s*from\s*(["'])([^"'\n]+)\1/g,
  // import "m"
  /\bimport\s*(["'])([^"'\n]+)\1/g,
  // export { a } from "m"; export type { T } from "m"; export * (as ns) from "m"
  /\bexport\s+(?:type\s+)?(?:\*(?:\s+as\s+[\w$]+)?|\{[\w$\s,]*\})\s*from\s*(["'])([^"'\n]+)\1/g,
  // import("m") with a literal specifier
  /\bimport\s*\(\s*(["'])([^"'\n]+)\1\s*\)/g,
];

/**
 * The specifiers `source` imports (static imports, `export … from`, literal dynamic imports),
 * each once, in order of first appearance, ignoring comments. Relative specifiers are resolved against `file`
 * (repo-relative) to repo-relative paths; others (packages, `node:`, `bun:`) are kept as written.
 */
export function parseImports(file: string, source: string): string[] {
  const code = codeOnly(source);
  const found: { at: number; spec: string }[] = [];
  for (const re of IMPORT_PATTERNS) {
    for (const m of code.matchAll(re)) found.push({ at: m.index ?? 0, spec: m[2] });
  }
  const specs = found.sort((a, b) => a.at - b.at).map(({ spec }) =>
    spec.startsWith("./") || spec.startsWith("../")
      ? posix.normalize(posix.join(posix.dirname(file), spec))
      : spec
  );
  return [...new Set(specs)];
}

/** Lines of `text` as `wc -l` counts them. */
function lineCount(text: string): number {
  const n = text.split("\n").length;
  return text.endsWith("\n") ? n - 1 : n;
}

const REPO = resolve(dirname(new URL(import.meta.url).pathname), "..");
const SOURCE_DIRS = ["ffi", "transport", "rpc", "util", "cli", "examples"];
const SOURCE_FILES = ["errors.ts", "mod.ts"];

/** Reads the real tree into a {@link SourceGraph}. */
function readTree(): SourceGraph {
  const graph: SourceGraph = {};
  const add = (abs: string) => {
    const file = relative(REPO, abs).split("\\").join("/");
    const text = readFileSync(abs, "utf8");
    graph[file] = { imports: parseImports(file, text), lines: lineCount(text) };
  };
  const walk = (dir: string) => {
    for (const name of readdirSync(dir).sort()) {
      const p = join(dir, name);
      if (statSync(p).isDirectory()) {
        if (name !== "node_modules" && name !== "build") walk(p);
      } else if (name.endsWith(".ts") && !name.endsWith("_test.ts") && !name.endsWith(".d.ts")) {
        add(p);
      }
    }
  };
  for (const d of SOURCE_DIRS) walk(join(REPO, d));
  for (const f of SOURCE_FILES) add(join(REPO, f));
  return graph;
}

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
  "rpc/client.ts": { imports: ["transport/registry.ts", "transport/tcp/mod.ts"], lines: 400 },
  "cli/call.ts": { imports: ["mod.ts", "examples/demo/mod.ts", "cli/options.ts"], lines: 10 },
  "cli/options.ts": { imports: ["util/options.ts", "zod"], lines: 10 },
  [BUN_PRESET]: { imports: BUN_PRESET_IMPORTS, lines: 10 },
  "examples/demo/service.ts": {
    imports: ["mod.ts", "errors.ts", "examples/demo/codec.ts"],
    lines: 10,
  },
  "mod.ts": { imports: ["rpc/client.ts", "transport/registry.ts", "ffi/loader.ts"], lines: 10 },
};

/** One graph with exactly one violation of each rule (file, import). */
const BROKEN: Record<RuleId, [string, SourceFacts, string?]> = {
  "rpc-below": [
    "rpc/session/progress.ts",
    { imports: ["transport/verbs/qp.ts"], lines: 1 },
    "transport/verbs/qp.ts",
  ],
  "rpc-not-above": ["rpc/session/client_session.ts", {
    imports: ["examples/demo/service.ts"],
    lines: 1,
  }, "examples/demo/service.ts"],
  "transport-below": ["transport/verbs/provider.ts", {
    imports: ["rpc/session/hello.ts"],
    lines: 1,
  }, "rpc/session/hello.ts"],
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
  "file-size": ["rpc/session/client_session.ts", { imports: [], lines: 664 }],
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

// ---- the real tree, one case per rule ----

let tree: SourceGraph | undefined;
for (const rule of RULE_IDS) {
  test(`layering (this tree): ${RULES[rule].title}`, () => {
    tree ??= readTree();
    assert(Object.keys(tree).length > 50, "the source tree was read");
    const found = checkLayering(tree).filter((v) => v.rule === rule);
    assert(
      found.length === 0,
      `${found.length} violation(s):\n${found.map((v) => `  ${v.message}`).join("\n")}`,
    );
  });
}
