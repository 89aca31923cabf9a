#!/bin/bash
# ab2.sh: loan-1212's BERT-base and DistilBERT b16 graphs (new: optimized
# with the re-measured matmul rows) against the old default graphs
# (loan-0920's abtest), interleaved, three rounds; PROFILE=1: one profile
# each (loan-1212).
. .gpu-pack/bin/env.sh
mkdir -p $W/ab2
for n in bert.b16 distilbert.b16; do
  for r in 1 2 3; do for k in old new; do
    ms=$(timeout 60 $B/superopt run abtest/$n.$k.graph --device cuda --iters 200 2>&1 | grep -oE "^time: [0-9.]+ ms" | head -1)
    echo "$n $k $r $ms" >>$W/ab2/ab2.txt
  done; done
  [ -n "${PROFILE:-}" ] && for k in old new; do
    timeout 60 $B/superopt run abtest/$n.$k.graph --device cuda --iters 50 --profile-tsv $W/ab2/$n.$k.prof.tsv >/dev/null 2>&1
  done
done
cat $W/ab2/ab2.txt
pack
