/**
 * `verbus bench --plot FILE.svg`: the run as a Vega-Lite chart — calls/s per workload with each
 * fabric next to TCP, and the latency distribution (CDF, log µs) of every cell — compiled by
 * vega-lite and rendered to SVG headless by vega (`View.toSVG()`, no DOM or canvas). vega and
 * vega-lite are optional peer dependencies, loaded only here. CLI only; the main JS thread.
 * @module
 */
import type { CellResult } from "./bench_run.ts";
import { count } from "./plural.ts";

/** The Vega-Lite versions the chart is written for (pinned in package.json). */
export const VEGA_VERSIONS = { vega: "6.4.0", "vega-lite": "6.5.0" } as const;

/** What the chart is about (its title). */
export interface PlotInfo {
  runtime: string;
  server: string;
  secondsPerCell: number;
  date: string;
}

const config = (c: CellResult) => `${c.inflight} in flight × ${count(c.clients, "client")}`;

/** The Vega-Lite spec of a run (exported for tests; {@link renderSvg} renders it). */
export function benchSpec(cells: readonly CellResult[], info: PlotInfo): Record<string, unknown> {
  const ok = cells.filter((c) => !c.error && c.calls > 0);
  const transports = [...new Set(cells.map((c) => c.fabric))];
  const workloads = [...new Set(cells.map((c) => c.label))];
  const color = {
    field: "transport",
    type: "nominal",
    title: "transport",
    scale: { domain: transports },
  };
  const qps = ok.map((c) => ({
    transport: c.fabric,
    workload: c.label,
    config: config(c),
    path: c.path,
    qps: c.qps,
  }));
  const lat = ok.flatMap((c) =>
    c.quantiles.filter(([, us]) => us > 0).map(([q, us]) => ({
      transport: c.fabric,
      workload: c.label,
      config: config(c),
      q,
      us,
    }))
  );
  return {
    $schema: "https://vega.github.io/schema/vega-lite/v6.json",
    title: {
      text: `verbus bench — ${transports.join(" vs ")}`,
      subtitle:
        `${info.runtime}, server ${info.server}, ${info.secondsPerCell} s per cell, ${info.date}`,
    },
    background: "white",
    vconcat: [
      {
        title: "throughput (calls/s, all clients; higher is better)",
        data: { values: qps },
        facet: { column: { field: "workload", type: "nominal", title: null, sort: workloads } },
        spec: {
          width: 240,
          height: 180,
          mark: { type: "bar", tooltip: true },
          encoding: {
            x: {
              field: "config",
              type: "nominal",
              title: null,
              axis: { labelAngle: -20, labelLimit: 240 },
            },
            xOffset: { field: "transport", type: "nominal", scale: { domain: transports } },
            y: { field: "qps", type: "quantitative", title: "calls/s" },
            color,
          },
        },
        resolve: { scale: { y: "independent" } },
      },
      {
        title: "latency distribution (fraction of calls at or below; log µs; left is better)",
        data: { values: lat },
        facet: {
          row: { field: "config", type: "nominal", title: null },
          column: { field: "workload", type: "nominal", title: null, sort: workloads },
        },
        spec: {
          width: 240,
          height: 140,
          mark: { type: "line", interpolate: "step-after", point: false },
          encoding: {
            x: { field: "us", type: "quantitative", title: "µs", scale: { type: "log" } },
            y: { field: "q", type: "quantitative", title: "quantile", axis: { format: "%" } },
            color,
          },
        },
        resolve: { scale: { x: "independent" } },
      },
    ],
  };
}

/** Loads one of the packages (the default imports it; tests pass one that fails). */
export type VegaImporter = (name: "vega" | "vega-lite") => Promise<unknown>;

const importVega: VegaImporter = (name) => name === "vega" ? import("vega") : import("vega-lite");

/**
 * Loads vega and vega-lite, naming the packages to install when they are missing. `bench --plot`
 * calls it before the matrix runs, so a missing package fails at once, not after the run.
 */
export async function loadVega(importer: VegaImporter = importVega): Promise<{
  vega: typeof import("vega");
  vl: typeof import("vega-lite");
}> {
  try {
    const [vega, vl] = await Promise.all([importer("vega"), importer("vega-lite")]);
    return { vega, vl } as { vega: typeof import("vega"); vl: typeof import("vega-lite") };
  } catch (e) {
    throw new Error(
      `--plot needs the npm packages vega@${VEGA_VERSIONS.vega} and vega-lite@${
        VEGA_VERSIONS["vega-lite"]
      } (optional peer dependencies of verbus; install them next to it): ${(e as Error).message}`,
    );
  }
}

/** Renders a Vega-Lite spec to an SVG document (vega's headless renderer). */
export async function renderSvg(spec: Record<string, unknown>): Promise<string> {
  const { vega, vl } = await loadVega();
  // deno-lint-ignore no-explicit-any
  const compiled = vl.compile(spec as any).spec;
  const view = new vega.View(vega.parse(compiled), { renderer: "none" });
  try {
    return await view.toSVG();
  } finally {
    view.finalize();
  }
}
