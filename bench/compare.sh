#!/usr/bin/env bash
# bench/compare.sh: time sipnab against tshark and sngrep on the same
# generated carrier capture, in one run, and print frames/s, the ratios and
# peak RSS. See bench/README.md.
#
# usage: bench/compare.sh [-p PRESET] [-s SEED] [-n RUNS] [-f CAPTURE]
#                         [-t TOOLS] [-o RESULTS.md] [-k]
#   -p PRESET   generator preset: small, carrier (default), memory
#   -s SEED     generator seed (default 1)
#   -n RUNS     timed runs per tool; the median is reported (default 5)
#   -f CAPTURE  time this existing capture instead of generating one
#   -t TOOLS    comma-separated subset of: sipnab,tshark,sngrep (default all)
#   -o FILE     also write the results table (Markdown) to FILE
#   -k          keep the temporary directory (binaries, capture, answers)
# environment:
#   SIPNAB=PATH time this sipnab binary instead of building ./cmd/sipnab
#   TSHARK=PATH, SNGREP=PATH  the peers' binaries (default: from PATH)
set -euo pipefail

preset=carrier seed=1 runs=5 capture="" tools="sipnab,tshark,sngrep" out="" keep=0
while getopts "p:s:n:f:t:o:kh" opt; do
  case $opt in
    p) preset=$OPTARG ;;
    s) seed=$OPTARG ;;
    n) runs=$OPTARG ;;
    f) capture=$OPTARG ;;
    t) tools=$OPTARG ;;
    o) out=$OPTARG ;;
    k) keep=1 ;;
    h) sed -n '2,19p' "$0"; exit 0 ;;
    *) sed -n '2,19p' "$0" >&2; exit 2 ;;
  esac
done
[[ $runs =~ ^[1-9][0-9]*$ ]] || { echo "compare.sh: -n wants a positive integer" >&2; exit 2; }

root=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/sipnab-bench.XXXXXX")
cleanup() { if [ "$keep" = 1 ]; then echo "kept $tmp" >&2; else rm -rf "$tmp"; fi; }
trap cleanup EXIT
log() { echo "compare.sh: $*" >&2; }
want() { [[ ",$tools," == *",$1,"* ]]; }

# --- the capture -------------------------------------------------------------
calls=""
if [ -z "$capture" ]; then
  log "building bench/cmd/gencapture"
  (cd "$root" && go build -o "$tmp/gencapture" ./bench/cmd/gencapture)
  capture=$tmp/$preset.pcap
  log "generating preset $preset, seed $seed"
  "$tmp/gencapture" -preset "$preset" -seed "$seed" -o "$capture" -answers "$tmp/$preset.json" >&2
  frames=$(sed -n 's/^    "frames": \([0-9]*\),*$/\1/p' "$tmp/$preset.json" | head -1)
  calls=$(sed -n 's/^    "calls": \([0-9]*\),*$/\1/p' "$tmp/$preset.json" | head -1)
elif command -v capinfos >/dev/null; then
  frames=$(capinfos -M -c -T "$capture" | awk -F'\t' 'NR==2{print $2}')
else
  frames=$(tshark -n -r "$capture" 2>/dev/null | wc -l)
fi
[ -n "$frames" ] && [ "$frames" -gt 0 ] || { log "cannot count the frames of $capture"; exit 1; }
size=$(stat -c %s "$capture")

# --- the contenders ----------------------------------------------------------
names=() cmds=()
add() { names+=("$1"); cmds+=("$2"); }
q() { printf '%q' "$1"; }

if want sipnab; then
  built=0
  if [ -n "${SIPNAB:-}" ]; then
    log "using SIPNAB=$SIPNAB"
    cp "$SIPNAB" "$tmp/sipnab" && built=1
  else
    log "building cmd/sipnab"
    (cd "$root" && go build -o "$tmp/sipnab" ./cmd/sipnab) 2>"$tmp/build.err" && built=1
  fi
  if [ "$built" = 1 ]; then
    sip="$(q "$tmp/sipnab") -N -I $(q "$capture") --json"
    if ! eval "$sip" </dev/null >"$tmp/sipnab.out" 2>"$tmp/sipnab.err"; then
      log "sipnab -N -I FILE --json fails on this capture; not timed:"
      tail -3 "$tmp/sipnab.err" >&2
    elif "$tmp/sipnab" --help 2>&1 | grep -qE -- '^ +--?cores\b'; then
      add "sipnab 1 core" "$sip --cores 1"
      add "sipnab 2 cores" "$sip --cores 2"
    else
      add "sipnab" "$sip"
      add "sipnab GOMAXPROCS=1" "env GOMAXPROCS=1 $sip"
    fi
  else
    log "cmd/sipnab does not build; not timed:"; tail -5 "$tmp/build.err" >&2
  fi
fi
tshark=${TSHARK:-tshark} sngrep=${SNGREP:-sngrep}
if want tshark; then
  if command -v "$tshark" >/dev/null; then
    add "tshark" "$(q "$tshark") -n -q -z rtp,streams -r $(q "$capture")"
  else
    log "tshark not installed (apt-get install -y tshark); not timed"
  fi
fi
if want sngrep; then
  if command -v "$sngrep" >/dev/null; then
    add "sngrep" "$(q "$sngrep") -NqI $(q "$capture")"
  else
    log "sngrep not installed (apt-get install -y sngrep); not timed"
  fi
fi
[ ${#names[@]} -gt 0 ] || { log "nothing to time"; exit 1; }

# --- timing ------------------------------------------------------------------
# Every command runs with stdin and stdout on /dev/null: sngrep -N needs no
# terminal that way, and printing is not what we measure.
declare -A median cpu rss
load=$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo unknown)
median_of() { sort -g | awk '{a[NR]=$1} END{ if (NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2 }'; }

if command -v hyperfine >/dev/null; then
  args=()
  for i in "${!names[@]}"; do args+=(-n "${names[$i]}" "${cmds[$i]} </dev/null >/dev/null 2>&1"); done
  log "timing with hyperfine: $runs runs each after one warm-up"
  hyperfine --style basic --warmup 1 --runs "$runs" --export-csv "$tmp/times.csv" "${args[@]}" >&2
  # command,mean,stddev,median,user,system,min,max
  while IFS=, read -r name _mean _sd med user sys _rest; do
    [ "$name" = command ] && continue
    median[$name]=$med
    cpu[$name]=$(awk -v u="$user" -v s="$sys" 'BEGIN{printf "%.3f", u+s}')
  done <"$tmp/times.csv"
else
  log "hyperfine not installed (apt-get install -y hyperfine); timing with a loop of /usr/bin/time"
  for i in "${!names[@]}"; do
    : >"$tmp/t.$i"
    for _ in $(seq "$runs"); do
      /usr/bin/time -f "%e %U %S" -o "$tmp/one" bash -c "${cmds[$i]} </dev/null >/dev/null 2>&1"
      cat "$tmp/one" >>"$tmp/t.$i"
    done
    median[${names[$i]}]=$(awk '{print $1}' "$tmp/t.$i" | median_of)
    cpu[${names[$i]}]=$(awk '{print $2+$3}' "$tmp/t.$i" | median_of)
  done
fi

for i in "${!names[@]}"; do
  if [ -x /usr/bin/time ]; then
    /usr/bin/time -v -o "$tmp/rss.$i" bash -c "exec ${cmds[$i]} </dev/null >/dev/null 2>&1" || true
    rss[${names[$i]}]=$(awk -F': ' '/Maximum resident set size/{print $2}' "$tmp/rss.$i")
  else
    rss[${names[$i]}]=""
  fi
done

# The baseline for RSS per call: the first sipnab row on a one-call capture.
baseline=""
base_cmd=""
for i in "${!names[@]}"; do case ${names[$i]} in sipnab*) base_cmd=${cmds[$i]}; break ;; esac; done
if [ -n "$base_cmd" ] && [ -n "$calls" ] && [ -x "$tmp/gencapture" ] && [ -x /usr/bin/time ]; then
  "$tmp/gencapture" -preset small -calls 1 -duration 1s -registers 0 -seed "$seed" -o "$tmp/one.pcap" >/dev/null 2>&1 &&
    /usr/bin/time -v -o "$tmp/rss.one" bash -c "exec ${base_cmd//$(q "$capture")/$(q "$tmp/one.pcap")} </dev/null >/dev/null 2>&1" &&
    baseline=$(awk -F': ' '/Maximum resident set size/{print $2}' "$tmp/rss.one")
fi

# --- report ------------------------------------------------------------------
base=""
for n in "${names[@]}"; do case $n in sipnab*) base=$n; break ;; esac; done
{
  echo "capture: $(basename "$capture"), $frames frames, $size bytes$( [ -n "$calls" ] && echo ", preset $preset ($calls calls), seed $seed")"
  echo "host: $(nproc) cores, $(uname -sr), load average before timing: $load; median of $runs runs$(command -v hyperfine >/dev/null && echo ' (hyperfine)')"
  echo
  echo "| tool | command | median s | frames/s | CPU s | frames/CPU-s | peak RSS MiB |$( [ -n "$base" ] && echo " $base speedup (wall) | $base speedup (CPU) |")"
  echo "|---|---|---:|---:|---:|---:|---:|$( [ -n "$base" ] && echo '---:|---:|')"
  for i in "${!names[@]}"; do
    n=${names[$i]}
    shown=${cmds[$i]//$tmp\//}
    fps=$(awk -v f="$frames" -v t="${median[$n]}" 'BEGIN{ if (t>0) printf "%.0f", f/t; else print "n/a" }')
    fpc=$(awk -v f="$frames" -v t="${cpu[$n]}" 'BEGIN{ if (t>0) printf "%.0f", f/t; else print "n/a" }')
    mib=$(awk -v k="${rss[$n]}" 'BEGIN{ if (k>0) printf "%.1f", k/1024; else print "n/a" }')
    ratio=""
    if [ -n "$base" ]; then
      ratio=" $(awk -v t="${median[$n]}" -v b="${median[$base]}" 'BEGIN{ if (b>0) printf "%.2fx", t/b; else print "n/a" }') |"
      ratio+=" $(awk -v t="${cpu[$n]}" -v b="${cpu[$base]}" 'BEGIN{ if (b>0) printf "%.2fx", t/b; else print "n/a" }') |"
    fi
    printf '| %s | `%s` | %.3f | %s | %s | %s | %s |%s\n' "$n" "$shown" "${median[$n]}" "$fps" "${cpu[$n]}" "$fpc" "$mib" "$ratio"
  done
  if [ -n "$base" ] && [ -n "$calls" ] && [ -n "${rss[$base]}" ]; then
    echo
    awk -v k="${rss[$base]}" -v c="$calls" -v n="$base" 'BEGIN{ printf "%s peak RSS per INVITE dialog: %.1f KiB (%d calls)\n", n, k/c, c }'
    if [ -n "$baseline" ]; then
      awk -v k="${rss[$base]}" -v b="$baseline" -v c="$calls" -v n="$base" 'BEGIN{ printf "%s peak RSS per INVITE dialog above the %.1f MiB of a one-call capture: %.1f KiB\n", n, b/1024, (k-b)/c }'
    fi
  fi
  if [ -z "$base" ]; then
    echo
    echo "sipnab was not timed (see the messages above); the peers' numbers stand alone."
  fi
} | tee "$tmp/results.md"
if [ -n "$out" ]; then cp "$tmp/results.md" "$out"; fi
exit 0
