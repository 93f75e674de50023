/**
 * Import cycles of a {@link SourceGraph}: the strongly connected groups of files (Tarjan), each
 * told as one closed path through it (`a → b → c → a`, the shortest one from the group's first
 * file by name) and the group's members. Pure: no I/O.
 * @module
 */
import type { SourceFacts, SourceGraph } from "./import_graph.ts";

/** One group of files that import each other, directly or through one another. */
export interface ImportCycle {
  /** A closed path through the group: its first file, the files it imports on, the first again. */
  path: string[];
  /** Every file of the group, sorted. */
  members: string[];
}

/**
 * Every import cycle of `graph` following `edges` of each file (default: its load-time imports,
 * `loads`, else all of `imports`); only edges to files of the graph count. Sorted by first file.
 */
export function findCycles(
  graph: SourceGraph,
  edges: (facts: SourceFacts) => string[] = (f) => f.loads ?? f.imports,
): ImportCycle[] {
  const next = (file: string) => edges(graph[file]).filter((t) => t in graph).sort();
  const index = new Map<string, number>(), low = new Map<string, number>();
  const stack: string[] = [], onStack = new Set<string>();
  const groups: string[][] = [];
  let counter = 0;
  const visit = (v: string) => {
    index.set(v, counter);
    low.set(v, counter++);
    stack.push(v);
    onStack.add(v);
    for (const w of next(v)) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) !== index.get(v)) return;
    const group: string[] = [];
    let w: string;
    do {
      w = stack.pop()!;
      onStack.delete(w);
      group.push(w);
    } while (w !== v);
    if (group.length > 1 || next(v).includes(v)) groups.push(group.sort());
  };
  for (const file of Object.keys(graph).sort()) if (!index.has(file)) visit(file);
  return groups
    .map((members) => ({ path: shortestLoop(members, next), members }))
    .sort((a, b) => a.members[0].localeCompare(b.members[0]));
}

/** The shortest path from the group's first file back to itself, inside the group (BFS). */
function shortestLoop(members: string[], next: (file: string) => string[]): string[] {
  const inGroup = new Set(members), start = members[0];
  const from = new Map<string, string>();
  const queue = [start];
  while (queue.length > 0) {
    const v = queue.shift()!;
    for (const w of next(v)) {
      if (!inGroup.has(w)) continue;
      if (w === start) {
        const path = [start];
        for (let at = v; at !== start; at = from.get(at)!) path.splice(1, 0, at);
        return [...path, start];
      }
      if (!from.has(w)) {
        from.set(w, v);
        queue.push(w);
      }
    }
  }
  return [start, start]; // unreachable for a strongly connected group
}

/** `a → b → c → a`. */
export function formatCycle(path: string[]): string {
  return path.join(" → ");
}
