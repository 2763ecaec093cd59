# Sourced by the parity tests: npm_packages <npm dir> <package...> installs the pinned packages
# into <npm dir> once. Where the npm registry cannot be reached (an offline machine) the test
# is skipped (exit 77, ctest's SKIP_RETURN_CODE), not failed; CI has the registry and runs it.
npm_packages() {
  local dir=$1
  shift
  local registry
  registry=$(npm config get registry 2>/dev/null)
  if ! npm ping --fetch-retries=0 --fetch-timeout=15000 >/dev/null 2>&1; then
    echo "skipped: needs the npm registry ($registry cannot be reached)"
    exit 77
  fi
  # One install per test directory: concurrent tests must not share an npm prefix.
  npm install --prefix "$dir" --no-save --no-audit --no-fund --ignore-scripts --loglevel=error "$@" ||
    { echo "FAIL: npm install $* from $registry"; exit 1; }
}
