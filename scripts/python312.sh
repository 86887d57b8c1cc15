# Sourced by bootstrap.sh and gpu_check.sh: `find_python312` prints a Python 3.12 that can make
# venvs (python3.12 on PATH, else pyenv's newest 3.12), or nothing.
find_python312() {
  local candidate
  for candidate in python3.12 "$(command -v pyenv >/dev/null 2>&1 && ls -d "$(pyenv root)"/versions/3.12*/bin/python3.12 2>/dev/null | tail -n 1)"; do
    if [ -n "$candidate" ] && "$candidate" -c 'import sys, venv, ensurepip; assert sys.version_info[:2] == (3, 12)' >/dev/null 2>&1; then
      command -v "$candidate"
      return 0
    fi
  done
}
