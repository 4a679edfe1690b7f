#!/bin/bash
# Paper 001 acceptance runs (spec qos-and-sharing.md A.10) on the NASA iPSC/860 log, each
# one JSON document in OUT; then `python benchmarks/qos_acceptance.py OUT` checks them.
#   bash benchmarks/qos_acceptance.sh OUT [TRACE [extra qos options, e.g. --processors 512]]
# About 10 minutes on one free core (9 sweeps with DVQoPS, one Table 2 sweep).
set -e
OUT=${1:?usage: qos_acceptance.sh OUT [TRACE [options]]}
TRACE=${2:-$(dirname "$0")/../../shared/data/NASA-iPSC-1993-3.1-cln.swf.gz}
shift; [ $# -gt 0 ] && shift
EXTRA=("$@")
mkdir -p "$OUT"
S="${PYTHON:-python} -m stratus.app.cli"
for seed in 1 2 3; do
  for mix in "0.2 10" "0.5 10" "0.8 2"; do
    read -r U C <<< "$mix"
    $S qos sweep --trace "$TRACE" --dup-fracs 0.9 --urgent-fracs "$U" --urgent-costs "$C" \
      --seed $seed --json "${EXTRA[@]}" > "$OUT/sweep_s${seed}_U${U}_C${C}.json"
  done
done
$S qos sweep --trace "$TRACE" --dup-fracs 0.9 --urgent-fracs 0.8 --urgent-costs 2 --ocs 0.2,0.4 \
  --schemes vqops --oc-tie accept --seed 1 --json "${EXTRA[@]}" > "$OUT/tie_accept.json"
$S qos sweep --trace "$TRACE" --dup-fracs 1.7 --urgent-fracs 0.5 --urgent-costs 10 \
  --schemes dvqops --dv-fixed-windows 1,4,16,32,64,128 --seed 1 --json "${EXTRA[@]}" \
  > "$OUT/table2.json"
