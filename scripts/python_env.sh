# shellcheck shell=bash
# Sourced by every script that runs Python after scripts/setup.sh: puts the virtual
# environment setup.sh makes (.venv in the repository root, or KILN_VENV) first on PATH,
# so python3 (python3 -m pytest, and any python3 a test starts) runs with its packages
# while the system Python stays untouched. Where there is no environment yet (setup.sh
# before it makes one, or a GPU machine whose Python was set up by other means), the
# python3 already on PATH runs, as before. Sets kiln_venv to the environment's path.
kiln_venv=${KILN_VENV:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/.venv}
if [[ -x $kiln_venv/bin/python3 ]]; then
  # Absolute, so a relative KILN_VENV still holds after a script changes directory.
  kiln_venv=$(cd "$kiln_venv" && pwd)
  export VIRTUAL_ENV=$kiln_venv
  export PATH="$kiln_venv/bin:$PATH"
fi
