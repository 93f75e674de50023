#!/bin/bash
# bench/vm/profile_ab.sh — runs INSIDE the Soft-RoCE VM: an A/B of two checkouts of verbus with
# bench/vm/verbs_profile.ts (this tree's script; VERBUS_ROOT picks the library measured), ECHO 64 B
# with the client and server in event mode, at 16 and at 1 in flight, A and B alternating,
# REPS repetitions (default 3), Deno and Bun. One line per run: calls/s, p50 µs, client/server
# user CPU µs per call, loop turns, clock readings and CQ polls per call (client / server).
#   SR_SHARE=/work ../shared/softroce/run-in-vm.sh 'bash /work/main/bench/vm/profile_ab.sh /work/a /work/b 3'
# Both checkouts need their build/ (the helper) and must be visible in the guest (not host /tmp).
# The VM's speed drifts by ±30 % within a session: compare the medians of the repetitions.
set -u
cd "$(dirname "$0")/../.."
A=${1:?checkout A}; B=${2:?checkout B}; REPS=${3:-3}
for rep in $(seq 1 "$REPS"); do
  for rt in bun deno; do
    if [ $rt = bun ]; then R=(node_modules/.bin/bun); else R=(node_modules/.bin/deno run -A); fi
    for side in A B; do
      root=$A; [ $side = B ] && root=$B
      for w in 16 1; do
        n=3000; [ "$w" = 1 ] && n=1000
        printf "%s %s w=%s rep=%s " "$rt" "$side" "$w" "$rep"
        VERBUS_ROOT=$root "${R[@]}" bench/vm/verbs_profile.ts --window "$w" --calls "$n" \
          --client-modes event 2>&1 | tail -n 1 | node_modules/.bin/deno eval --quiet '
            const d = JSON.parse(await new Response(Deno.stdin.readable).text());
            const c = d.client_per_call, s = d.server_per_call, u = d.cpu_per_call_us;
            console.log(d.calls_per_s, d.p50_us, "cpu", u.client_user, u.server_user, "turns",
              c.turns, s.turns, "clk", c.clockReads, s.clockReads, "polls", c.cqPolls, s.cqPolls);'
      done
    done
  done
done
