#!/usr/bin/env bash
# make demo: a local OCI registry, an embedded sng server, the example modules published,
# the example workspaces applied until Ready, then their status and outputs.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
SNG=${SNG:-$ROOT/target/release/sng}
ENGINE=$(scripts/install-engine.sh)
MIRROR=$(scripts/install-test-provider.sh)
DEMO=$(mktemp -d "${TMPDIR:-/tmp}/sng-demo.XXXXXX")
FILES=/var/tmp/sng-demo/files           # where the example Provider `files` writes (examples/provider.yaml)
PORT=${SNG_DEMO_REGISTRY_PORT:-5055}    # the examples name 127.0.0.1:5055
REGISTRY=127.0.0.1:$PORT
PIDS=()
cleanup() {
  for pid in "${PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
}
trap cleanup EXIT
wait_until() { # wait_until SECONDS DESCRIPTION COMMAND...
  local deadline=$((SECONDS + $1)) what=$2; shift 2
  until "$@" >/dev/null 2>&1; do
    [ $SECONDS -lt $deadline ] || { echo "demo: timed out waiting for $what" >&2; exit 1; }
    sleep 0.1
  done
}

echo "== registry at $REGISTRY"
mkdir -p "$DEMO/registry"
cat > "$DEMO/registry.yml" <<YAML
version: 0.1
log: { level: error }
storage: { filesystem: { rootdirectory: $DEMO/registry }, delete: { enabled: true } }
http: { addr: $REGISTRY }
YAML
docker-registry serve "$DEMO/registry.yml" >"$DEMO/registry.log" 2>&1 &
PIDS+=($!)
wait_until 30 "the registry" curl -fsS "http://$REGISTRY/v2/"

echo "== sng module push (OpenTofu module packages)"
for m in pet app; do
  printf '  %-4s ' "$m"; "$SNG" module push "examples/modules/$m" "oci://$REGISTRY/sng-examples/$m" --tag 1.0.0 --insecure
done

mkdir -p "$FILES"
printf 'This directory is managed by sng.\n' > "$FILES/readme.txt"   # adopted by the `imports` of app
rm -f "$FILES/app.txt"

"$SNG" server --data-dir "$DEMO/data" --listen 127.0.0.1:0 --engine "$ENGINE" \
  --insecure-registry "$REGISTRY" --provider-mirror "$MIRROR" --sandbox-rw "$FILES" 2>"$DEMO/server.log" &
PIDS+=($!)
wait_until 30 "the server" test -s "$DEMO/data/server.url"
export SNG_SERVER=$(cat "$DEMO/data/server.url") SNG_TOKEN=$(cat "$DEMO/data/admin.token")
echo "== sng server at $SNG_SERVER (data: $DEMO/data)"

examples() { for f in "$@"; do echo "---"; sed "s/127\.0\.0\.1:5055/$REGISTRY/g" "$f"; done; }
echo "== sng apply -f examples/"
examples examples/pet.yaml examples/provider.yaml examples/secrets.yaml | "$SNG" apply -f -
"$SNG" wait workspace pet --for condition=Ready --timeout 3m
examples examples/app.yaml | "$SNG" apply -f -
"$SNG" wait workspace app --for condition=Ready --timeout 3m
echo
echo "== sng kind get workspaces -o wide"
"$SNG" kind get workspaces -o wide
echo
for ws in pet app; do
  secret=$([ "$ws" = app ] && echo app-outputs || echo pet-outputs)
  echo "== outputs of $ws (secret $secret)"
  "$SNG" kind get secret "$secret" -o json |
    python3 -c 'import base64, json, sys; [print(f"  {k} = {base64.b64decode(v).decode()}") for k, v in json.load(sys.stdin)["data"].items()]'
done
echo
echo "== sng runs workspace app"
"$SNG" runs workspace app
echo
echo "== files written by the app workspace in $FILES"
ls -l "$FILES"
