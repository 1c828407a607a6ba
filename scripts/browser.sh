#!/usr/bin/env bash
# The browser the page test drives: Debian's chromium (Playwright is told its path and never
# downloads a browser of its own), and a font so its screenshots show text. Idempotent.
#
#   bash scripts/browser.sh      # installs what is missing; prints the chromium path
set -euo pipefail

log() { echo "browser: $*" >&2; }

if ! command -v chromium >/dev/null || ! fc-list 2>/dev/null | grep -qi dejavu; then
    [ "$(id -u)" = 0 ] || { log "ERROR: need root to apt-get install chromium"; exit 1; }
    log "apt-get update"
    apt-get update -qq >&2
    log "apt-get install chromium fonts-dejavu-core"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core >&2 </dev/null
fi
log "$(chromium --version 2>/dev/null || echo 'chromium --version failed')"
command -v chromium
