#!/usr/bin/env bash
# A local Ray head for `codenib submit`, reachable from this machine only:
#   - every Ray listener on 127.0.0.1 (GCS, raylet, agents, dashboard and job API, Ray Client);
#   - token authentication on (RAY_AUTH_MODE=token); the token lives in a private file and is
#     never printed.
#
#   cluster/start_local_head.sh [start] [RAY START OPTIONS...]   start it, or report the running one
#   cluster/start_local_head.sh status                          exit 0 when it answers
#   cluster/start_local_head.sh stop                            stop this head's processes, no other Ray's
#
# Settings (environment variables):
#   CODENIB_RAY_HOME         token file and start log      (default: ~/.codenib/ray-head)
#   CODENIB_RAY_TEMP_DIR     Ray's sessions and logs       (default: /tmp/codenib-ray-UID; kept short
#                            because Ray puts unix sockets under it and socket paths are limited)
#   CODENIB_RAY_PORT         GCS port                      (default: 6390, beside a default Ray's 6379)
#   CODENIB_DASHBOARD_PORT   dashboard / job API port      (default: 8265, what `codenib submit` uses)
#   CODENIB_RAY_CLIENT_PORT  Ray Client port               (default: 10001)
#   CODENIB_RAY_AGENT_PORT   dashboard agent HTTP port     (default: 52365)
#   CODENIB_RAY_CPUS         CPUs offered to jobs          (default: all)
#   RAY                      the ray executable            (default: `ray` on PATH)
set -euo pipefail

die() { echo "start_local_head: $*" >&2; exit 2; }

HEAD_HOME=${CODENIB_RAY_HOME:-$HOME/.codenib/ray-head}
TEMP_DIR=${CODENIB_RAY_TEMP_DIR:-/tmp/codenib-ray-$(id -u)}
GCS_PORT=${CODENIB_RAY_PORT:-6390}
DASHBOARD_PORT=${CODENIB_DASHBOARD_PORT:-8265}
CLIENT_PORT=${CODENIB_RAY_CLIENT_PORT:-10001}
AGENT_PORT=${CODENIB_RAY_AGENT_PORT:-52365}
CPUS=${CODENIB_RAY_CPUS:-}
TOKEN_FILE=$HEAD_HOME/auth_token
ADDRESS=http://127.0.0.1:$DASHBOARD_PORT
START_WAIT_S=90   # a cold head on a small machine takes 10-30 s before its job API answers
STOP_GRACE_S=12   # the raylet drains for ~10 s on SIGTERM; the GCS and autoscaler need SIGKILL after it

RAY_BIN=${RAY:-$(command -v ray || true)}
BIN_DIR=""
[ -n "$RAY_BIN" ] && [ -x "$RAY_BIN" ] && BIN_DIR=$(cd "$(dirname "$RAY_BIN")" && pwd)
PY=${BIN_DIR:+$BIN_DIR/python}
[ -n "$PY" ] && [ -x "$PY" ] || PY=$(command -v python3)

# 0 when the job API on 127.0.0.1 accepts this head's token. The token goes in a header read
# from the file (never on a command line, where `ps` shows it), and no HTTP proxy is used.
job_api_answers() {
  "$PY" - "$ADDRESS" "$TOKEN_FILE" <<'PYEOF'
import sys, urllib.request
url, token_file = sys.argv[1], sys.argv[2]
try:
    with open(token_file) as f:
        token = f.read().strip()
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    request = urllib.request.Request(url + "/api/version", headers={"Authorization": "Bearer " + token})
    with opener.open(request, timeout=3) as response:
        sys.exit(0 if response.status == 200 else 1)
except Exception:
    sys.exit(1)
PYEOF
}

port_in_use() {
  "$PY" -c 'import socket, sys
s = socket.socket(); s.settimeout(1)
sys.exit(0 if s.connect_ex(("127.0.0.1", int(sys.argv[1]))) == 0 else 1)' "$1"
}

# This head's processes: Ray processes whose --*dir= options point into its temp dir, its Ray
# Client server (named by its GCS address), and all their descendants (the raylet's agents
# and workers outlive it otherwise).
head_pids() {
  local roots
  roots=$( { pgrep -u "$(id -u)" -f -- "--[a-z_-]*dir=$TEMP_DIR" || true
             pgrep -u "$(id -u)" -f -- "ray[.]util[.]client[.]server --address=127[.]0[.]0[.]1:$GCS_PORT( |\$)" || true; } )
  descendants $roots
}

descendants() {
  local pid
  for pid in "$@"; do
    echo "$pid"
    # shellcheck disable=SC2046
    descendants $(pgrep -P "$pid" || true)
  done
}

# `ray start` makes its temp dir and every folder it creates in it (sessions, logs/, sockets/,
# runtime_resources/) mode 777, whatever was set before; logs hold job output and the
# dashboard's data. Make them this user's alone again. Ray's own processes run as this user.
make_private() {
  [ -d "$TEMP_DIR" ] && [ -O "$TEMP_DIR" ] || return 0
  chmod 700 "$TEMP_DIR"
  find "$TEMP_DIR" -xdev -type d -user "$(id -u)" -exec chmod go-rwx {} + 2>/dev/null || true
}

print_info() {
  cat <<EOF
Ray head running on this machine only (127.0.0.1), token authentication on.
  job API:    $ADDRESS   (codenib submit's default address)
  token file: $TOKEN_FILE   (the token is never printed; keep the file private)
  submit:     export RAY_AUTH_TOKEN_PATH=$TOKEN_FILE
              codenib submit jobs/demo.toml --wait
  dashboard:  $ADDRESS in a browser on this machine (it needs the token too)
  logs:       $TEMP_DIR/session_latest/logs
  stop:       $0 stop
EOF
}

verb=${1:-start}
[ $# -gt 0 ] && shift
case "$verb" in
  status)
    if job_api_answers; then print_info; exit 0; fi
    echo "start_local_head: no head answers at $ADDRESS with the token in $TOKEN_FILE" >&2
    exit 1 ;;
  stop)
    pids=$(head_pids)
    if [ -z "$pids" ]; then echo "start_local_head: no head running under $TEMP_DIR"; exit 0; fi
    # shellcheck disable=SC2086
    kill -TERM $pids 2>/dev/null || true
    for _ in $(seq "$STOP_GRACE_S"); do
      alive=$(for p in $pids; do kill -0 "$p" 2>/dev/null && echo "$p"; done || true)
      [ -z "$alive" ] && break
      sleep 1
    done
    alive=$(for p in $pids; do kill -0 "$p" 2>/dev/null && echo "$p"; done || true)
    # shellcheck disable=SC2086
    [ -n "$alive" ] && kill -KILL $alive 2>/dev/null || true
    echo "start_local_head: stopped the head under $TEMP_DIR"
    exit 0 ;;
  start) ;;
  *) die "usage: $0 [start [RAY START OPTIONS...] | status | stop]" ;;
esac

[ -n "$BIN_DIR" ] ||
  die "no ray executable; activate CodeNib's environment (. .venv/bin/activate) or set RAY=/path/to/ray"
if job_api_answers; then
  make_private
  echo "start_local_head: already running"
  print_info
  exit 0
fi
[ -z "$(head_pids)" ] ||
  die "a head is running under $TEMP_DIR but its job API does not answer at $ADDRESS; run: $0 stop"
for port in "$GCS_PORT" "$DASHBOARD_PORT" "$CLIENT_PORT" "$AGENT_PORT"; do
  ! port_in_use "$port" ||
    die "port $port on 127.0.0.1 is taken (another Ray?); choose others with CODENIB_RAY_PORT, CODENIB_DASHBOARD_PORT, CODENIB_RAY_CLIENT_PORT, CODENIB_RAY_AGENT_PORT"
done

mkdir -p "$HEAD_HOME" && chmod 700 "$HEAD_HOME"
if [ ! -s "$TOKEN_FILE" ]; then
  (umask 077 && "$PY" -c 'import secrets; print(secrets.token_hex(32))' > "$TOKEN_FILE")
fi
chmod 600 "$TOKEN_FILE"
mkdir -p "$TEMP_DIR"
[ -O "$TEMP_DIR" ] || die "$TEMP_DIR belongs to another user; set CODENIB_RAY_TEMP_DIR to a folder of yours"
chmod 700 "$TEMP_DIR"

# Why each setting:
#   RAY_AUTH_MODE=token, RAY_AUTH_TOKEN_PATH   every Ray API (job API, GCS, raylet) asks for the
#       token; RAY_AUTH_TOKEN is unset so a stray one in the shell cannot replace the file's.
#   RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0   `ray start` otherwise rewrites --node-ip-address=127.0.0.1
#       to this machine's network address, and the GCS, raylet and agents then listen on all
#       interfaces; with it, the node stays on the loopback address (and no other machine can
#       join this head: it is a single-machine head by design).
#   --dashboard-host=127.0.0.1   the job API and dashboard answer this machine only.
#   PATH   jobs run `codenib` and `python` from the environment that holds this ray.
env -u RAY_AUTH_TOKEN -u RAY_ADDRESS \
  RAY_AUTH_MODE=token RAY_AUTH_TOKEN_PATH="$TOKEN_FILE" RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0 \
  PATH="$BIN_DIR:$PATH" \
  "$RAY_BIN" start --head --node-ip-address=127.0.0.1 --port="$GCS_PORT" \
    --dashboard-host=127.0.0.1 --dashboard-port="$DASHBOARD_PORT" --include-dashboard=true \
    --ray-client-server-port="$CLIENT_PORT" --dashboard-agent-listen-port="$AGENT_PORT" \
    --temp-dir="$TEMP_DIR" --disable-usage-stats ${CPUS:+--num-cpus="$CPUS"} "$@" \
    > "$HEAD_HOME/start.log" 2>&1 ||
  { make_private; tail -n 20 "$HEAD_HOME/start.log" >&2; die "ray start failed; the whole log is $HEAD_HOME/start.log"; }
make_private

for _ in $(seq "$START_WAIT_S"); do
  # Again once the job API answers: the dashboard and agents create folders of their own.
  if job_api_answers; then make_private; print_info; exit 0; fi
  sleep 1
done
die "the head started but its job API did not answer at $ADDRESS within ${START_WAIT_S}s; see $TEMP_DIR/session_latest/logs/dashboard.log"
