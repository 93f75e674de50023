/**
 * Reads one `.cpuprofile` (the Chrome DevTools format both `deno --cpu-prof` and
 * `bun --cpu-prof` write: `nodes` with `callFrame.{functionName,url,lineNumber}` and `children`,
 * `samples` = the node on top of the stack per sample, `timeDeltas` in µs) and attributes the
 * self time of the samples of the measured phase to the categories of `categories.ts`.
 *
 * The measured phase: from the last sample inside `verbusProfileMarkStart` to the first sample
 * inside `verbusProfileMarkEnd` (see `common.ts`); without both markers, the whole profile.
 * A sample's weight is the time to the next sample (what DevTools does), so the weights add up
 * to the wall time of the phase, descheduled time included.
 * @module
 */
import { CATEGORIES, type Category, classifyFrame, type Side } from "./categories.ts";

/** The parts of a `.cpuprofile` this module reads. */
export interface CpuProfile {
  nodes: {
    id: number;
    callFrame: { functionName: string; url: string; lineNumber?: number };
    children?: number[];
  }[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

/** One category of one process. */
export interface CategoryCost {
  samples: number;
  /** Self time in the measured phase, µs. */
  us: number;
  /** Share of the phase's samples' time, 0..1. */
  share: number;
  /** Self time per measured call, ns. */
  nsPerCall: number;
}

/** One function of the top list. */
export interface FunctionCost {
  fn: string;
  location: string;
  category: Category;
  samples: number;
  share: number;
  nsPerCall: number;
}

/** The breakdown of one process (server or client) of one case. */
export interface SideReport {
  side: Side;
  /** True when both phase markers were found (else the whole profile was used). */
  windowed: boolean;
  samples: number;
  /** Wall time of the measured phase, µs. */
  windowUs: number;
  /** windowUs ÷ calls, ns: what the category ns/call values add up to. */
  wallNsPerCall: number;
  /** Median gap between samples, µs. */
  intervalUs: number;
  categories: Record<Category, CategoryCost>;
  top: FunctionCost[];
}

/** Turns a profile url into the location `categories.ts` matches. */
export function locate(url: string, roots: string[]): string {
  let u = url;
  if (u.startsWith("file://")) {
    try {
      u = decodeURIComponent(new URL(u).pathname);
    } catch {
      u = u.slice(7);
    }
  }
  for (const r of roots) if (u.startsWith(r + "/")) return u.slice(r.length + 1);
  return u;
}

/**
 * Attributes the samples of `p` (one process, `side`) to categories; `calls` is the number of
 * measured calls, `roots` the profiled checkout's path (and its realpath), `intervalHint` the
 * sampling interval asked for (µs; gaps over max(3 × it, 2 × the median gap) count as unsampled).
 */
export function analyze(
  p: CpuProfile,
  side: Side,
  calls: number,
  roots: string[],
  intervalHint: number,
  topN = 15,
): SideReport {
  const byId = new Map<number, CpuProfile["nodes"][number]>();
  const parent = new Map<number, number>();
  for (const n of p.nodes) {
    byId.set(n.id, n);
    for (const c of n.children ?? []) parent.set(c, n.id);
  }
  const locOf = (id: number) => locate(byId.get(id)!.callFrame.url, roots);
  const catCache = new Map<number, Category>();
  const categoryOf = (leaf: number): Category => {
    const hit = catCache.get(leaf);
    if (hit) return hit;
    let cat: Category = "runtime"; // no verbus frame on the stack
    for (let id: number | undefined = leaf; id !== undefined; id = parent.get(id)) {
      const c = classifyFrame(locOf(id), byId.get(id)!.callFrame.functionName, side);
      if (c !== null) {
        cat = c;
        break;
      }
    }
    catCache.set(leaf, cat);
    return cat;
  };
  const onStack = (leaf: number, name: string): boolean => {
    for (let id: number | undefined = leaf; id !== undefined; id = parent.get(id)) {
      if (byId.get(id)!.callFrame.functionName === name) return true;
    }
    return false;
  };

  // Sample weights: time to the next sample, capped; the excess of a longer gap is `unsampled`
  // (JSC samples only while JS runs: an idle event loop would otherwise be charged to the last
  // function before it, e.g. the socket write).
  const n = p.samples.length;
  const delta = new Float64Array(n);
  for (let i = 0; i < n; i++) delta[i] = i + 1 < n ? Math.max(0, p.timeDeltas[i + 1]) : 0;
  const sorted = delta.slice(0, Math.max(0, n - 1)).sort();
  const median = sorted.length ? sorted[sorted.length >> 1] : 0;
  const cap = Math.max(3 * intervalHint, 2 * median);
  const w = delta.map((d) => Math.min(d, cap));
  const gap = delta.map((d, i) => d - w[i]);
  if (n > 0) w[n - 1] = median;
  const intervalUs = median;

  let lo = -1, hi = -1;
  for (let i = 0; i < n; i++) if (onStack(p.samples[i], "verbusProfileMarkStart")) lo = i;
  for (let i = Math.max(lo, 0); i < n; i++) {
    if (onStack(p.samples[i], "verbusProfileMarkEnd")) {
      hi = i;
      break;
    }
  }
  const windowed = lo >= 0 && hi > lo;
  const from = windowed ? lo + 1 : 0, to = windowed ? hi : n;

  const catUs = new Map<Category, number>(), catN = new Map<Category, number>();
  const fnUs = new Map<number, number>(), fnN = new Map<number, number>();
  let total = 0;
  for (let i = from; i < to; i++) {
    const id = p.samples[i], c = categoryOf(id);
    catUs.set(c, (catUs.get(c) ?? 0) + w[i]);
    catN.set(c, (catN.get(c) ?? 0) + 1);
    fnUs.set(id, (fnUs.get(id) ?? 0) + w[i]);
    fnN.set(id, (fnN.get(id) ?? 0) + 1);
    catUs.set("unsampled", (catUs.get("unsampled") ?? 0) + gap[i]);
    total += w[i] + gap[i];
  }
  const per = (us: number) => (calls > 0 ? (us * 1000) / calls : 0);
  const categories = {} as Record<Category, CategoryCost>;
  for (const c of CATEGORIES) {
    const us = catUs.get(c) ?? 0;
    categories[c] = {
      samples: catN.get(c) ?? 0,
      us: Math.round(us),
      share: total > 0 ? us / total : 0,
      nsPerCall: per(us),
    };
  }
  // Functions: nodes merged by (name, location, line, category) — a function has a node per
  // caller; a native one is listed once per category its callers give it.
  const merged = new Map<string, FunctionCost & { us: number }>();
  for (const [id, us] of fnUs) {
    const f = byId.get(id)!.callFrame;
    const loc = locOf(id), line = (f.lineNumber ?? -1) + 1, cat = categoryOf(id);
    const key = `${f.functionName}\0${loc}\0${line}\0${cat}`;
    const e = merged.get(key) ?? {
      fn: f.functionName || "(anonymous)",
      location: loc ? (line > 0 ? `${loc}:${line}` : loc) : "(native)",
      category: cat,
      samples: 0,
      share: 0,
      nsPerCall: 0,
      us: 0,
    };
    e.us += us;
    e.samples += fnN.get(id) ?? 0;
    merged.set(key, e);
  }
  const top = [...merged.values()].sort((a, b) => b.us - a.us).slice(0, topN).map((
    { us, ...e },
  ) => ({ ...e, share: total > 0 ? us / total : 0, nsPerCall: per(us) }));
  return {
    side,
    windowed,
    samples: to - from,
    windowUs: Math.round(total),
    wallNsPerCall: per(total),
    intervalUs: Math.round(intervalUs),
    categories,
    top,
  };
}
