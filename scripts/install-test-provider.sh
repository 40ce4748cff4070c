#!/usr/bin/env bash
# Build the test provider (crates/sng-test-provider) and install it as a
# filesystem mirror for the engine:
#   .tools/providers/example.com/sng/file/<version>/linux_amd64/terraform-provider-file_v<version>
# Debug build by default, release with PROFILE=release. Idempotent.
# Prints the mirror root (absolute), for a CLI config:
#   provider_installation {
#     filesystem_mirror { path = "<mirror>" include = ["example.com/*/*"] }
#     direct { exclude = ["example.com/*/*"] }
#   }
# Note: rebuilding under the same version changes the binary's checksum, so an
# existing .terraform.lock.hcl that pinned the old one must be removed.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)

PROFILE=${PROFILE:-debug}
case "$PROFILE" in
  debug) FLAGS=() ;;
  release) FLAGS=(--release) ;;
  *) echo "install-test-provider: PROFILE must be debug or release, not '$PROFILE'" >&2; exit 2 ;;
esac

cargo build --quiet -p sng-test-provider --bin terraform-provider-file "${FLAGS[@]}" >&2

# "path+file:///…/sng-test-provider#0.1.0" (or "…#sng-test-provider@0.1.0")
VERSION=$(cargo pkgid -p sng-test-provider)
VERSION=${VERSION##*[#@]}
TARGET_DIR=$(cargo metadata --format-version 1 --no-deps |
  python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')

MIRROR="$ROOT/.tools/providers"
DEST="$MIRROR/example.com/sng/file/$VERSION/linux_amd64"
mkdir -p "$DEST"
BIN="$DEST/terraform-provider-file_v$VERSION"
if ! cmp -s "$TARGET_DIR/$PROFILE/terraform-provider-file" "$BIN"; then
  cp "$TARGET_DIR/$PROFILE/terraform-provider-file" "$BIN.part"
  mv "$BIN.part" "$BIN"
  echo "install-test-provider: installed $BIN" >&2
fi
echo "$MIRROR"
