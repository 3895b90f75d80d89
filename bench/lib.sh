# bench/lib.sh: what compare.sh and cores.sh share. Sourced after the
# script's options are read and its log/die are defined; it reads $keep and
# sets $root, $tmp and (bench_sipnab) $sipnab_version.

# bench_setup PREFIX: the repository root, a temporary directory removed at
# exit unless -k, and the tools every timing needs (refused when missing).
bench_setup() {
  root=$(cd "$(dirname "$0")/.." && pwd)
  tmp=$(mktemp -d "${TMPDIR:-/tmp}/$1.XXXXXX")
  trap bench_cleanup EXIT
  [ -x /usr/bin/time ] || die "/usr/bin/time is missing (apt-get install -y time); refusing to time"
  local c
  for c in jq awk sort "${@:2}"; do command -v "$c" >/dev/null || die "$c is missing; refusing to run"; done
}
bench_cleanup() { if [ "$keep" = 1 ]; then echo "kept $tmp" >&2; else rm -rf "$tmp"; fi; }

# q WORD: the word quoted for a shell (the commands the tables print).
q() { printf '%q' "$1"; }

# median_of: the median of the numbers on stdin.
median_of() { sort -g | awk '{a[NR]=$1} END{ if (NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2 }'; }

# bench_sipnab: $tmp/sipnab from $SIPNAB or built from ./cmd/sipnab, and the
# line naming it ($sipnab_version); refused when it lists no --cores.
bench_sipnab() {
  if [ -n "${SIPNAB:-}" ]; then
    [ -x "$SIPNAB" ] || die "SIPNAB=$SIPNAB is not an executable"
    cp "$SIPNAB" "$tmp/sipnab"
    sipnab_version="sipnab: $SIPNAB"
  else
    log "building cmd/sipnab"
    (cd "$root" && go build -o "$tmp/sipnab" ./cmd/sipnab) || die "cmd/sipnab does not build"
    sipnab_version="sipnab: built from $(cd "$root" && git rev-parse --short HEAD 2>/dev/null || echo '?')$(cd "$root" && git diff --quiet HEAD 2>/dev/null || echo ' + local changes')"
  fi
  # Written to a file, never piped into grep -q: under pipefail grep's early
  # exit kills the writer with SIGPIPE and the test reads as false.
  "$tmp/sipnab" --help >"$tmp/sipnab.help" 2>&1 || true
  grep -qE -- '^ +--cores\b' "$tmp/sipnab.help" || die "$tmp/sipnab --help lists no --cores; the scripts time --cores"
}

# bench_generate PRESET: $tmp/PRESET.pcap and its answers $tmp/PRESET.json,
# from bench/cmd/gencapture with $seed.
bench_generate() {
  [ -x "$tmp/gencapture" ] || { log "building bench/cmd/gencapture"; (cd "$root" && go build -o "$tmp/gencapture" ./bench/cmd/gencapture); }
  log "generating preset $1, seed $seed"
  "$tmp/gencapture" -preset "$1" -seed "$seed" -o "$tmp/$1.pcap" -answers "$tmp/$1.json" >&2
}

# bench_run W R LABEL KEY CMD...: one timed run of CMD (stdin, stdout and
# stderr closed off) in round R of workload W, refused unless it exits 0;
# appends "wall user sys kib load" to $tmp/t.W.KEY and the load average to
# $tmp/load.W.
bench_run() {
  local w=$1 r=$2 label=$3 key=$4 load rc=0 last wall user sys kib
  shift 4
  load=$(cut -d' ' -f1 /proc/loadavg)
  /usr/bin/time -f "%e %U %S %M %x" -o "$tmp/one" "$@" </dev/null >/dev/null 2>&1 || rc=$?
  last=$(tail -1 "$tmp/one")
  [ "$rc" = 0 ] && [ "${last##* }" = 0 ] || die "$w round $r: $label failed (exit $rc): $(cat "$tmp/one")"
  read -r wall user sys kib _ <<<"$last"
  echo "$wall $user $sys $kib $load" >>"$tmp/t.$w.$key"
  echo "$load" >>"$tmp/load.$w"
  log "$w round $r/$rounds: $label: wall ${wall}s cpu $(awk -v u="$user" -v s="$sys" 'BEGIN{printf "%.2f", u+s}')s rss $((kib / 1024))MiB load $load"
}

# bench_medians W KEY: sets wallm, cpum and rssm [KEY] (associative arrays
# the caller declared) to the medians of $tmp/t.W.KEY.
bench_medians() {
  wallm[$2]=$(awk '{print $1}' "$tmp/t.$1.$2" | median_of)
  cpum[$2]=$(awk '{print $2+$3}' "$tmp/t.$1.$2" | median_of)
  rssm[$2]=$(awk '{print $4}' "$tmp/t.$1.$2" | median_of)
}
