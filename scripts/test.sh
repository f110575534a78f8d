#!/usr/bin/env bash
# `npm test`: everything, from a fresh clone. Installs npm packages, a C compiler, nats-server, promtool, podman, PostgreSQL, Chromium and iproute2
# when missing (Debian packages, as root), starts PostgreSQL when stopped, then builds,
# typechecks, lints and runs the test tiers in order. A backend that cannot be had fails the
# run; nothing is skipped. See README.md.
set -euo pipefail

# shellcheck source=scripts/lib/ensure.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/ensure.sh"
cd "$GPUNET_ROOT"

started=$SECONDS
# Jest's output is teed into the summary below, which would turn its colours off on a terminal.
if [ -t 1 ]; then export FORCE_COLOR=1; fi
ensure_node_modules
ensure_c_compiler
ensure_nats_server
ensure_postgres
ensure_python
ensure_promtool
ensure_podman
ensure_chromium
ensure_netns

# name|status|seconds|detail, one per check, for the closing summary.
results=()
failed=0

# Jest's own summary line ("Tests: 3 failed, 40 passed, 43 total") says the most; pytest's
# closing line ("2 failed, 9 passed in 40.1s") for the Python client.
summary_of() {
  local detail
  detail="$(sed -E 's/\x1b\[[0-9;]*m//g' "$1" | grep -E '^Tests:' | tail -n1 | sed -E 's/^Tests: +//' || true)"
  if [ -z "$detail" ]; then
    detail="$(sed -E 's/\x1b\[[0-9;]*m//g' "$1" | grep -E '^(=+ )?[0-9]+ (passed|failed).* in [0-9.]+s' | tail -n1 | sed -E 's/^=+ //; s/ in [0-9.]+s.*$//' || true)"
  fi
  printf '%s' "$detail"
}

# Records one check's outcome: name, exit status, seconds, its log.
record() {
  local name="$1" status="$2" secs="$3" log="$4" detail
  detail="$(summary_of "$log")"
  if [ "$status" -eq 0 ]; then
    results+=("$name|PASS|$secs|$detail")
  else
    results+=("$name|FAIL (exit $status)|$secs|$detail")
    failed=1
  fi
}

# Runs one check, echoing its output, and records the outcome; later checks still run so one
# report shows everything that is wrong.
run_check() {
  local name="$1"
  shift
  step "$name"
  local log t0 status
  log="$(mktemp)"
  t0=$SECONDS
  set +e
  "$@" 2>&1 | tee "$log"
  status=${PIPESTATUS[0]}
  set -e
  record "$name" "$status" "$((SECONDS - t0))" "$log"
  rm -f "$log"
  return 0
}

# Runs two checks that share nothing (each reads the sources only) side by side, one per core,
# then shows each one's output in turn, as run_check would have.
run_check_pair() {
  local name1="$1" cmd1="$2" name2="$3" cmd2="$4"
  local log1 log2 t0 pid1 pid2 status1 status2 secs1 secs2
  log1="$(mktemp)"
  log2="$(mktemp)"
  t0=$SECONDS
  set +e
  (bash -c "$cmd1" >"$log1" 2>&1; echo "$? $((SECONDS))" >"$log1.end") &
  pid1=$!
  (bash -c "$cmd2" >"$log2" 2>&1; echo "$? $((SECONDS))" >"$log2.end") &
  pid2=$!
  wait "$pid1" "$pid2"
  set -e
  read -r status1 secs1 <"$log1.end"
  read -r status2 secs2 <"$log2.end"
  step "$name1"
  cat "$log1"
  step "$name2"
  cat "$log2"
  record "$name1" "$status1" "$((secs1 - t0))" "$log1"
  record "$name2" "$status2" "$((secs2 - t0))" "$log2"
  rm -f "$log1" "$log2" "$log1.end" "$log2.end"
  return 0
}

step "build"
npm run -s build || die "npm run build failed: nothing was tested."

run_check_pair typecheck "npm run -s typecheck" lint "npm run -s lint"
run_check "unit tests" npm run -s test:unit
run_check "alert rules" npm run -s test:alerts
run_check "int tests" npm run -s test:int
run_check "e2e tests" npm run -s test:e2e
run_check "browser tests" npm run -s test:browser
run_check "multi-host tests" npm run -s test:multihost
run_check "python tests" npm run -s test:python

step "summary"
for r in "${results[@]}"; do
  IFS='|' read -r name status secs detail <<<"$r"
  printf '    %-12s %-14s %4ss  %s\n' "$name" "$status" "$secs" "$detail"
done
printf '    total %ss\n' "$((SECONDS - started))"
# One plain closing line over every tier, for readers and tools that look only at the end.
passed_total=0
failed_total=0
for r in "${results[@]}"; do
  IFS='|' read -r _ _ _ detail <<<"$r"
  p=$(grep -oE '[0-9]+ passed' <<<"$detail" | grep -oE '[0-9]+' || true)
  f=$(grep -oE '[0-9]+ failed' <<<"$detail" | grep -oE '[0-9]+' || true)
  passed_total=$((passed_total + ${p:-0}))
  failed_total=$((failed_total + ${f:-0}))
done
printf '\ntests: %s passed, %s failed\n' "$passed_total" "$failed_total"
if [ "$failed" -ne 0 ]; then
  printf '\nnpm test FAILED\n' >&2
  exit 1
fi
printf '\nnpm test passed\n'
