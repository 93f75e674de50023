/** Deterministic test values for agent tests: byte i of key k's value. */
export function agentValue(key: string, bytes: number): Uint8Array {
  let h = 2166136261;
  for (let i = 0; i < key.length; i++) h = Math.imul(h ^ key.charCodeAt(i), 16777619);
  const out = new Uint8Array(bytes);
  for (let i = 0; i < bytes; i++) {
    h = Math.imul(h ^ i, 16777619);
    out[i] = h >>> 24;
  }
  return out;
}
