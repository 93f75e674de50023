/**
 * The import graph of the source tree, as tests/layering_test.ts checks it: which files a source
 * file imports (static, type-only, re-exports, literal dynamic imports), read from the text with
 * comments and template text blanked, and the tree read from disk. Pure functions except
 * {@link readTree}.
 * @module
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, posix, relative } from "node:path";

/**
 * One source file: what it imports (repo-relative paths, or bare specifiers) and its lines.
 * `loads` are the imports that run when the file is loaded (static imports that are not
 * type-only: the edges of a load-order cycle); absent, every import counts as one.
 */
export interface SourceFacts {
  imports: string[];
  lines: number;
  loads?: string[];
}
/** The import graph of a tree: repo-relative path (`rpc/client/client.ts`) → its facts. */
export type SourceGraph = Record<string, SourceFacts>;

/** How an import binds: run at load, erased (type-only), or loaded later (`import("…")`). */
export type ImportKind = "load" | "type" | "lazy";
/** One import of a file: its specifier (resolved as {@link parseImports} does) and its kind. */
export interface ImportEdge {
  spec: string;
  kind: ImportKind;
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

const IMPORT_PATTERNS: { re: RegExp; kind: (m: RegExpMatchArray) => ImportKind }[] = [
  // import x from "m"; import type { a, b as c } from "m"; import * as ns from "m"
  {
    re: /\bimport\s+(type\s+)?([\w$\s{},*]*?)\s*from\s*(["'])([^"'\n]+)\3/g,
    kind: (m) => m[1] || namesAllTypes(m[2]) ? "type" : "load",
  },
  // import "m"
  { re: /\bimport\s*()()(["'])([^"'\n]+)\3/g, kind: () => "load" },
  // export { a } from "m"; export type { T } from "m"; export * (as ns) from "m"
  {
    re: /\bexport\s+(type\s+)?(\*(?:\s+as\s+[\w$]+)?|\{[\w$\s,]*\})\s*from\s*(["'])([^"'\n]+)\3/g,
    kind: (m) => m[1] || namesAllTypes(m[2]) ? "type" : "load",
  },
  // import("m") with a literal specifier
  { re: /\bimport\s*\(\s*()()(["'])([^"'\n]+)\3\s*\)/g, kind: () => "lazy" },
];

/** True when an import clause is `{ type A, type B as C }` only (every name type-only). */
function namesAllTypes(clause: string): boolean {
  const c = clause.trim();
  if (!c.startsWith("{") || !c.endsWith("}")) return false;
  const names = c.slice(1, -1).split(",").map((s) => s.trim()).filter(Boolean);
  return names.length > 0 && names.every((n) => /^type\s/.test(n));
}

/**
 * Every import of `source` (static, `export … from`, literal dynamic), in order of appearance,
 * ignoring comments, with its kind. Relative specifiers are resolved against `file`
 * (repo-relative) to repo-relative paths; others (packages, `node:`, `bun:`) are kept as written.
 */
export function parseImportEdges(file: string, source: string): ImportEdge[] {
  const code = codeOnly(source);
  const found: { at: number; edge: ImportEdge }[] = [];
  for (const { re, kind } of IMPORT_PATTERNS) {
    for (const m of code.matchAll(re)) {
      const spec = m[4];
      const resolved = spec.startsWith("./") || spec.startsWith("../")
        ? posix.normalize(posix.join(posix.dirname(file), spec))
        : spec;
      found.push({ at: m.index ?? 0, edge: { spec: resolved, kind: kind(m) } });
    }
  }
  return found.sort((a, b) => a.at - b.at).map((f) => f.edge);
}

/**
 * The specifiers `source` imports (static imports, `export … from`, literal dynamic imports),
 * each once, in order of first appearance, ignoring comments. Relative specifiers are resolved
 * against `file` (repo-relative) to repo-relative paths; others are kept as written.
 */
export function parseImports(file: string, source: string): string[] {
  return [...new Set(parseImportEdges(file, source).map((e) => e.spec))];
}

/** Lines of `text` as `wc -l` counts them. */
export function lineCount(text: string): number {
  const n = text.split("\n").length;
  return text.endsWith("\n") ? n - 1 : n;
}

/**
 * Reads every non-test `.ts` file under `dirs` (and the single `files`) of the tree at `root`
 * into a {@link SourceGraph}, with the load-time imports of each.
 */
export function readTree(root: string, dirs: string[], files: string[]): SourceGraph {
  const graph: SourceGraph = {};
  const add = (abs: string) => {
    const file = relative(root, abs).split("\\").join("/");
    const text = readFileSync(abs, "utf8");
    const edges = parseImportEdges(file, text);
    graph[file] = {
      imports: [...new Set(edges.map((e) => e.spec))],
      lines: lineCount(text),
      loads: [...new Set(edges.filter((e) => e.kind === "load").map((e) => e.spec))],
    };
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
  for (const d of dirs) walk(join(root, d));
  for (const f of files) add(join(root, f));
  return graph;
}
