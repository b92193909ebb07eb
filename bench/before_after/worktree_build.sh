# Sourced by the before/after benchmarks: build_at NAME COMMIT [CMAKE_ARG...]
# checks COMMIT out as a git worktree in $work/NAME and builds its tutti-perf
# there (Release; no tests, no PyTorch backend, no libnccl). Needs $repo and
# $work; the caller's EXIT trap removes the worktrees.
build_at() {
  local name=$1 commit=$2
  shift 2
  git -C "$repo" worktree add -q --detach "$work/$name" "$commit"
  cmake -S "$work/$name" -B "$work/$name/build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DTUTTI_BUILD_TESTS=OFF \
    -DTUTTI_BUILD_PYTHON=OFF -DTUTTI_BUILD_NCCL_COMPAT=OFF "$@" >"$work/$name.log" 2>&1
  ninja -C "$work/$name/build" tutti-perf >>"$work/$name.log" 2>&1 || { tail -20 "$work/$name.log"; exit 1; }
}

# build_before_after BEFORE AFTER: a scratch $work, removed on exit with its
# worktrees, and tutti-perf built at both commits ($work/before, $work/after).
build_before_after() {
  work=$(mktemp -d /tmp/tutti-before-after.XXXXXX)
  trap 'for t in before after; do git -C "$repo" worktree remove --force "$work/$t" 2>/dev/null || true; done; rm -rf "$work"' EXIT
  build_at before "$1"
  build_at after "$2"
}

# build_before_after_on_nodes BEFORE AFTER NODES PREFIX: as build_before_after,
# host code only, for runs on namespace nodes PREFIX-n0.. (netns.sh, $netns),
# which are taken down on exit with the worktrees.
build_before_after_on_nodes() {
  work=$(mktemp -d /tmp/tutti-before-after.XXXXXX)
  netns=$repo/tests/multinode/netns.sh
  trap '"$netns" down '"$3"' '"$4"' >/dev/null 2>&1 || true
        for t in before after; do git -C "$repo" worktree remove --force "$work/$t" 2>/dev/null || true; done
        rm -rf "$work"' EXIT
  build_at before "$1" -DTUTTI_ENABLE_CUDA=OFF
  build_at after "$2" -DTUTTI_ENABLE_CUDA=OFF
}

# launch_on_nodes TAG NODES PER CSV ARGS...: tutti-perf of side TAG (before,
# after) as every rank on $prefix's nodes (bench/node_ranks.sh sourced), with
# a cache of its own per side, layout and $rate, kept across launches.
launch_on_nodes() {
  local t=$1 nodes=$2 per=$3 csv=$4
  shift 4
  node_ranks $prefix "$nodes" "$per" "$csv" TUTTI_CACHE_DIR="$work/cache.$t.$nodes.$per.${rate:-none}" \
    "$work/$t/build/bench/tutti-perf" "$@"
}

# tables_in_turn NODES ROUNDS HEADER ROW LAYOUT...: with NODES namespace nodes
# up, links as they are and then shaped to 4 Gbit/s ($rate: none, 4gbit), a
# markdown table for each LAYOUT ("NODES PER") headed by HEADER (its two
# lines), whose rows `ROW ROUND TAG NODES PER` prints, both sides (TAG:
# before, after) in turn each round.
tables_in_turn() {
  local most=$1 rounds=$2 header=$3 row=$4 layout nodes per shaped i t
  shift 4
  for rate in none 4gbit; do
    shaped=""
    [ $rate != none ] && shaped=$rate
    "$netns" up "$most" $prefix $shaped >/dev/null
    for layout in "$@"; do
      read -r nodes per <<<"$layout"
      printf '\n### %s x %s, %s\n\n%s\n' "$nodes" "$per" "$rate" "$header"
      for ((i = 1; i <= rounds; i++)); do
        for t in before after; do "$row" $i $t "$nodes" "$per"; done
      done
    done
    "$netns" down "$most" $prefix >/dev/null
  done
}

# before_after_script DEFAULT_BEFORE NODES [ROUNDS] [BEFORE] [AFTER]: what a
# before/after script on NODES namespace nodes ($prefix) starts with: its
# arguments ($rounds, default 3; $before; $after, default HEAD), both sides
# built (build_before_after_on_nodes) and bench/node_ranks.sh sourced.
before_after_script() {
  local default_before=$1 nodes=$2
  rounds=${3:-3}
  before=${4:-$default_before}
  after=${5:-HEAD}
  build_before_after_on_nodes "$before" "$after" "$nodes" "$prefix"
  source "$repo/bench/node_ranks.sh"
}
