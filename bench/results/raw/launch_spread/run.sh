#!/bin/bash
# run.sh PEERS_BIN: on 2 namespace nodes x 2 ranks, veth as it is
# (tests/multinode/netns.sh up 2 tutti-x), every launch with an empty cache
# (../halving_doubling_ring/stop71_launch.sh):
#  1. five launches of tutti-perf at 1-4 MiB, its own choices;
#  2. three rounds alternating tutti-perf with 20 timed calls, with 200, and
#     the peers' program built for tutti (PEERS_BIN/allreduce_ranks_tutti, from
#     bench/peers/build_node_peers.sh), which times as Open MPI's and Gloo's are.
launch=$(dirname "$0")/../halving_doubling_ring/stop71_launch.sh
row() { grep -E '^ +[0-9]' /tmp/spread.out | awk '{printf "%s B %s us %s; ", $1, $6, $(NF-3)}'; }
for i in 1 2 3 4 5; do
  "$launch" 2 2 /tmp/spread.out build/bench/tutti-perf -b 1M -e 4M -f 4 -n 20 -w 5 -c 0
  echo "launch $i: $(row)"
done
for r in 1 2 3; do
  "$launch" 2 2 /tmp/spread.out build/bench/tutti-perf -b 1M -e 4M -f 4 -n 20 -w 5 -c 0
  echo "round $r, 20 calls: $(row)"
  "$launch" 2 2 /tmp/spread.out build/bench/tutti-perf -b 1M -e 4M -f 4 -n 200 -w 20 -c 0
  echo "round $r, 200 calls: $(row)"
  "$launch" 2 2 /tmp/spread.out "$1/allreduce_ranks_tutti" tcp
  echo "round $r, peers' program: $(grep -E ',(1048576|4194304),' /tmp/spread.out | cut -d, -f5,6 | sed 's/,/ B /; s/$/ us/' | tr '\n' ';')"
done
