# shellcheck shell=bash
# Steps shared by scripts/test.sh and scripts/demo.sh: make sure npm packages, nats-server and
# PostgreSQL are there, installing and starting what is missing. Sourced, not executed.
#
# A backend that cannot be had stops the run with a message saying exactly what to do:
# tests never skip one. Installing from Debian's packages needs root; without root the message
# names the command to run.
#
# Exports for the rest of the run:
#   GPUNET_NATS_SERVER_BIN  absolute path of nats-server (Debian puts it in /usr/sbin, which is
#                           often not on a normal user's PATH)
#   GPUNET_TEST_PG_URL      admin URL of a PostgreSQL that lets us create databases

GPUNET_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
GPUNET_DEFAULT_PG_URL='postgresql://postgres@127.0.0.1:5432/postgres'
GPUNET_PG_SOCKET_DIR='/var/run/postgresql'
_gpunet_apt_updated=''

step() { printf '\n==> %s\n' "$*"; }
note() { printf '    %s\n' "$*"; }
die() {
  printf '\nERROR: %s\n' "$1" >&2
  shift
  local line
  for line in "$@"; do printf '       %s\n' "$line" >&2; done
  exit 1
}
is_root() { [ "$(id -u)" -eq 0 ]; }

apt_install() {
  if [ -z "$_gpunet_apt_updated" ]; then
    note "apt-get update"
    DEBIAN_FRONTEND=noninteractive apt-get update -qq || die "apt-get update failed."
    _gpunet_apt_updated=1
  fi
  note "apt-get install -y $*"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null || die "apt-get install $* failed."
}

# --- node and npm packages ---------------------------------------------------------------------

# Node ≥ 20.19 (ESM-only NestJS 12, `require(esm)`-free Jest setup); Debian 12 ships 18, so
# this one is never installed for you.
ensure_node() {
  command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1 ||
    die "node and npm are not installed." "Install Node.js 20.19 or newer (e.g. https://nodejs.org or NodeSource's Debian packages), then run this again."
  node -e 'const [a,b]=process.versions.node.split(".").map(Number); process.exit(a>20||(a===20&&b>=19)?0:1)' ||
    die "Node.js $(node -v) is too old." "gpunet needs Node.js 20.19 or newer."
}

# True when node_modules holds exactly what package-lock.json asks for. npm keeps a copy of the
# installed tree in node_modules/.package-lock.json; comparing versions (not mtimes) avoids a
# pointless `npm ci`, which would delete node_modules under anyone else using this tree.
node_modules_current() {
  (cd "$GPUNET_ROOT" && node -e '
    const fs = require("node:fs");
    let want, have;
    try {
      want = JSON.parse(fs.readFileSync("package-lock.json", "utf8")).packages;
      have = JSON.parse(fs.readFileSync("node_modules/.package-lock.json", "utf8")).packages;
    } catch { process.exit(1); }
    for (const [path, p] of Object.entries(want)) {
      if (path === "" || !path.includes("node_modules/")) continue;
      const got = have[path];
      // Optional packages for other platforms (e.g. @swc/core-darwin-arm64) are legitimately absent.
      if (!got) { if (p.optional) continue; console.log("missing " + path); process.exit(1); }
      if (got.version !== p.version) { console.log(path + " " + got.version + " != " + p.version); process.exit(1); }
    }
  ')
}

# better-sqlite3 downloads a prebuilt addon when it can reach GitHub and compiles one otherwise,
# which needs python3, make and a C++ compiler. As root, install them if absent; without root,
# the build failure itself says what is missing.
ensure_build_tools() {
  { command -v python3 && command -v make && command -v g++; } >/dev/null 2>&1 && return 0
  is_root || return 0
  note "installing python3, make and g++ in case better-sqlite3 must be compiled"
  apt_install python3 make g++
}

# gpunet-confine (decision 0049) is C, compiled by `npm run build`: one process confines a job's
# run where the util-linux chain takes ten. The tests check it, so they need a compiler; the demo
# runs without one (its agents then use the chain) and says so.
ensure_c_compiler() {
  step "C compiler (gpunet-confine)"
  if command -v "${CC:-cc}" >/dev/null 2>&1; then
    note "$(command -v "${CC:-cc}")"
    return 0
  fi
  if ! is_root; then
    [ "${1:-}" = optional ] && { note "none: agents will confine jobs with the slower util-linux chain (sudo apt-get install -y gcc)"; return 0; }
    die "no C compiler: gpunet-confine, which the tests check, cannot be built." "Install one (Debian/Ubuntu): sudo apt-get install -y gcc"
  fi
  apt_install gcc
}

ensure_node_modules() {
  step "npm packages"
  ensure_node
  if node_modules_current >/dev/null; then
    note "node_modules matches package-lock.json"
  else
    note "node_modules is missing or differs from package-lock.json: npm ci"
    ensure_build_tools
    (cd "$GPUNET_ROOT" && npm ci --no-audit --no-fund --loglevel=error) ||
      die "npm ci failed (see above)." \
        "If better-sqlite3 failed to build, install a compiler: sudo apt-get install -y python3 make g++"
  fi
  # better-sqlite3 is a native addon built by its install script; a tree installed with
  # --ignore-scripts or for another Node ABI has none or the wrong one.
  if ! (cd "$GPUNET_ROOT" && node -e 'new (require("better-sqlite3"))(":memory:").close()' 2>/dev/null); then
    note "better-sqlite3's native addon does not load: npm rebuild better-sqlite3"
    ensure_build_tools
    (cd "$GPUNET_ROOT" && npm rebuild better-sqlite3 --loglevel=error) &&
      (cd "$GPUNET_ROOT" && node -e 'new (require("better-sqlite3"))(":memory:").close()') ||
      die "better-sqlite3 cannot be built." "It compiles with python3, make and g++ when no prebuilt binary fits: apt-get install -y python3 make g++"
  fi
}

# --- nats-server -------------------------------------------------------------------------------

find_nats_server() {
  if [ -n "${GPUNET_NATS_SERVER_BIN:-}" ]; then
    [ -x "$GPUNET_NATS_SERVER_BIN" ] && { printf '%s' "$GPUNET_NATS_SERVER_BIN"; return 0; }
    command -v "$GPUNET_NATS_SERVER_BIN" 2>/dev/null && return 0
    return 1
  fi
  command -v nats-server 2>/dev/null && return 0
  local p
  for p in /usr/sbin/nats-server /usr/local/sbin/nats-server /usr/local/bin/nats-server; do
    [ -x "$p" ] && { printf '%s' "$p"; return 0; }
  done
  return 1
}

# Only the binary is needed: every test starts its own server on a random port.
ensure_nats_server() {
  step "nats-server"
  local bin
  if ! bin="$(find_nats_server)"; then
    if [ -n "${GPUNET_NATS_SERVER_BIN:-}" ]; then
      die "GPUNET_NATS_SERVER_BIN=$GPUNET_NATS_SERVER_BIN is not an executable nats-server." "Point it at a nats-server 2.9+ binary, or unset it."
    fi
    is_root || die "nats-server is not installed." \
      "Install it (Debian/Ubuntu): sudo apt-get install -y nats-server" \
      "or put a nats-server 2.9+ binary on PATH, or set GPUNET_NATS_SERVER_BIN to its path."
    note "not installed: installing Debian's nats-server"
    apt_install nats-server
    bin="$(find_nats_server)" || die "nats-server was installed but cannot be found on PATH or in /usr/sbin."
  fi
  GPUNET_NATS_SERVER_BIN="$bin"
  export GPUNET_NATS_SERVER_BIN
  note "$("$bin" --version 2>&1 | head -n1) at $bin"
}

# --- Python (the Python client's tests) ---------------------------------------------------------

# Debian's python3 with python3-pytest and python3-venv (the client is standard library only,
# and CI cannot reach PyPI). `npm run test:python` runs clients/python/tests with it.
GPUNET_PYTHON="${GPUNET_PYTHON:-/usr/bin/python3}"
# Debian's Chromium for the console's browser tier and `npm run bench:console` (playwright-core
# drives it; no browser is downloaded). GPUNET_CHROMIUM points at another build.
ensure_chromium() {
  step "chromium"
  local bin="${GPUNET_CHROMIUM:-/usr/bin/chromium}"
  if [ ! -x "$bin" ]; then
    if [ -n "${GPUNET_CHROMIUM:-}" ]; then
      die "GPUNET_CHROMIUM=$GPUNET_CHROMIUM is not an executable Chromium." "Point it at a Chromium binary, or unset it to use /usr/bin/chromium."
    fi
    is_root || die "chromium is not installed (the web console's browser tests drive it)." \
      "Install it (Debian/Ubuntu): sudo apt-get install -y chromium"
    note "not installed: installing Debian's chromium (a few minutes)"
    apt_install chromium
    [ -x "$bin" ] || die "chromium was installed but $bin is missing."
  fi
  GPUNET_CHROMIUM="$bin"
  export GPUNET_CHROMIUM
  note "$("$bin" --headless --no-sandbox --version 2>/dev/null | head -n1) at $bin"
}

ensure_python() {
  step "python3 + pytest"
  local missing=()
  [ -x "$GPUNET_PYTHON" ] || missing+=(python3)
  "$GPUNET_PYTHON" -c 'import pytest' >/dev/null 2>&1 || missing+=(python3-pytest)
  "$GPUNET_PYTHON" -c 'import ensurepip, venv' >/dev/null 2>&1 || missing+=(python3-venv)
  if [ "${#missing[@]}" -gt 0 ]; then
    is_root || die "the Python client's tests need Debian's ${missing[*]}." "Install them: sudo apt-get install -y python3 python3-pytest python3-venv"
    note "not installed: ${missing[*]}"
    apt_install python3 python3-pytest python3-venv
    "$GPUNET_PYTHON" -c 'import pytest' >/dev/null 2>&1 || die "python3-pytest was installed but $GPUNET_PYTHON cannot import pytest."
  fi
  export GPUNET_PYTHON
  note "$("$GPUNET_PYTHON" --version 2>&1), pytest $("$GPUNET_PYTHON" -m pytest --version 2>&1 | grep -oE '[0-9]+(\.[0-9]+)+' | head -n1)"
}

# --- promtool (the alert rules' tests) ---------------------------------------------------------

# `promtool test rules` checks deploy/prometheus/alerts.yaml against recorded series
# (`npm run test:alerts`). Debian ships it in the `prometheus` package; installing that package
# does not start a Prometheus server where no init system runs.
ensure_promtool() {
  step "promtool"
  if ! command -v promtool >/dev/null 2>&1; then
    is_root || die "promtool is not installed; the alert rules cannot be tested." "Install it (Debian/Ubuntu): sudo apt-get install -y prometheus" "or put promtool 2.x on PATH."
    note "not installed: installing Debian's prometheus (for promtool)"
    apt_install prometheus
    command -v promtool >/dev/null 2>&1 || die "prometheus was installed but promtool is not on PATH."
  fi
  note "$(promtool --version 2>&1 | head -n1)"
}

# The multi-host tier builds separate hosts from network namespaces: iproute2, and root to make them.
ensure_netns() {
  step "network namespaces (multi-host tier)"
  if ! command -v ip >/dev/null 2>&1; then
    is_root || die "iproute2 is not installed; the multi-host tests cannot build their hosts." "Install it (Debian/Ubuntu): sudo apt-get install -y iproute2"
    note "not installed: installing Debian's iproute2"
    apt_install iproute2
  fi
  is_root || die "the multi-host tests make network namespaces, which needs root." "Run \`npm test\` as root (e.g. in the CI container), or run the other tiers alone: npm run test:unit, test:int, test:e2e, test:browser."
  local probe="gpnprobe$$"
  ip netns add "$probe" 2>/dev/null || die "this machine refuses to make a network namespace (ip netns add failed)." "Run in a container or VM that grants CAP_SYS_ADMIN and CAP_NET_ADMIN to root."
  ip netns delete "$probe"
  note "$(ip -V 2>&1 | head -n1)"
}

# --- PostgreSQL --------------------------------------------------------------------------------

# Connects to $1 and checks the role may create databases (each test file makes its own).
# Prints why on failure.
pg_probe() {
  (cd "$GPUNET_ROOT" && GPUNET_PROBE_URL="$1" node -e '
    const pg = require("pg");
    const c = new pg.Client({ connectionString: process.env.GPUNET_PROBE_URL, connectionTimeoutMillis: 3000 });
    c.connect()
      .then(() => c.query("SELECT rolsuper OR rolcreatedb AS ok, current_user AS u, current_setting($1) AS v FROM pg_roles WHERE rolname = current_user", ["server_version"]))
      .then((r) => {
        const row = r.rows[0];
        if (!row || !row.ok) { console.log("role " + (row ? row.u : "?") + " may not create databases"); process.exitCode = 2; }
        else console.log("PostgreSQL " + row.v + " as " + row.u);
      })
      .catch((e) => { console.log(e.message || e.code || String(e)); process.exitCode = 1; })
      .finally(() => c.end().catch(() => {}));
  ')
}

# The local cluster to start or use: the one on port 5432 if any, else the first (Debian's
# postgresql-common layout: pg_lsclusters prints "version name port status owner ...").
local_cluster() {
  command -v pg_lsclusters >/dev/null 2>&1 || return 1
  local line
  line="$(pg_lsclusters -h 2>/dev/null | awk '$3 == 5432' | head -n1)"
  [ -n "$line" ] || line="$(pg_lsclusters -h 2>/dev/null | head -n1)"
  [ -n "$line" ] || return 1
  printf '%s' "$line"
}

wait_for_socket() {
  local port="$1" i
  for i in $(seq 1 30); do
    pg_isready -q -h "$GPUNET_PG_SOCKET_DIR" -p "$port" 2>/dev/null && return 0
    sleep 1
  done
  return 1
}

# Makes sure a local cluster exists and is running (root only for anything but using it).
start_local_postgres() {
  local cluster ver name port status
  if ! cluster="$(local_cluster)"; then
    if ! command -v pg_lsclusters >/dev/null 2>&1; then
      is_root || return 1
      note "not installed: installing Debian's postgresql"
      apt_install postgresql
    fi
    if ! cluster="$(local_cluster)"; then
      is_root || return 1
      ver="$(ls /usr/lib/postgresql 2>/dev/null | sort -V | tail -n1)"
      [ -n "$ver" ] || die "PostgreSQL is installed but no server version is under /usr/lib/postgresql."
      note "no cluster: pg_createcluster $ver main"
      pg_createcluster "$ver" main >/dev/null || die "pg_createcluster $ver main failed."
      cluster="$(local_cluster)" || die "pg_createcluster ran but pg_lsclusters shows no cluster."
    fi
  fi
  read -r ver name port status _ <<<"$cluster"
  if [ "$status" != "online" ]; then
    is_root || die "PostgreSQL cluster $ver/$name is installed but stopped." \
      "Start it: sudo pg_ctlcluster $ver $name start" \
      "then run this again (or set GPUNET_TEST_PG_URL to a server that lets you create databases)."
    note "starting cluster $ver/$name (port $port)"
    pg_ctlcluster --skip-systemctl-redirect "$ver" "$name" start ||
      die "pg_ctlcluster $ver $name start failed." "See /var/log/postgresql/postgresql-$ver-$name.log"
  fi
  wait_for_socket "$port" || die "PostgreSQL $ver/$name did not accept connections within 30 s." \
    "See /var/log/postgresql/postgresql-$ver-$name.log"
  GPUNET_PG_LOCAL_PORT="$port"
}

ensure_postgres() {
  step "PostgreSQL"
  local why url
  if [ -n "${GPUNET_TEST_PG_URL:-}" ]; then
    # An explicit URL is used as given: never quietly swapped for another server.
    why="$(pg_probe "$GPUNET_TEST_PG_URL")" && { note "$why at GPUNET_TEST_PG_URL"; export GPUNET_TEST_PG_URL; return 0; }
    # It may name the local server, merely stopped: start that one and ask again.
    local cluster
    if cluster="$(local_cluster)" && [ "$(awk '{print $4}' <<<"$cluster")" != online ]; then
      note "GPUNET_TEST_PG_URL does not answer ($why); the local cluster is stopped"
      start_local_postgres
      why="$(pg_probe "$GPUNET_TEST_PG_URL")" && { note "$why at GPUNET_TEST_PG_URL"; export GPUNET_TEST_PG_URL; return 0; }
    fi
    die "GPUNET_TEST_PG_URL=$GPUNET_TEST_PG_URL does not work: $why" \
      "Point it at a running PostgreSQL where the role may create databases, or unset it to let this script use a local server."
  fi

  why="$(pg_probe "$GPUNET_DEFAULT_PG_URL")" && {
    GPUNET_TEST_PG_URL="$GPUNET_DEFAULT_PG_URL"
    export GPUNET_TEST_PG_URL
    note "$why at $GPUNET_TEST_PG_URL"
    return 0
  }
  note "nothing usable at $GPUNET_DEFAULT_PG_URL ($why)"

  if ! start_local_postgres; then
    die "PostgreSQL is not installed and installing it needs root." \
      "Install and start it: sudo apt-get install -y postgresql && sudo pg_ctlcluster <version> main start" \
      "let your user create databases: sudo -u postgres createuser -s $(id -un)" \
      "then run again with GPUNET_TEST_PG_URL='postgresql://$(id -un)@localhost/postgres?host=$GPUNET_PG_SOCKET_DIR'"
  fi

  # A fresh Debian server asks for a password over TCP but trusts the OS user on its unix
  # socket (peer auth), so connect there as a database role named like the OS user.
  why="$(pg_probe "$GPUNET_DEFAULT_PG_URL")" && url="$GPUNET_DEFAULT_PG_URL"
  if [ -z "${url:-}" ]; then
    local user
    user="$(id -un)"
    url="postgresql://${user}@localhost:${GPUNET_PG_LOCAL_PORT}/postgres?host=${GPUNET_PG_SOCKET_DIR}"
    if ! why="$(pg_probe "$url")" && is_root; then
      note "creating superuser role $user (peer auth over $GPUNET_PG_SOCKET_DIR)"
      su postgres -c "createuser -s -p $GPUNET_PG_LOCAL_PORT $user" 2>/dev/null || true
    fi
    why="$(pg_probe "$url")" || die "PostgreSQL is running but refuses $url: $why" \
      "Let your user create databases: sudo -u postgres createuser -s $user" \
      "or set GPUNET_TEST_PG_URL to a server and role that may create databases."
  fi
  GPUNET_TEST_PG_URL="$url"
  export GPUNET_TEST_PG_URL
  note "$why at $GPUNET_TEST_PG_URL"
}

# --- podman (container jobs) -------------------------------------------------------------------

# Container jobs run through Debian's daemonless podman. Where the cgroup hierarchy is v1 or
# hybrid (as on these machines) crun refuses ("cgroups in hybrid mode not supported"), so runc
# comes too; uidmap gives rootless podman its subordinate ids; busybox-static is the root file
# system of the small image the tests build locally (no registry is reached).
ensure_podman() {
  step "podman"
  local missing=()
  command -v podman >/dev/null 2>&1 || missing+=(podman)
  command -v runc >/dev/null 2>&1 || [ -x /usr/sbin/runc ] || missing+=(runc)
  command -v newuidmap >/dev/null 2>&1 || missing+=(uidmap)
  { [ -x /bin/busybox ] && ! ldd /bin/busybox >/dev/null 2>&1; } || missing+=(busybox-static)
  if [ "${#missing[@]}" -gt 0 ]; then
    is_root || die "container jobs' tests need Debian's ${missing[*]}." "Install them: sudo apt-get install -y podman runc uidmap busybox-static"
    note "not installed: ${missing[*]}"
    apt_install podman runc uidmap busybox-static
    command -v podman >/dev/null 2>&1 || die "podman was installed but is not on PATH."
  fi
  podman info --format '{{.Version.Version}}' >/dev/null 2>&1 || die "podman is installed but 'podman info' fails." "Run 'podman info' to see why (storage under /var/lib/containers, cgroups)."
  note "podman $(podman info --format '{{.Version.Version}}'), OCI runtime $(command -v runc || echo /usr/sbin/runc), $(/bin/busybox 2>&1 | head -n1 | cut -c1-40)"
}
