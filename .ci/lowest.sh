#!/usr/bin/env bash
# The fast tests of the core on the lowest versions pyproject.toml allows (.ci/lowest.py pins
# each floor), in a venv of their own. llama-cpp-python is not built a second time: the wheel
# pip built for .venv (the README's set-up) is taken from pip's cache.
set -euo pipefail
cd "$(dirname "$0")/.."
links=$(find "$(.venv/bin/pip cache dir)/wheels" -name 'llama_cpp_python-*.whl' -printf '--find-links=%h\n' 2>/dev/null | sort -u)
if [ -z "$links" ]; then
    echo "lowest.sh: no llama-cpp-python wheel in pip's cache; run the README's set-up (pip install -e \".[test]\") first" >&2
    exit 1
fi
venv=build/venv-lowest
rm -rf "$venv" && python3 -m venv "$venv"
floors=$(.venv/bin/python .ci/lowest.py)
echo "lowest.sh: the floors: $(echo $floors)"
# shellcheck disable=SC2086  # one --find-links per folder
"$venv/bin/pip" install -q --disable-pip-version-check --only-binary :all: $links -r <(echo "$floors")
"$venv/bin/pip" install -q --disable-pip-version-check --no-deps -e .
# The tests of the modules that call into a dependency; the whole fast suite takes ~4 minutes here.
"$venv/bin/python" -m pytest -m "not real" -q -p no:cacheprovider \
    tests/test_config.py tests/test_paths.py tests/test_provision.py tests/test_server_backend.py \
    tests/test_grammar.py tests/test_templates.py tests/test_validate.py tests/test_tools.py \
    tests/test_dispatch.py tests/test_loop.py tests/test_fail_closed.py tests/test_trace.py \
    tests/test_prefix_cache.py tests/test_formats.py tests/test_workspace.py tests/test_matching.py \
    tests/test_cli_surface.py::test_a_usage_error_is_one_line tests/test_fuzz.py::test_the_loop_survives_random_output
