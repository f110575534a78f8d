#!/usr/bin/env bash
# Part of `npm run build`: compiles gpunet-confine (services/execution/native), the one process
# that confines a job's run (decision 0049), into dist/. Without a C compiler the agents confine
# runs with the util-linux chain instead, which costs an exec per step; say so and go on.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
src="$root/services/execution/native/gpunet-confine.c"
# GPUNET_CONFINE_OUT: somewhere else (the tests compile a private copy, as they do the TypeScript).
out="${GPUNET_CONFINE_OUT:-$root/dist/services/execution/native/gpunet-confine}"
cc="${CC:-cc}"
if ! command -v "$cc" >/dev/null 2>&1; then
  echo "build: no C compiler ($cc), so gpunet-confine is not built; agents will confine jobs with the slower util-linux chain. Install one: sudo apt-get install -y gcc" >&2
  exit 0
fi
mkdir -p "$(dirname "$out")"
if [ ! -x "$out" ] || [ "$src" -nt "$out" ]; then
  "$cc" -O2 -Wall -Wextra -Werror -D_FORTIFY_SOURCE=2 -o "$out.tmp" "$src"
  mv "$out.tmp" "$out"
fi
