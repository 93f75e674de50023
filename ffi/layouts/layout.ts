/**
 * Struct layouts as named offset constants, and their check against the helper's table.
 *
 * A layout is `{ $struct: "<C name>", $size: <sizeof>, <field>: <offset>, ... }`. Offsets are
 * written from the C headers, never computed by adding field sizes; at load, {@link checkLayouts}
 * compares every one with the helper's `vb_layout_table()` (sizeof/offsetof from the compiler)
 * and verbus refuses to run on any mismatch, naming the field.
 * @module
 */
import { LayoutMismatchError } from "../../errors.ts";

/** A struct layout: C name, sizeof, and field offsets. */
export type Layout = { readonly $struct: string; readonly $size: number } & {
  readonly [field: string]: number | string;
};

/** One entry of the helper's table. */
export interface LayoutEntry {
  offset: number;
  size: number;
}

/** Parses `vb_layout_table()` text: "struct size" and "struct.field offset size" lines. */
export function parseLayoutTable(text: string): Map<string, LayoutEntry> {
  const out = new Map<string, LayoutEntry>();
  for (const line of text.split("\n")) {
    const parts = line.trim().split(/\s+/);
    if (parts.length === 2) out.set(parts[0], { offset: 0, size: Number(parts[1]) });
    else if (parts.length === 3) {
      out.set(parts[0], { offset: Number(parts[1]), size: Number(parts[2]) });
    }
  }
  return out;
}

/** Every disagreement between `layouts` and `table`, as readable lines (empty when all agree). */
export function layoutMismatches(
  layouts: readonly Layout[],
  table: Map<string, LayoutEntry>,
): string[] {
  const bad: string[] = [];
  for (const l of layouts) {
    const whole = table.get(l.$struct);
    if (!whole) {
      bad.push(`struct ${l.$struct}: not in the helper's layout table`);
      continue;
    }
    if (whole.size !== l.$size) {
      bad.push(`sizeof(struct ${l.$struct}): TypeScript says ${l.$size}, C says ${whole.size}`);
    }
    for (const [field, offset] of Object.entries(l)) {
      if (field.startsWith("$")) continue;
      const e = table.get(`${l.$struct}.${field}`);
      if (!e) bad.push(`${l.$struct}.${field}: not in the helper's layout table`);
      else if (e.offset !== offset) {
        bad.push(`offsetof(${l.$struct}, ${field}): TypeScript says ${offset}, C says ${e.offset}`);
      }
    }
  }
  return bad;
}

/** Throws {@link LayoutMismatchError} naming every field that disagrees. */
export function checkLayouts(layouts: readonly Layout[], table: Map<string, LayoutEntry>): void {
  const bad = layoutMismatches(layouts, table);
  if (bad.length) throw new LayoutMismatchError(bad);
}
