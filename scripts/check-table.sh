#!/usr/bin/env bash
# The table of docs/check.md: for every algorithm of `distsync list`, what `distsync check`
# proves at a small size (states, depth, time) and what each fault does to it.
#
#   scripts/check-table.sh [path/to/distsync]      (default: target/release/distsync)
#
# Needs jq. Each fault column is one more exploration with that fault alone (bounded at
# 2,000,000 states, 5 minutes): "holds" (proved), the property it breaks, or "bound" (no
# conclusion). The last column explores the baseline again with --symmetry: its states, or
# "refused" where processes are not interchangeable.
set -euo pipefail
bin=${1:-target/release/distsync}

# name nodes requests fifo(yes/no) [extra flags]
rows=(
  "central 3 1 no"
  "lamport-mutex 3 1 yes"
  "ricart-agrawala 3 2 no"
  "token-ring 3 1 no"
  "ricart-agrawala-token 3 1 no"
  "suzuki-kasami 3 1 no"
  "raymond 3 1 no"
  "maekawa 3 1 no"
  "maekawa-basic 3 1 no"
  "singhal 3 1 no"
  "singhal-token 3 1 no"
  "majority-vote 2 1 no"
  "bully 3 - no"
  "ring 3 - yes"
  "chang-roberts 3 - yes"
  "ring-active-list 3 - yes"
  "peterson 3 - yes"
  "fifo-broadcast 3 1 no"
  "causal-broadcast 3 1 no"
  "total-order-multicast 2 2 yes"
  "chandy-lamport 3 1 yes"
)

run() { # algo nodes requests fifo flags... -> JSON on stdout
  local algo=$1 nodes=$2 req=$3 fifo=$4; shift 4
  local args=(check --algo "$algo" --nodes "$nodes" --json --max-states 2000000)
  [[ $req != - ]] && args+=(--requests "$req")
  [[ $fifo == no ]] && args+=(--no-fifo)
  timeout 300 "$bin" "${args[@]}" "$@" 2>/dev/null || true
}

verdict() { # JSON -> "holds" | property | "bound" | "refused" (no JSON: an input error)
  local v
  v=$(jq -r 'if .result == "proved" then "holds"
             elif .result == "violation" then .violation.property
             elif .result == null then "refused"
             else "bound" end' 2>/dev/null || true)
  echo "${v:-refused}"
}

echo "| algorithm | N | R | links | result | states | depth | time | --crash 1 | --loss 1 | --duplicate 1 | --partition | --symmetry |"
echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
for row in "${rows[@]}"; do
  read -r algo nodes req fifo <<<"$row"
  base=$(run "$algo" "$nodes" "$req" "$fifo")
  result=$(jq -r 'if .result == "violation" then "\(.violation.property) violated" else .result end' <<<"$base")
  states=$(jq -r '.states' <<<"$base")
  depth=$(jq -r '.depth' <<<"$base")
  ms=$(jq -r '.elapsed_ms | floor' <<<"$base")
  cols=()
  for fault in "--crash 1" "--loss 1" "--duplicate 1" "--partition"; do
    # shellcheck disable=SC2086
    cols+=("$(run "$algo" "$nodes" "$req" "$fifo" $fault | verdict)")
  done
  sym=$(run "$algo" "$nodes" "$req" "$fifo" --symmetry |
    jq -r 'if .result == "proved" then "\(.states) states"
           elif .result == "violation" then "\(.violation.property) (\(.states) states)"
           else .result end' 2>/dev/null || true)
  [[ -z $sym ]] && sym=refused
  links=$([[ $fifo == yes ]] && echo FIFO || echo non-FIFO)
  echo "| \`$algo\` | $nodes | $req | $links | $result | $states | $depth | $ms ms | ${cols[0]} | ${cols[1]} | ${cols[2]} | ${cols[3]} | $sym |"
done
for algo in cristian ntp berkeley; do
  echo "| \`$algo\` | - | - | - | refused: clock readings are continuous (see above) | | | | | | | | |"
done

# The intended breaks of issue 13: each must be found (and nothing else breaks the baselines
# above, whose result column must read "proved" but for maekawa-basic).
echo
echo "| intended break | command | found | steps | states |"
echo "| --- | --- | --- | --- | --- |"
breaks=(
  "Lamport on non-FIFO links|--algo lamport-mutex --nodes 2 --no-fifo"
  "maekawa-basic's deadlock|--algo maekawa-basic --nodes 3 --no-fifo"
  "bully's two leaders under a partition|--algo bully --nodes 3 --partition"
  "fifo-broadcast's causal violation|--algo fifo-broadcast --nodes 3 --no-fifo --order causal"
)
for b in "${breaks[@]}"; do
  what=${b%%|*}
  flags=${b#*|}
  # shellcheck disable=SC2086
  out=$(timeout 300 "$bin" check $flags --json 2>/dev/null || true)
  found=$(jq -r 'if .result == "violation" then .violation.property else .result end' <<<"$out")
  steps=$(jq -r '.violation.steps | map(select(.step > 0)) | length' <<<"$out" 2>/dev/null || echo -)
  states=$(jq -r '.states' <<<"$out")
  echo "| $what | \`distsync check $flags\` | $found | $steps | $states |"
done
