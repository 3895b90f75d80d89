#!/usr/bin/env bash
# bench/cores.sh: does `sipnab --cores N` help, and does it give the same
# answers? For each workload it checks that the --json-run document is the
# same on every core count (elapsed time and instance id aside), then times
# the core counts interleaved (1 2 4 2 4 1 4 1 2 ...: every count once a
# round, the order rotated each round) and prints medians of CPU
# time (user+sys) and wall time, peak RSS and the load average of every run.
# Run it on a machine with idle cores: on a box whose cores are busy a second
# thread finds no core to run on. See bench/README.md ("Cores").
#
# usage: bench/cores.sh [-p PRESETS] [-s SEED] [-n ROUNDS] [-c CORES]
#                       [-b BASELINE] [-f CAPTURE] [-o RESULTS.md] [-k] [-d]
#   -p PRESETS  comma-separated generator presets, one table each:
#               carrier, signaling (default both), small, memory
#   -s SEED     generator seed (default 1)
#   -n ROUNDS   interleaved rounds; every core count runs once per round
#               (default 5)
#   -c CORES    comma-separated core counts (default 1,2, plus 4 and 8 when
#               the machine has that many)
#   -b BASELINE also time this sipnab binary (e.g. built from main) at every
#               core count, interleaved with the one under test (baseline
#               then sipnab, each count, each round); its document must
#               equal the others'
#   -f CAPTURE  time this existing capture instead of generating
#   -o FILE     also write the results tables (Markdown) to FILE
#   -k          keep the temporary directory (binaries, captures, outputs)
#   -d          dry run: print the interleaved schedule and exit
# environment:
#   SIPNAB=PATH time this sipnab binary instead of building ./cmd/sipnab
set -euo pipefail

presets=carrier,signaling seed=1 rounds=5 cores="" capture="" out="" keep=0 dry=0 baseline=""
while getopts "p:s:n:c:b:f:o:kdh" opt; do
  case $opt in
    p) presets=$OPTARG ;;
    s) seed=$OPTARG ;;
    n) rounds=$OPTARG ;;
    c) cores=$OPTARG ;;
    b) baseline=$OPTARG ;;
    f) capture=$OPTARG ;;
    o) out=$OPTARG ;;
    k) keep=1 ;;
    d) dry=1 ;;
    h) sed -n '2,28p' "$0"; exit 0 ;;
    *) sed -n '2,28p' "$0" >&2; exit 2 ;;
  esac
done
log() { echo "cores.sh: $*" >&2; }
die() { log "$*"; exit 1; }
[[ $rounds =~ ^[1-9][0-9]*$ ]] || { log "-n wants a positive integer"; exit 2; }
ncpu=$(nproc)
if [ -z "$cores" ]; then
  cores=1,2
  for c in 4 8; do [ "$ncpu" -ge "$c" ] && cores+=",$c"; done
fi
IFS=, read -r -a counts <<<"$cores"
for c in "${counts[@]}"; do
  [[ $c =~ ^[1-9][0-9]*$ ]] || { log "-c: $c is not a positive core count"; exit 2; }
done
if [ -n "$capture" ]; then workloads=(file); else IFS=, read -r -a workloads <<<"$presets"; fi
for w in "${workloads[@]}"; do
  case $w in file|small|carrier|memory|signaling) ;; *) log "-p: unknown preset $w"; exit 2 ;; esac
done

if [ -n "$baseline" ] && [ ! -x "$baseline" ]; then log "-b: $baseline is not an executable"; exit 2; fi

# The runs of a round: "b<N>" is the baseline on N cores, "<N>" sipnab.
keys=()
for c in "${counts[@]}"; do
  if [ -n "$baseline" ]; then keys+=("b$c"); fi
  keys+=("$c")
done
# round_keys R: the keys in round R's order, rotated by one place a round,
# so that no run always comes first or always follows the same other run
# (on a busy box the place in a round shows in the wall time).
round_keys() {
  local n=${#keys[@]} i
  for ((i = 0; i < n; i++)); do echo "${keys[$(((i + $1 - 1) % n))]}"; done
}
label() { if [ "${1#b}" != "$1" ]; then echo "baseline --cores ${1#b}"; else echo "sipnab --cores $1"; fi; }

if [ "$dry" = 1 ]; then
  for w in "${workloads[@]}"; do
    for r in $(seq "$rounds"); do
      for k in $(round_keys "$r"); do echo "$w round $r: $(label "$k")"; done
    done
  done
  exit 0
fi

# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
bench_setup sipnab-cores cmp
bench_sipnab
bin=$tmp/sipnab
version=$sipnab_version
if [ -n "$baseline" ]; then
  cp "$baseline" "$tmp/baseline"
  "$tmp/baseline" --help >"$tmp/baseline.help" 2>&1 || true
  grep -qE -- '^ +--cores\b' "$tmp/baseline.help" || die "$baseline --help lists no --cores; the script times --cores"
  version+="; baseline: $baseline"
fi
# binof KEY: the binary a run key times.
binof() { if [ "${1#b}" != "$1" ]; then echo "$tmp/baseline"; else echo "$bin"; fi; }

# The document without what differs between any two runs: the elapsed time
# and the instance id.
normalize() { jq -S 'walk(if type == "object" then del(.elapsed_sec, .instance) else . end)' "$1"; }

: >"$tmp/results.md"
for w in "${workloads[@]}"; do
  if [ "$w" = file ]; then
    cap=$capture
    [ -r "$cap" ] || die "cannot read $cap"
    desc=$(basename "$cap")
  else
    bench_generate "$w"
    cap=$tmp/$w.pcap
    desc="preset $w, seed $seed: $(jq -e '.capture.frames' "$tmp/$w.json") frames, $(jq -e '.capture.sip_messages' "$tmp/$w.json") SIP messages, $(jq -e '.counts.call_ids' "$tmp/$w.json") dialogs, $(jq -e '.counts.streams' "$tmp/$w.json") RTP streams"
  fi

  # --- one untimed run per binary and core count: the same document on every one
  for k in "${keys[@]}"; do
    log "$w: checking $(label "$k")"
    rc=0; "$(binof "$k")" -N -I "$cap" --json-run --cores "${k#b}" </dev/null >"$tmp/doc.$k.json" 2>"$tmp/doc.$k.err" || rc=$?
    [ "$rc" = 0 ] || { tail -5 "$tmp/doc.$k.err" >&2; die "$w: $(label "$k") exited $rc; refusing to time it"; }
    normalize "$tmp/doc.$k.json" >"$tmp/norm.$k.json" || die "$w: $(label "$k"): --json-run output does not parse"
    if [ "$k" != "${keys[0]}" ]; then
      cmp -s "$tmp/norm.${keys[0]}.json" "$tmp/norm.$k.json" ||
        die "$w: the --json-run document of $(label "$k") differs from $(label "${keys[0]}") (kept with -k: $tmp/norm.*.json)"
    fi
    rm -f "$tmp/doc.$k.json"
  done
  rm -f "$tmp"/norm.*.json

  # --- timed runs, interleaved ---------------------------------------------------
  for k in "${keys[@]}"; do : >"$tmp/t.$w.$k"; done
  : >"$tmp/load.$w"
  for r in $(seq "$rounds"); do
    for k in $(round_keys "$r"); do
      bench_run "$w" "$r" "$(label "$k")" "$k" "$(binof "$k")" -N -I "$cap" --json-run --cores "${k#b}"
    done
  done

  declare -A wallm cpum rssm
  for k in "${keys[@]}"; do bench_medians "$w" "$k"; done
  b=${keys[0]}
  bl="--cores ${b#b}"; [ "$b" = "${b#b}" ] || bl="baseline $bl"
  loadsum=$(sort -g "$tmp/load.$w" | awk '{a[NR]=$1} END{ m = (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2; printf "min %.2f, median %.2f, max %.2f", a[1], m, a[NR] }')
  {
    echo "#### $w: $desc"
    echo
    echo "$(date -u '+%Y-%m-%d %H:%M UTC'); $ncpu cores, $(uname -sr); medians of $rounds interleaved rounds; 1-minute load average over the runs: $loadsum. The --json-run document is the same on every core count${baseline:+ and from both binaries}."
    echo
    echo "| --cores | command | CPU s | wall s | peak RSS MiB | CPU ÷ $bl | wall speedup over $bl |"
    echo "|---:|---|---:|---:|---:|---:|---:|"
    for k in "${keys[@]}"; do
      c=${k#b} note="" name=sipnab
      [ "$k" = "$c" ] || name=baseline
      [ "$c" -gt "$ncpu" ] && note=" (more than the $ncpu cores here)"
      printf '| %s%s | `%s -N -I %s --json-run --cores %s` | %.3f | %.3f | %.1f | %s | %s |\n' "$c" "$note" "$name" "$(basename "$cap")" "$c" \
        "${cpum[$k]}" "${wallm[$k]}" "$(awk -v k="${rssm[$k]}" 'BEGIN{print k/1024}')" \
        "$(awk -v t="${cpum[$k]}" -v b="${cpum[$b]}" 'BEGIN{ if (b>0) printf "%.2fx", t/b; else print "n/a" }')" \
        "$(awk -v t="${wallm[$k]}" -v b="${wallm[$b]}" 'BEGIN{ if (t>0) printf "%.2fx", b/t; else print "n/a" }')"
    done
    echo
    echo "Runs (round: wall/CPU s (load) per core count):"
    echo
    for r in $(seq "$rounds"); do
      line="- $r:"
      for k in "${keys[@]}"; do
        lb="--cores ${k#b}"; [ "$k" = "${k#b}" ] || lb="baseline $lb"
        line+=" $(awk -v r="$r" 'NR==r{printf "%.2f/%.2f (%.1f)", $1, $2+$3, $5}' "$tmp/t.$w.$k") $lb;"
      done
      echo "${line%;}"
    done
    echo
  } | tee -a "$tmp/results.md"
  unset wallm cpum rssm
  if [ "$w" != file ]; then rm -f "$cap"; fi
done
echo "Binary: $version" | tee -a "$tmp/results.md"
if [ -n "$out" ]; then cp "$tmp/results.md" "$out"; fi
