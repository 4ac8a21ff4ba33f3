#!/usr/bin/env bash
# One entry point that sets up everything on a fresh Debian 12 machine and then runs:
#   ./run.sh demo    the auditor on the bundled demo fabric (embedded DuckDB)
#   ./run.sh test    lint, type check and the whole test suite (real ibsim, snmpd, sshd)
#   ./run.sh bench   the benchmark scripts (slow; not part of the tests)
set -euo pipefail
cd "$(dirname "$0")"

# openjdk-17-jre-headless: pyspark's JVM for tests/test_spark.py and bench_fleet.py.
APT_TEST=(python3-venv python3-pip ripgrep ibsim-utils infiniband-diags opensm snmpd snmp
          openssh-server chromium openjdk-17-jre-headless)
APT_DEMO=(python3-venv python3-pip ripgrep)

as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

apt_install() {
    local missing=() p
    for p in "$@"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" \
            || missing+=("$p")
    done
    # A pyenv or other non-Debian python brings its own venv and pip.
    if [ ${#missing[@]} -gt 0 ] && python3 -c 'import venv, ensurepip' 2>/dev/null; then
        local keep=()
        for p in "${missing[@]}"; do
            case $p in python3-venv|python3-pip) ;; *) keep+=("$p") ;; esac
        done
        missing=("${keep[@]+"${keep[@]}"}")
    fi
    if [ ${#missing[@]} -gt 0 ]; then
        echo "run.sh: installing Debian packages: ${missing[*]}" >&2
        as_root apt-get update -q >/dev/null
        as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
            "${missing[@]}" >/dev/null
    fi
}

venv() {
    if [ ! -x .venv/bin/auditor ] || [ pyproject.toml -nt .venv/.installed ]; then
        python3 -m venv .venv
        # pip's chatter goes to a log, shown only when the install fails
        if ! { .venv/bin/pip install -q --upgrade pip && .venv/bin/pip install -q -e '.[test]'; } \
                > .venv/pip.log 2>&1; then
            cat .venv/pip.log >&2
            echo "run.sh: installing the Python packages failed (log: .venv/pip.log)" >&2
            exit 1
        fi
        touch .venv/.installed
    fi
}

case "${1:-}" in
    demo)
        apt_install "${APT_DEMO[@]}"
        venv
        shift
        exec .venv/bin/auditor demo "$@"
        ;;
    test)
        apt_install "${APT_TEST[@]}"
        venv
        shift
        .venv/bin/ruff check auditor tests benchmarks
        .venv/bin/mypy
        exec .venv/bin/python -m pytest -q "$@"
        ;;
    bench)
        apt_install "${APT_TEST[@]}"
        venv
        shift
        for b in benchmarks/bench_*.py; do .venv/bin/python "$b" "$@"; done
        ;;
    *)
        echo "usage: ./run.sh demo|test|bench" >&2
        exit 2
        ;;
esac
