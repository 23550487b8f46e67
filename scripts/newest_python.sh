#!/usr/bin/env bash
# Print the path of the newest CPython >= 3.12 on this machine (for `make test-latest`).
# Looks at every pyenv version and at python3.N on PATH; a pyenv shim for a version that
# is installed but not active does not run, so each candidate is asked for its version.
# Exit status 3 (and a message on stderr) when there is none.
set -uo pipefail

candidates=()
if command -v pyenv >/dev/null 2>&1; then
  candidates+=("$(pyenv root)"/versions/*/bin/python3)
fi
for minor in $(seq 12 20); do
  candidates+=("$(command -v "python3.$minor" 2>/dev/null)")
done

best="" best_version=0
for python in "${candidates[@]}"; do
  [ -x "$python" ] || continue
  # major*10000 + minor*100 + micro, only for CPython >= 3.12
  version=$("$python" -c 'import sys
v = sys.version_info
ok = sys.implementation.name == "cpython" and v >= (3, 12)
print(v.major * 10000 + v.minor * 100 + v.micro if ok else 0)' 2>/dev/null) || continue
  if [ "${version:-0}" -gt "$best_version" ]; then
    best=$python best_version=$version
  fi
done

if [ -z "$best" ]; then
  echo "no Python >= 3.12 found (looked in pyenv's versions and for python3.12+ on PATH)" >&2
  exit 3
fi
echo "$best"
