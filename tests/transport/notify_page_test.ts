/**
 * The process notify page: a collect reports exactly the tokens announced since the last one —
 * the flat tokens (below FLAT_TOKENS, announced without summaries) and the tokens past them
 * (through their group and top counters) alike — and nothing when nothing was announced.
 */
import { assertEquals, test } from "../harness.ts";
import { loadHelper } from "../../ffi/helper.ts";
import { FLAT_TOKENS, PeerNotifyPage, ProcessNotifyPage } from "../../transport/shm/notify_page.ts";

test("notify page: a collect names exactly the announced tokens, flat and summarised", async () => {
  const helper = await loadHelper();
  const own = await ProcessNotifyPage.forProcess(helper);
  const peer = await PeerNotifyPage.open(own.name, helper);
  const tokens: number[] = [];
  try {
    // Enough tokens to pass the flat ones and reach a second group of 32 past them.
    for (let k = 0; k < FLAT_TOKENS + 40; k++) tokens.push(own.allocate());
    const out = new Uint32Array(own.capacity);
    const collect = () => Array.from(out.subarray(0, own.collect(out))).sort((a, b) => a - b);
    collect(); // whatever earlier tests left announced
    assertEquals(collect(), [], "nothing announced: nothing collected");
    const flat = tokens.filter((t) => t < FLAT_TOKENS),
      past = tokens.filter((t) => t >= FLAT_TOKENS);
    const pick = [flat[1], flat[flat.length - 1], past[0], past[past.length - 1]].sort((a, b) =>
      a - b
    );
    const before = own.doorbell();
    for (const t of pick) peer.announce(t);
    peer.announce(pick[0]); // twice: still named once
    assertEquals(own.doorbell() - before, pick.length + 1, "every announcement moves the doorbell");
    assertEquals(collect(), pick);
    assertEquals(collect(), [], "a second collect finds nothing new");
    // One of each kind alone.
    peer.announce(past[3]);
    assertEquals(collect(), [past[3]]);
    peer.announce(flat[2]);
    assertEquals(collect(), [flat[2]]);
  } finally {
    for (const t of tokens) own.release(t);
    peer.release();
  }
});
