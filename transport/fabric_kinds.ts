/**
 * What a fabric's name is: a leaf (it imports only zod), so the fabric contract (fabric.ts,
 * provider.ts, readiness.ts) can name a fabric without importing the registry, the list of the
 * contract's own implementations. Which fabrics exist is the registry's alone (`registry.ts`:
 * `FABRICS` and `FabricKind` derive from its list of descriptors); here is only the shape of a
 * name, which a registered fabric, a descriptor given beside them (a test's throw-away fabric)
 * and a peer's hello all share.
 * @module
 */
import { z } from "zod";

/**
 * A fabric's name: a registered kind (`FabricKind` of `registry.ts`, which the compiler may
 * narrow this to) or the kind of a descriptor given beside them (see {@link fabricNameSchema}).
 */
export type AnyFabricKind = string & Record<never, never>;

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
