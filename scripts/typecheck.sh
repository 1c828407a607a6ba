#!/bin/sh
# Type-check omnisync as a user's checker sees it; exits non-zero on the first failure.
#
#   scripts/typecheck.sh            # with the python on PATH (needs mypy and pyright installed)
#   PYTHON=/path/to/python scripts/typecheck.sh
#
# 1. mypy --strict on the package (0 errors),
# 2. pyright on the package (0 errors),
# 3. pyright --verifytypes on the package installed, not editable, with its extras, in a
#    throwaway venv: every public symbol's type known (pyright cannot follow an editable install).
set -eu
python=${PYTHON:-python}
root=$(cd "$(dirname "$0")/.." && pwd)
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

cd "$root"
"$python" -m mypy --strict omnisync
"$python" -m pyright omnisync

"$python" -m venv "$scratch/venv"
"$scratch/venv/bin/pip" install --quiet "$root[all]"
cd "$scratch"
PATH="$scratch/venv/bin:$PATH" "$python" -m pyright --verifytypes omnisync --ignoreexternal > verifytypes.txt || true
grep -E "Symbols exported|With (known|ambiguous|unknown) type|completeness score" verifytypes.txt
if ! grep -q "Type completeness score: 100%" verifytypes.txt; then
    grep -E " - error: " verifytypes.txt || true
    echo "pyright --verifytypes: not every public symbol's type is known" >&2
    exit 1
fi
