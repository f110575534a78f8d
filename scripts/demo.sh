#!/usr/bin/env bash
# `npm run demo`: one GPU job through submit → rent → run → output → release on this machine.
# Installs what is missing (npm packages, nats-server), builds, starts a local gpunet network
# (nats-server, the five services, two execution agents with simulated GPUs) in .gpunet/demo,
# makes a small dataset, submits examples/train/job.yaml, waits for it, downloads its outputs,
# prints its timeline and its bill, and brings everything down again — also on failure or Ctrl-C.
set -euo pipefail

# shellcheck source=scripts/lib/ensure.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/ensure.sh"
cd "$GPUNET_ROOT"

started=$SECONDS
DEMO_DIR="${GPUNET_DEMO_DIR:-$GPUNET_ROOT/.gpunet/demo}"
gpunet() { node "$GPUNET_ROOT/bin/gpunet.js" "$@"; }

ensure_node_modules
ensure_c_compiler optional
ensure_nats_server # exports GPUNET_NATS_SERVER_BIN, which `gpunet up` reads

step "build"
npm run -s build
npm run -s build:console
note "done"

# A demo left behind by a killed run is stopped and cleared, so every run starts the same.
if [ -f "$DEMO_DIR/state.json" ]; then gpunet down --data-dir "$DEMO_DIR" >/dev/null || true; fi
rm -rf "$DEMO_DIR"

network_up=''
cleanup() {
  local status=$?
  trap - EXIT INT TERM
  if [ -n "$network_up" ]; then
    step "gpunet down"
    gpunet down --data-dir "$DEMO_DIR" || status=1
  fi
  if [ "$status" -ne 0 ]; then
    printf '\nthe demo FAILED (exit %s); the service logs are in %s/logs/\n' "$status" "$DEMO_DIR" >&2
  fi
  exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

step "gpunet up --agents 2"
network_up=1
gpunet up --agents 2 --data-dir "$DEMO_DIR"

step "sample dataset"
node examples/train/make-dataset.mjs

step "gpunet submit examples/train/job.yaml"
gpunet submit examples/train/job.yaml --data-dir "$DEMO_DIR" --json >"$DEMO_DIR/submit.json"
job="$(node -p 'JSON.parse(require("fs").readFileSync(process.argv[1], "utf8")).jobId' "$DEMO_DIR/submit.json")"
note "job $job"

step "gpunet wait $job"
gpunet wait "$job" --data-dir "$DEMO_DIR" --timeout 2m

step "gpunet logs $job"
gpunet logs "$job" --data-dir "$DEMO_DIR"

step "gpunet output $job"
gpunet output "$job" --data-dir "$DEMO_DIR" --dest "$DEMO_DIR/output"
note "metrics.json: $(cat "$DEMO_DIR/output/metrics.json")"

step "gpunet status $job --timeline"
gpunet status "$job" --data-dir "$DEMO_DIR" --timeline

# The ledger bills on JobFinished, independently of the release the wait saw: give it a moment.
step "gpunet invoice --job $job"
for _ in $(seq 1 40); do
  lines="$(gpunet invoice --job "$job" --data-dir "$DEMO_DIR" --json | node -p 'JSON.parse(require("fs").readFileSync(0, "utf8")).lines.length')"
  [ "$lines" -gt 0 ] && break
  sleep 0.25
done
gpunet invoice --job "$job" --data-dir "$DEMO_DIR"

step "done in $((SECONDS - started)) s"
note "the web console was at $(node -p 'JSON.parse(require("fs").readFileSync(process.argv[1], "utf8")).url' "$DEMO_DIR/state.json")/console (log in with the key in $DEMO_DIR/state.json; \`gpunet up\` keeps one running)"
note "the job's outputs are in ${DEMO_DIR#"$GPUNET_ROOT"/}/output/"
