# Node.js 22 and npm packages from committed lockfiles, each installed once into a cache folder
# and reinstalled only when its package.json or package-lock.json changes. Sourced by
# conformance/run and tests/oauth/install; needs npm on PATH (.ci/run installs it when missing).
# The Node.js used is the npm package "node" pinned in conformance/npm/node22.

NODE_MAJOR=22
_NODE_SH_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

# npm_install SRC DEST: `npm ci` SRC's package.json and package-lock.json into DEST, unless DEST
# already holds exactly that pair. Fails (status 1) with npm's log on stderr.
npm_install() {
  local src="$1" dir="$2" stamp
  stamp="$(cat "$src/package.json" "$src/package-lock.json" | sha256sum | cut -c1-16)"
  if [[ -f $dir/.stamp && $(<"$dir/.stamp") == "$stamp" ]]; then
    return 0
  fi
  echo "installing $(basename "$src") into $dir" >&2
  rm -rf "$dir"
  mkdir -p "$dir"
  cp "$src/package.json" "$src/package-lock.json" "$dir/"
  if ! (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error) >"$dir.install.log" 2>&1; then
    cat "$dir.install.log" >&2
    echo "could not install $(basename "$src") (log above, kept in $dir.install.log)" >&2
    return 1
  fi
  echo "$stamp" >"$dir/.stamp"
}

# node22_install CACHE: Node.js 22 into CACHE/node22; sets NODE_BIN (its bin folder) and NODE.
node22_install() {
  local cache="$1" version
  if ! command -v npm >/dev/null; then
    echo "npm is needed to install Node.js $NODE_MAJOR" >&2
    return 1
  fi
  mkdir -p "$cache"
  npm_install "$_NODE_SH_ROOT/conformance/npm/node22" "$cache/node22" || return 1
  NODE_BIN="$cache/node22/node_modules/.bin"
  NODE="$NODE_BIN/node"
  if [[ ! -x $NODE ]]; then
    echo "Node.js was not installed at $NODE" >&2
    return 1
  fi
  version="$("$NODE" --version)"
  if [[ $version != v$NODE_MAJOR.* ]]; then
    echo "expected Node.js $NODE_MAJOR, got $version" >&2
    return 1
  fi
}
