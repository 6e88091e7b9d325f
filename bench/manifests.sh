#!/usr/bin/env bash
# Figures of issue 12 item 4, the manifests directory (not asserted anywhere):
#   1. time from a file change in the directory to the first container of
#      the new revision running, next to `dockctl apply -f` of the same
#      change, same run, SAMPLES each;
#   2. CPU of an idle controller watching a directory of 100 manifests, next
#      to an idle controller without --manifests over the same state
#      (utime+stime from /proc/PID/stat over IDLE seconds).
# Usage: bench/manifests.sh [SAMPLES=5] [IDLE=60]. Needs Go and Docker;
# builds its own FROM scratch workload image and removes everything it made.
set -euo pipefail
SAMPLES=${1:-5}
IDLE=${2:-60}
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
instance=bench-md-$$
image=dockctl-workload:bench-md-$$
ctrl=""
cleanup() {
  [ -n "$ctrl" ] && kill "$ctrl" 2>/dev/null && wait "$ctrl" 2>/dev/null || true
  ids=$(docker ps -aq --filter "label=io.dockctl.instance=$instance")
  [ -n "$ids" ] && docker rm -f $ids >/dev/null
  for n in $(docker network ls -q --filter "label=io.dockctl.instance=$instance"); do docker network rm "$n" >/dev/null; done
  for v in $(docker volume ls -q --filter "label=io.dockctl.instance=$instance"); do docker volume rm "$v" >/dev/null; done
  for i in $(docker images -q --filter "label=io.dockctl.instance=$instance"); do docker rmi -f "$i" >/dev/null; done
  docker rmi "$image" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

(cd "$root" && CGO_ENABLED=0 go build -o "$work/dockctl" ./cmd/dockctl && mkdir -p "$work/img" &&
  CGO_ENABLED=0 go build -tags grpcnotrace -o "$work/img/workload" ./cmd/workload)
docker build -q -t "$image" -f "$root/cmd/workload/Dockerfile" "$work/img" >/dev/null
dk() { "$work/dockctl" --instance "$instance" --state-dir "$work/state" "$@"; }
echo "command: bench/manifests.sh $SAMPLES $IDLE; $(nproc) CPUs; Docker $(docker version -f '{{.Server.Version}}')"

manifest() { # name replicas value
  cat <<YAML
apiVersion: apps/v1
kind: Deployment
metadata: {name: $1}
spec:
  replicas: $2
  selector: {matchLabels: {app: $1}}
  template:
    metadata: {labels: {app: $1}}
    spec:
      containers:
      - name: app
        image: $image
        env: [{name: DOCKCTL_TEST_VALUE, value: "$3"}]
YAML
}
# running_with NAME VALUE: a running container of NAME has VALUE.
running_with() {
  for id in $(docker ps -q --filter "label=io.dockctl.instance=$instance" --filter "label=io.dockctl.deployment=$1"); do
    docker inspect -f '{{range .Config.Env}}{{println .}}{{end}}' "$id" 2>/dev/null | grep -qx "DOCKCTL_TEST_VALUE=$2" && return 0
  done
  return 1
}
ms() { date +%s%3N; }
wait_for() { # NAME VALUE START → prints ms
  until running_with "$1" "$2"; do
    if [ $(( $(ms) - $3 )) -gt 120000 ]; then echo "timeout" >&2; exit 1; fi
    sleep 0.02
  done
  echo $(( $(ms) - $3 ))
}
# write atomically, as git does
put() { manifest "$2" 1 "$3" > "$1.tmp" && mv "$1.tmp" "$1"; }

mkdir -p "$work/dir" "$work/files"
put "$work/dir/web.yaml" web v0
put "$work/files/cli.yaml" cli v0
dk apply -f "$work/files/cli.yaml" >/dev/null
start_controller() { # not through dk: $! must be the controller's own PID
  "$work/dockctl" --instance "$instance" --state-dir "$work/state" controller --metrics-addr "" "$@" 2>>"$work/ctrl.log" &
  ctrl=$!
}
start_controller --manifests "$work/dir"
wait_for web v0 "$(ms)" >/dev/null
wait_for cli v0 "$(ms)" >/dev/null
dir_ms=(); apply_ms=()
for i in $(seq 1 "$SAMPLES"); do
  t=$(ms); put "$work/dir/web.yaml" web "v$i"; dir_ms+=("$(wait_for web "v$i" "$t")")
  t=$(ms); put "$work/files/cli.yaml" cli "v$i"; dk apply -f "$work/files/cli.yaml" >/dev/null; apply_ms+=("$(wait_for cli "v$i" "$t")")
done
echo "file change → first new-revision container running (ms): ${dir_ms[*]}"
echo "apply -f of the same change                       (ms): ${apply_ms[*]}"
kill "$ctrl"; wait "$ctrl" 2>/dev/null || true; ctrl=""

# Idle: 100 deployments of 0 replicas, in the directory or applied.
rm -f "$work/dir/"*.yaml
dk delete deployment web >/dev/null
dk delete deployment cli >/dev/null
for i in $(seq -w 1 100); do manifest "idle$i" 0 x > "$work/dir/idle$i.yaml"; done
cpu() { # PID → utime+stime in clock ticks
  awk '{print $14+$15}' "/proc/$1/stat"
}
idle() { # label args…
  local label=$1; shift
  start_controller "$@"
  sleep 10 # settle: first syncs done
  local a; a=$(cpu "$ctrl"); sleep "$IDLE"; local b; b=$(cpu "$ctrl")
  local tck; tck=$(getconf CLK_TCK)
  awk -v d=$((b - a)) -v t="$tck" -v s="$IDLE" -v l="$label" 'BEGIN { printf "idle CPU %-32s %.3f%% of a core (%d ticks in %ds)\n", l, 100*d/t/s, d, s }'
  kill "$ctrl"; wait "$ctrl" 2>/dev/null || true; ctrl=""
}
idle "--manifests DIR (100 manifests)" --manifests "$work/dir"
idle "no --manifests (same 100 applied)"
