#!/usr/bin/env sh
# Prints where the tests' Python environment lives (tests/python/requirements.txt): outside the
# clone, so every clone on a machine shares one. ST_PYTHON_ENV chooses another place.
# scripts/install-deps.sh makes it; CMake's ST_ORACLE_PYTHON reads it.
echo "${ST_PYTHON_ENV:-${XDG_CACHE_HOME:-$HOME/.cache}/shardtune/python-env}"
