/**
 * Entry point of the single-file `verbus` binary built with Bun:
 * `bun build --compile cli/verbus_bun.ts ffi/bun_worker.ts build/libverbus_helper.so …`
 * (`make binary`, scripts/build_binary.sh). The helper and the simulated liburma are embedded;
 * ffi/embedded.ts writes them to the per-user cache on first use.
 * @module
 */
import "./bun_preset.ts";
import { exit, main } from "./main.ts";

exit(await main());
