/**
 * Entry point of the single-file `verbus` binary built with Bun:
 * `bun build --compile cli/verbus_bun.ts ffi/bun_worker.ts --outfile build/verbus`
 * (`make binary`). The helper library is looked for next to the binary (build/).
 * @module
 */
import "./bun_preset.ts";
import { exit, main } from "./main.ts";

exit(await main());
