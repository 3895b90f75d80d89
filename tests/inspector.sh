#!/usr/bin/env bash
# Runs the MCP Inspector CLI with --strict against sipnab's tools/list over
# stdio and over streamable HTTP (with and without output schemas). Fails on
# a non-zero Inspector exit (exit 6: an error-severity schema problem) and on
# any finding about an input schema. Needs the npm registry and the Node the
# pinned Inspector declares (.ci/inspector-node.sh; .ci/run installs it):
# with another Node it fails at once, saying which it needs.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
. .ci/inspector-node.sh

if ! node_satisfies "$INSPECTOR_NODE"; then
  echo "FAIL inspector: the MCP Inspector $INSPECTOR_VERSION needs Node $INSPECTOR_NODE (its package.json engines.node);" \
    "node on PATH is $(node --version 2>/dev/null || echo missing) ($(command -v node || echo no node))." \
    ".ci/run installs Node $NODE_VERSION; or put a Node $INSPECTOR_NODE first on PATH." >&2
  exit 1
fi

work=$(mktemp -d)
server_pid=
cleanup() {
  if [ -n "$server_pid" ]; then kill "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT
chmod 755 "$work"

go build -o "$work/sipnab" ./cmd/sipnab
(cd "$work" && npm install --silent --no-audit --no-fund --no-save "@modelcontextprotocol/inspector@$INSPECTOR_VERSION" >/dev/null)
# The pin and the package must agree on the Node they need: an Inspector
# bumped without its engines.node would otherwise run on a Node it refuses.
engines=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1])).get("engines", {}).get("node", ""))' \
  "$work/node_modules/@modelcontextprotocol/inspector/package.json")
if [ "$engines" != "$INSPECTOR_NODE" ]; then
  echo "FAIL inspector: @modelcontextprotocol/inspector@$INSPECTOR_VERSION declares engines.node '$engines'," \
    "but .ci/inspector-node.sh says '$INSPECTOR_NODE': update INSPECTOR_NODE (and NODE_VERSION to a Node that satisfies it)" >&2
  exit 1
fi
inspector=("$work/node_modules/.bin/mcp-inspector" --cli)
echo "MCP Inspector $("${inspector[@]}" --version 2>/dev/null || echo '?') on Node $(node --version) (needs $engines)"

# Beside the binary: started as root, the HTTP server reads it as nobody.
cp "$root/testdata/sip-rtp-g711.pcap" "$work/" && chmod 644 "$work/sip-rtp-g711.pcap"
capture="$work/sip-rtp-g711.pcap"
failures=0

check() { # name, then the inspector target arguments
  local name=$1; shift
  local out="$work/$name.out" err="$work/$name.err"
  local rc=0
  "${inspector[@]}" --strict --method tools/list "$@" >"$out" 2>"$err" || rc=$?
  if [ "$rc" -ne 0 ]; then
    echo "FAIL inspector --strict ($name): exit $rc"; cat "$err"; failures=$((failures+1)); return
  fi
  if grep -q 'Path: inputSchema' "$err"; then
    echo "FAIL inspector --strict ($name): input schema findings"; cat "$err"; failures=$((failures+1)); return
  fi
  if ! grep -q '"capture_status"' "$out"; then
    echo "FAIL inspector ($name): tools/list lacks capture_status"; cat "$out" "$err"; failures=$((failures+1)); return
  fi
  local n
  n=$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["tools"]))' "$out")
  echo "ok   inspector --strict tools/list ($name): $n tools, $(grep -c '^Warning' "$err" || true) output-schema warnings"
}

check stdio "$work/sipnab" -N --mcp -I "$capture"
check stdio-output-schemas "$work/sipnab" -N --mcp --mcp-output-schemas -I "$capture"

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()')
token=inspector-ci-token-$(date +%s%N)
SIPNAB_MCP_TOKEN=$token "$work/sipnab" -N --mcp --mcp-transport http --mcp-bind "127.0.0.1:$port" \
  --mcp-output-schemas -I "$capture" 2>"$work/server.log" &
server_pid=$!
for _ in $(seq 1 100); do
  python3 -c 'import sys,urllib.request; urllib.request.urlopen(sys.argv[1], timeout=1)' "http://127.0.0.1:$port/health" 2>/dev/null && break
  sleep 0.1
done
check http "http://127.0.0.1:$port/mcp" --transport http --header "Authorization: Bearer $token"

if [ "$failures" -gt 0 ]; then
  echo "$failures inspector check(s) failed"; exit 1
fi
echo "inspector: all 3 checks passed"
