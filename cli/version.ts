/**
 * The version of verbus, printed by `verbus --version`. The same string as `version` in
 * package.json and deno.json (tests/cli/conventions_test.ts checks all three agree).
 * @module
 */

/** The verbus release this tree is. */
export const VERSION = "0.1.0";
