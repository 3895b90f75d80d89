# Sourced by .ci/run and tests/inspector.sh: the MCP Inspector version the
# checks pin, the Node it declares it needs (its package.json engines.node),
# and the Node .ci/run installs when the machine's does not satisfy that
# (Debian's nodejs is 18 on bookworm and 20 on trixie; every Inspector with
# --strict declares Node 22 or newer).
INSPECTOR_VERSION=2.12.0
INSPECTOR_NODE='>=22.19.0'
NODE_VERSION=22.23.5

# node_satisfies RANGE: whether `node` on PATH satisfies a ">=X.Y.Z" range.
node_satisfies() {
  command -v node >/dev/null 2>&1 || return 1
  python3 - "$1" "$(node --version)" <<'PY'
import re, sys
rng, have = sys.argv[1], sys.argv[2]
m = re.fullmatch(r'>=\s*(\d+)\.(\d+)\.(\d+)', rng.strip())
if not m:
    sys.exit(f"cannot read the Node range {rng!r} (want >=X.Y.Z)")
v = re.fullmatch(r'v?(\d+)\.(\d+)\.(\d+)', have.strip())
sys.exit(0 if v and tuple(map(int, v.groups())) >= tuple(map(int, m.groups())) else 1)
PY
}
