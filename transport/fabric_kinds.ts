/**
 * The names of the fast fabrics: a leaf (it imports only zod), so the fabric contract
 * (fabric.ts, provider.ts, readiness.ts) can name a fabric without importing the registry, the
 * list of the contract's own implementations. Each kind here has one descriptor in
 * `registry.ts` (the compiler names a kind without one); everything else (zod enums, CLI
 * choices, capabilities, doctor, the test matrix) derives from those two.
 * @module
 */
import { z } from "zod";

/** The fast fabrics, best first when a host has several (TCP is the control plane, not a fabric). */
export const FABRICS = ["shm", "verbs", "urma"] as const;
/** One of {@link FABRICS}. */
export type FabricKind = (typeof FABRICS)[number];
/** zod enum of {@link FABRICS} (options, hellos, CLI flags). */
export const fabricKindSchema: z.ZodEnum<{ [K in FabricKind]: K }> = z.enum(FABRICS);
