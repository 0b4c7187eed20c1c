#!/usr/bin/env bash
# Install the Debian packages named on the command line that are missing, and nothing else:
# no upgrade of what is already there. As root directly, else through sudo when it works
# without a password prompt; otherwise one line says what to install, and the exit is 1.
set -euo pipefail
missing=()
for pkg in "$@"; do
	dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" -eq 0 ]; then
	run=()
elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
	run=(sudo)
else
	echo "make test needs the Debian packages ${missing[*]}: run 'sudo apt-get install ${missing[*]}' (or as root), then make test again" >&2
	exit 1
fi
echo "installing missing Debian packages: ${missing[*]}" >&2
"${run[@]}" apt-get update -qq
"${run[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-upgrade --no-install-recommends "${missing[@]}"
