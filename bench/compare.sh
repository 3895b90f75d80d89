#!/usr/bin/env bash
# bench/compare.sh: time sipnab against tshark and sngrep on the same
# generated captures, runs interleaved (A B C A B C ...), and print medians of
# CPU time (user+sys) and wall time, peak RSS and the load average of every
# run. See bench/README.md.
#
# usage: bench/compare.sh [-p PRESETS] [-s SEED] [-n ROUNDS] [-f CAPTURE]
#                         [-t TOOLS] [-o RESULTS.md] [-k] [-d]
#   -p PRESETS  comma-separated generator presets, one table each:
#               carrier, signaling (default both), small, memory
#   -s SEED     generator seed (default 1)
#   -n ROUNDS   interleaved rounds; every row runs once per round (default 5)
#   -f CAPTURE  time this existing capture instead of generating (no answers:
#               sipnab's dialog count is then only reported, not checked)
#   -t TOOLS    comma-separated subset of: sipnab,tshark,sngrep (default all)
#   -o FILE     also write the results tables (Markdown) to FILE
#   -k          keep the temporary directory (binaries, captures, outputs)
#   -d          dry run: print the interleaved schedule and exit
# environment:
#   SIPNAB=PATH time this sipnab binary instead of building ./cmd/sipnab
#   TSHARK=PATH, SNGREP=PATH  the peers' binaries (default: from PATH)
set -euo pipefail

presets=carrier,signaling seed=1 rounds=5 capture="" tools="sipnab,tshark,sngrep" out="" keep=0 dry=0
while getopts "p:s:n:f:t:o:kdh" opt; do
  case $opt in
    p) presets=$OPTARG ;;
    s) seed=$OPTARG ;;
    n) rounds=$OPTARG ;;
    f) capture=$OPTARG ;;
    t) tools=$OPTARG ;;
    o) out=$OPTARG ;;
    k) keep=1 ;;
    d) dry=1 ;;
    h) sed -n '2,22p' "$0"; exit 0 ;;
    *) sed -n '2,22p' "$0" >&2; exit 2 ;;
  esac
done
log() { echo "compare.sh: $*" >&2; }
die() { log "$*"; exit 1; }
[[ $rounds =~ ^[1-9][0-9]*$ ]] || { log "-n wants a positive integer"; exit 2; }
want() { [[ ",$tools," == *",$1,"* ]]; }
for t in ${tools//,/ }; do
  case $t in sipnab|tshark|sngrep) ;; *) log "-t: unknown tool $t"; exit 2 ;; esac
done
if [ -n "$capture" ]; then workloads=(file); else IFS=, read -r -a workloads <<<"$presets"; fi
for w in "${workloads[@]}"; do
  case $w in file|small|carrier|memory|signaling) ;; *) log "-p: unknown preset $w"; exit 2 ;; esac
done

# The rows of a workload, in schedule order. tshark's statistic follows the
# workload: sip,stat where there is no media, rtp,streams where there is.
rows_of() { # workload -> lines "name<TAB>kind"
  if want sipnab; then printf 'sipnab 1 core\tsipnab\nsipnab 2 cores\tsipnab\n'; fi
  if want tshark; then
    if [ "$1" = signaling ]; then printf 'tshark sip,stat\ttshark-sip\n'; else printf 'tshark rtp,streams\ttshark-rtp\n'; fi
  fi
  if want sngrep; then printf 'sngrep\tsngrep\n'; fi
}

if [ "$dry" = 1 ]; then
  for w in "${workloads[@]}"; do
    mapfile -t rows < <(rows_of "$w")
    for r in $(seq "$rounds"); do
      for row in "${rows[@]}"; do echo "$w round $r: ${row%%$'\t'*}"; done
    done
  done
  exit 0
fi

# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
bench_setup sipnab-bench

# --- the binaries: each resolved once, refused when missing ------------------
sipnab_bin="" tshark_bin="" sngrep_bin="" versions=()
if want sipnab; then
  bench_sipnab
  versions+=("$sipnab_version")
  sipnab_bin=$tmp/sipnab
fi
if want tshark; then
  tshark_bin=$(command -v "${TSHARK:-tshark}") || die "tshark not found (apt-get install -y tshark, or TSHARK=PATH); refusing to run without it (-t to leave it out)"
  "$tshark_bin" --version >"$tmp/tshark.version" 2>&1 || die "$tshark_bin --version fails"
  versions+=("tshark: $tshark_bin, $(sed -n '/^TShark/{s/ (Git.*//;p;q}' "$tmp/tshark.version")")
fi
if want sngrep; then
  sngrep_bin=$(command -v "${SNGREP:-sngrep}") || die "sngrep not found (apt-get install -y sngrep, or SNGREP=PATH); refusing to run without it (-t to leave it out)"
  "$sngrep_bin" -V >"$tmp/sngrep.version" 2>&1 || die "$sngrep_bin -V fails"
  versions+=("sngrep: $sngrep_bin, $(sed -n '1{p;q}' "$tmp/sngrep.version")")
fi

cmd_of() { # kind capture -> the command line
  case $1 in
    sipnab) echo "$(q "$sipnab_bin") -N -I $(q "$2") --json-run --cores $3" ;;
    tshark-sip) echo "$(q "$tshark_bin") -n -q -z sip,stat -r $(q "$2")" ;;
    tshark-rtp) echo "$(q "$tshark_bin") -n -q -z rtp,streams -r $(q "$2")" ;;
    # -l: sngrep keeps 20,000 dialogs by default and signaling holds 21,000.
    sngrep) echo "$(q "$sngrep_bin") -NqI $(q "$2") -l 100000" ;;
  esac
}

# check kind output-file -> empty when the output is what the mode produces,
# else the reason. Expectations: exp_dialogs, exp_sip, exp_streams ("" = unknown).
check() {
  local f=$2 n
  case $1 in
    sipnab)
      n=$(jq -e '.dialogs | length' "$f" 2>/dev/null) || { echo "--json-run output does not parse or has no dialogs[]"; return; }
      [ -z "$exp_dialogs" ] || [ "$n" = "$exp_dialogs" ] || { echo "--json-run holds $n dialogs, the answers $exp_dialogs"; return; }
      if [ -n "$exp_streams" ]; then
        n=$(jq '.streams | length' "$f")
        [ "$n" = "$exp_streams" ] || echo "--json-run holds $n streams, the answers $exp_streams"
      fi ;;
    tshark-sip)
      grep -q '^SIP Statistics' "$f" || { echo "no 'SIP Statistics' table"; return; }
      n=$(sed -n 's/^Number of SIP messages: \([0-9]*\).*/\1/p' "$f")
      [ -z "$exp_sip" ] || [ "$n" = "$exp_sip" ] || echo "counted ${n:-no} SIP messages, the answers $exp_sip" ;;
    tshark-rtp)
      grep -q '= RTP Streams =' "$f" || { echo "no 'RTP Streams' table"; return; }
      n=$(grep -cE ' 0x[0-9A-Fa-f]{8} ' "$f" || true)
      [ -z "$exp_streams" ] || [ "$n" = "$exp_streams" ] || echo "listed $n streams, the answers $exp_streams" ;;
    sngrep)
      # the check run drops -q, so sngrep prints "Dialog count: N" (last one counts)
      n=$(grep -o 'Dialog count: [0-9]*' "$f" | sed -n '$s/.*: //p' || true)
      [ -n "$n" ] || { echo "printed no dialog count"; return; }
      [ -z "$exp_dialogs" ] || [ "$n" = "$exp_dialogs" ] || echo "counted $n dialogs, the answers $exp_dialogs" ;;
  esac
}

: >"$tmp/results.md"
for w in "${workloads[@]}"; do
  # --- the capture and what it should produce --------------------------------
  exp_dialogs="" exp_sip="" exp_streams="" calls=""
  if [ "$w" = file ]; then
    cap=$capture
    [ -r "$cap" ] || die "cannot read $cap"
    command -v capinfos >/dev/null || die "capinfos is missing (apt-get install -y tshark); it counts the frames of -f"
    frames=$(capinfos -M -c -T "$cap" | awk -F'\t' 'NR==2{print $2}')
    desc="$(basename "$cap")"
  else
    bench_generate "$w"
    cap=$tmp/$w.pcap
    frames=$(jq -e '.capture.frames' "$tmp/$w.json")
    exp_sip=$(jq -e '.capture.sip_messages' "$tmp/$w.json")
    exp_dialogs=$(jq -e '.counts.call_ids' "$tmp/$w.json")
    exp_streams=$(jq -e '.counts.streams' "$tmp/$w.json")
    calls=$(jq -e '.counts.dialogs_by_method.INVITE // 0' "$tmp/$w.json")
    desc="preset $w, seed $seed: $exp_sip SIP messages, $exp_dialogs dialogs ($calls INVITE), $exp_streams RTP streams"
  fi
  [ -n "$frames" ] && [ "$frames" -gt 0 ] || die "cannot count the frames of $cap"
  size=$(stat -c %s "$cap")

  names=() kinds=() cmds=()
  while IFS=$'\t' read -r name kind; do
    names+=("$name") kinds+=("$kind")
    case $name in
      "sipnab 1 core") cmds+=("$(cmd_of "$kind" "$cap" 1)") ;;
      "sipnab 2 cores") cmds+=("$(cmd_of "$kind" "$cap" 2)") ;;
      *) cmds+=("$(cmd_of "$kind" "$cap")") ;;
    esac
  done < <(rows_of "$w")
  [ ${#names[@]} -gt 0 ] || die "nothing to time"

  # --- one untimed run each: exit status and output checked -------------------
  for i in "${!names[@]}"; do
    c=${cmds[$i]}
    [ "${kinds[$i]}" = sngrep ] && c=${c/ -NqI / -NI }
    log "$w: checking ${names[$i]}: $c"
    rc=0; bash -c "exec $c" </dev/null >"$tmp/check.$i.out" 2>"$tmp/check.$i.err" || rc=$?
    [ "$rc" = 0 ] || { tail -5 "$tmp/check.$i.err" >&2; die "$w: ${names[$i]} exited $rc; refusing to time it"; }
    why=$(check "${kinds[$i]}" "$tmp/check.$i.out")
    [ -z "$why" ] || die "$w: ${names[$i]}: $why; refusing to time it"
    rm -f "$tmp/check.$i.out"
  done

  # --- timed runs, interleaved: round r runs every row once, in order ---------
  for i in "${!names[@]}"; do : >"$tmp/t.$w.$i"; done
  : >"$tmp/load.$w"
  for r in $(seq "$rounds"); do
    for i in "${!names[@]}"; do
      bench_run "$w" "$r" "${names[$i]}" "$i" bash -c "exec ${cmds[$i]}"
    done
  done

  # --- the table -----------------------------------------------------------------
  declare -A wallm cpum rssm
  for i in "${!names[@]}"; do bench_medians "$w" "$i"; done
  loadsum=$(sort -g "$tmp/load.$w" | awk '{a[NR]=$1} END{ m = (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2; printf "min %.2f, median %.2f, max %.2f", a[1], m, a[NR] }')
  base=""
  for i in "${!names[@]}"; do [ "${kinds[$i]}" = sipnab ] && { base=$i; break; }; done
  {
    echo "#### $w: $(basename "$cap"), $frames frames, $size bytes; $desc"
    echo
    echo "$(date -u '+%Y-%m-%d %H:%M UTC'); $(nproc) cores, $(uname -sr); medians of $rounds interleaved rounds; 1-minute load average over the $(wc -l <"$tmp/load.$w") runs: $loadsum"
    echo
    echo "| tool | command | CPU s | wall s | frames/CPU-s | peak RSS MiB |$( [ -n "$base" ] && echo " ${names[$base]}: CPU × | wall × |")"
    echo "|---|---|---:|---:|---:|---:|$( [ -n "$base" ] && echo '---:|---:|')"
    for i in "${!names[@]}"; do
      shown=${cmds[$i]//$tmp\//}
      fpc=$(awk -v f="$frames" -v t="${cpum[$i]}" 'BEGIN{ if (t>0) printf "%.0f", f/t; else print "n/a" }')
      ratio=""
      if [ -n "$base" ]; then
        ratio=" $(awk -v t="${cpum[$i]}" -v b="${cpum[$base]}" 'BEGIN{ if (b>0) printf "%.2fx", t/b; else print "n/a" }') |"
        ratio+=" $(awk -v t="${wallm[$i]}" -v b="${wallm[$base]}" 'BEGIN{ if (b>0) printf "%.2fx", t/b; else print "n/a" }') |"
      fi
      printf '| %s | `%s` | %.3f | %.3f | %s | %.1f |%s\n' "${names[$i]}" "$shown" "${cpum[$i]}" "${wallm[$i]}" "$fpc" "$(awk -v k="${rssm[$i]}" 'BEGIN{print k/1024}')" "$ratio"
    done
    if [ -n "$base" ] && [ -n "$exp_dialogs" ] && [ "$exp_dialogs" -gt 0 ]; then
      echo
      awk -v k="${rssm[$base]}" -v d="$exp_dialogs" -v c="$calls" -v n="${names[$base]}" \
        'BEGIN{ printf "%s: peak RSS %.1f KiB per dialog (%d dialogs), %.1f KiB per INVITE call (%d)\n", n, k/d, d, (c>0 ? k/c : 0), c }'
      if [ "$exp_sip" = "$frames" ]; then
        awk -v c="${cpum[$base]}" -v m="$exp_sip" -v n="${names[$base]}" 'BEGIN{ printf "%s: %.2f µs of CPU per SIP message (every frame is one)\n", n, c*1e6/m }'
      fi
    fi
    echo
    echo "Runs (round: tool wall/CPU s, load):"
    echo
    for r in $(seq "$rounds"); do
      line="- $r:"
      for i in "${!names[@]}"; do
        line+=" $(awk -v r="$r" 'NR==r{printf "%.2f/%.2f (%.1f)", $1, $2+$3, $5}' "$tmp/t.$w.$i") ${names[$i]};"
      done
      echo "${line%;}"
    done
    echo
  } | tee -a "$tmp/results.md"
  unset wallm cpum rssm
  # a generated capture is not needed past its table; -f's capture is the user's
  if [ "$w" != file ]; then rm -f "$cap"; fi
done
{
  echo "Binaries:"
  for v in "${versions[@]}"; do echo "- $v"; done
} | tee -a "$tmp/results.md"
if [ -n "$out" ]; then cp "$tmp/results.md" "$out"; fi
