/**
 * The names of the fast fabrics: a leaf (it imports only zod), so the fabric contract
 * (fabric.ts, provider.ts, readiness.ts) can name a fabric without importing the registry, the
 * list of the contract's own implementations. Each kind here has one descriptor in
 * `registry.ts` (the compiler names a kind without one); everything else (zod enums, CLI
 * choices, capabilities, doctor, the test matrix) derives from those two. A descriptor given
 * beside them (a test's throw-away fabric) is named by {@link fabricNameSchema}.
 * @module
 */
import { z } from "zod";

/** The fast fabrics, best first when a host has several (TCP is the control plane, not a fabric). */
export const FABRICS = ["shm", "verbs", "urma"] as const;
/** One of {@link FABRICS}. */
export type FabricKind = (typeof FABRICS)[number];
/** A registered kind, or the kind of a descriptor given beside them (see {@link fabricNameSchema}). */
export type AnyFabricKind = FabricKind | (string & Record<never, never>);
/** zod enum of {@link FABRICS} (options, hellos, CLI flags). */
export const fabricKindSchema: z.ZodEnum<{ [K in FabricKind]: K }> = z.enum(FABRICS);

/**
 * A fabric's name as options and hellos carry it: a registered kind, or the kind of a descriptor
 * a caller gives beside the registered ones (`extraFabrics`). A peer may name a fabric this
 * process does not know: the server answers it OFF ("does not offer"), as for a known fabric it
 * does not offer. `tcp` and `auto` are choices of a client, never fabrics.
 */
export const fabricNameSchema: z.ZodString = z.string()
  .regex(/^[a-z][a-z0-9_]{0,15}$/, "expected a fabric name (lowercase, at most 16 characters)")
  .refine((n) => n !== "tcp" && n !== "auto", "tcp and auto are not fabrics");

/**
 * Which data plane a client asks for: the best fabric both hosts share (`auto`), one fabric by
 * name (a registered kind, or the kind of a descriptor given beside them), or TCP only.
 */
export const fabricChoiceSchema: z.ZodUnion<
  readonly [z.ZodEnum<{ auto: "auto"; tcp: "tcp" }>, z.ZodString]
> = z.union([z.enum(["auto", "tcp"]), fabricNameSchema]);
/** One of {@link fabricChoiceSchema}'s values. */
export type FabricChoice = "auto" | "tcp" | AnyFabricKind;
