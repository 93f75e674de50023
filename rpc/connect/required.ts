/**
 * proto2 `required` fields on decode. `@bufbuild/protobuf` checks them when encoding but not
 * when decoding; brpc's servers refuse a request that lacks one (EREQUEST) and its clients an
 * answer that does. The descriptor services and the Connect transport do the same with
 * {@link requiredCheck}: a message type with no required field anywhere (every proto3 type)
 * costs nothing per call.
 *
 * Pure; any thread.
 * @module
 */
import { type DescField, type DescMessage, isFieldSet, type Message } from "@bufbuild/protobuf";

/** `FeatureSet_FieldPresence.LEGACY_REQUIRED`: proto2 `required` (and editions' equivalent). */
const LEGACY_REQUIRED = 3;
/** Nested singular messages are checked this deep (a peer cannot make the check unbounded). */
const MAX_DEPTH = 32;

/** Whether `desc` or a singular message field below it (not in a oneof) has a required field. */
function hasRequired(desc: DescMessage, seen: Set<DescMessage>): boolean {
  if (seen.has(desc)) return false;
  seen.add(desc);
  return desc.fields.some((f) =>
    f.presence === LEGACY_REQUIRED || (nested(f) && hasRequired(f.message!, seen))
  );
}

function nested(f: DescField): boolean {
  return f.fieldKind === "message" && f.oneof === undefined;
}

function firstMissing(desc: DescMessage, m: Message, depth: number): string | undefined {
  for (const f of desc.fields) {
    if (f.presence === LEGACY_REQUIRED && !isFieldSet(m, f)) return `${desc.typeName}.${f.name}`;
    if (nested(f) && depth < MAX_DEPTH && isFieldSet(m, f)) {
      const inner = (m as unknown as Record<string, Message>)[f.localName];
      const missing = firstMissing(f.message!, inner, depth + 1);
      if (missing !== undefined) return missing;
    }
  }
  return undefined;
}

/**
 * A check for messages of type `desc`: returns the first required field a message leaves unset
 * (`pkg.Message.field`), or undefined. Null when `desc` has no required field anywhere (then
 * there is nothing to check). Made once per type and kept.
 */
export function requiredCheck(desc: DescMessage): RequiredCheck | null {
  let c = checks.get(desc);
  if (c === undefined) {
    c = hasRequired(desc, new Set()) ? (m) => firstMissing(desc, m, 0) : null;
    checks.set(desc, c);
  }
  return c;
}

/** Returns the first required field a message leaves unset, or undefined. */
export type RequiredCheck = (m: Message) => string | undefined;

/** One check per message type (descriptors live as long as their generated module). */
const checks = new WeakMap<DescMessage, RequiredCheck | null>();
