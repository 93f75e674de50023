/**
 * What a fabric tells the rest of verbus about itself, in one object its folder exports
 * (`transport/<fabric>/descriptor.ts`): its kind, how to load its provider, how to probe the
 * host for it, its section of `verbus doctor`, what `verbus serve` offers by default, and how the
 * shared fabric suites (tests/fabric) run over it. The registry lists one descriptor per fabric;
 * capabilities, doctor, the CLI choices and the test matrix iterate that list, so adding a fabric
 * touches no other file. A descriptor loads nothing heavy: provider and probe are dynamic imports.
 * Control path; one JS thread.
 * @module
 */
import { z } from "zod";
import type { LibraryStatus } from "./library_status.ts";
import type { FabricModule } from "./provider.ts";

/** What a probe may use: whether the C helper loaded, and library paths named by the user. */
export interface ProbeContext {
  /** The C helper loaded and its layouts matched (verbs is bound through it, shm's doorbell too). */
  readonly helperLoaded: boolean;
  /** A library path named explicitly for a fabric, by kind (`verbus doctor --urma PATH`). */
  readonly libraryPaths: Readonly<Partial<Record<string, string>>>;
}

/** What a fabric's probe found. Never an exception: failures are reasons inside `report`. */
export interface FabricProbe<Report> {
  /** The fabric can run on this host. */
  usable: boolean;
  /** The native libraries it looked for, by name (doctor lists them together). */
  libraries: Record<string, LibraryStatus>;
  /** Its own findings, shown by doctor (and under `section` in `doctor --json`). */
  report: Report;
}

/**
 * How the shared fabric suites (tests/fabric, `VERBUS_TEST_FABRIC=<kind>`) run over a fabric:
 * options spread into the test server's `fabric` options and the test client's options (empty
 * for the default fabric, shm: the defaults are what it tests).
 */
export interface FabricTestSettings {
  /** What `client.fabric` says when a session runs over it. */
  readonly label: string;
  /**
   * Where the test matrix (scripts/test.sh) runs the suites over it: on the host (shm; URMA
   * over the simulated liburma) or inside the Soft-RoCE VM (verbs, on rxe0 → rxe1).
   */
  readonly where: "host" | "vm";
  /** The address the test server listens on (the client connects to it). */
  readonly host: string;
  /** Spread into the server's fabric options (`fabrics`, `providerOptions`). */
  readonly server: Readonly<Record<string, unknown>>;
  /** Spread into the client's options (`fabric`, `providerOptions`). */
  readonly client: Readonly<Record<string, unknown>>;
}

/** What the shared fabric suites tell a fabric's test settings: the libraries built for tests. */
export interface TestContext {
  /** A library path for a fabric, by kind (URMA: the simulated liburma of the ABI under test). */
  readonly libraryPaths: Readonly<Partial<Record<string, string>>>;
}

/** One fabric, as the rest of verbus sees it. `K` its kind, `S` its doctor section, `R` report. */
export interface FabricDescriptor<
  K extends string = string,
  S extends string = string,
  R = unknown,
> {
  readonly kind: K;
  /** What it is, for people: "shared memory (same host)". */
  readonly title: string;
  /** Where probeHost and doctor list it among the fabrics (lower first). */
  readonly rank: number;
  /** The key of its report in the host's capabilities and in `doctor --json` (verbs: "rdma"). */
  readonly section: S;
  /** `verbus serve` offers it without `--fabric` (shm and verbs; URMA only when asked). */
  readonly servedByDefault: boolean;
  /** Loads its provider module (a literal dynamic import, so bundlers include it). */
  load(): Promise<FabricModule>;
  /** Probes this host for it. Never throws. */
  probe(ctx: ProbeContext): Promise<FabricProbe<R>>;
  /** Its lines in `verbus doctor` (the first starts with its section name). */
  doctor(report: R): string[];
  /** How the shared fabric suites run over it (absent: it is not in the test matrix). */
  testSettings?(ctx: TestContext): FabricTestSettings;
}

/** A descriptor of any kind (a registered one, or one a test registers beside them). */
// deno-lint-ignore no-explicit-any
export type AnyFabricDescriptor = FabricDescriptor<string, string, any>;

/**
 * A descriptor as options accept it (`extraFabrics` of serve's and connect's options): an object
 * with a kind and a loader. Its kind is checked against the other fabrics where it is used.
 */
export const fabricDescriptorSchema: z.ZodCustom<AnyFabricDescriptor, AnyFabricDescriptor> = z
  .custom<AnyFabricDescriptor>(
    (d) =>
      typeof d === "object" && d !== null && typeof (d as AnyFabricDescriptor).kind === "string" &&
      typeof (d as AnyFabricDescriptor).load === "function",
    "expected a fabric descriptor (an object with kind and load)",
  );
