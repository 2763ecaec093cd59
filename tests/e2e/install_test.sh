#!/usr/bin/env bash
# install_test.sh <shardtune binary> <case>: `cmake --install` of this build into a temporary
# prefix, the tree moved elsewhere (relocatable), and the installed binary run through the
# modulefiles: the Tcl one with Environment Modules, the Lua one and the Tcl one with Lmod.
# ST_BINARY_DIR: the build directory; ST_LMOD: Lmod's libexec/lmod (scripts/install-deps.sh).
# shellcheck source=harness.sh
source "$(dirname "$0")/harness.sh"
version=$("$bin" --version | head -1 | awk '{ print $2 }' | cut -d+ -f1)
lmod=${ST_LMOD:-/opt/lmod-debian/usr/share/lmod/lmod/libexec/lmod}
[ -x "$lmod" ] || lmod=/usr/share/lmod/lmod/libexec/lmod

# A site's MPI module (both syntaxes): shardtune's modulefiles load it when it is available.
mkdir -p "$work/mpi/openmpi"
printf 'setenv("SITE_MPI_LOADED", "lua")\n' >"$work/mpi/openmpi/4.1.lua"
printf '#%%Module1.0\nsetenv SITE_MPI_LOADED tcl\n' >"$work/mpi/openmpi/4.1"

# in_modules <init: envmodules|lmod> <modulefile dir> [VAR=value...]: loads shardtune there (and
# the site MPI module's dir) in a fresh shell; prints SHARDTUNE_ROOT, SITE_MPI_LOADED,
# `command -v shardtune`, its --version line, and layout=ok when launch.slurm, the examples and
# the docs are where launch.slurm's comments say (under $SHARDTUNE_ROOT).
in_modules() {
  local system=$1 dir=$2
  shift 2
  local load
  if [ "$system" = envmodules ]; then
    load="source /usr/share/modules/init/bash && module use '$work/mpi' '$dir' && module load shardtune"
  else
    load="eval \"\$('$lmod' bash use '$work/mpi' '$dir')\" && eval \"\$('$lmod' bash load shardtune)\""
  fi
  env -i HOME="$HOME" PATH=/usr/bin:/bin "$@" bash -c "$load"' && echo "root=$SHARDTUNE_ROOT" &&
    echo "mpi=${SITE_MPI_LOADED:-none}" && command -v shardtune && shardtune --version | head -1 && '"$installed_layout_check"
}

case "$case_name" in
  installs_and_modules_load)
    run --exit 0 cmake --install "$ST_BINARY_DIR" --prefix "$work/prefix"
    for file in bin/shardtune share/shardtune/slurm/launch.slurm share/shardtune/examples/demo.ini \
                share/doc/shardtune/README.md share/doc/shardtune/docs/README.md share/modulefiles/shardtune/"$version".lua \
                share/modulefiles/shardtune/"$version" share/shardtune/tools/lm_eval_task.py; do
      [ -e "$work/prefix/$file" ] || fail "the install lacks $file"
    done
    [ -x "$work/prefix/share/shardtune/slurm/launch.slurm" ] || fail "launch.slurm is not executable"
    [ -x "$work/prefix/share/shardtune/tools/lm_eval_task.py" ] || fail "lm_eval_task.py is not executable"
    mv "$work/prefix" "$work/moved"  # modulefiles find the prefix from their own path
    modules="$work/moved/share/modulefiles"

    [ -f /usr/share/modules/init/bash ] || fail "Environment Modules missing (scripts/install-deps.sh installs it)"
    run --exit 0 in_modules envmodules "$modules"
    expect_output "^layout=ok$"
    expect_output "^root=$work/moved$"
    expect_output "^mpi=tcl$"
    expect_output "^$work/moved/bin/shardtune$"
    expect_output "^shardtune $version"

    [ -x "$lmod" ] || fail "Lmod missing (scripts/install-deps.sh unpacks it to /opt/lmod-debian)"
    run --exit 0 in_modules lmod "$modules"  # Lmod takes the .lua beside the Tcl twin
    expect_output "^root=$work/moved$"
    expect_output "^layout=ok$"
    expect_output "^mpi=(lua|tcl)$"
    expect_output "^shardtune $version"
    # The Tcl twin in Lmod, copied into a site's tree: SHARDTUNE_ROOT names the prefix.
    mkdir -p "$work/site/shardtune"
    cp "$modules/shardtune/$version" "$work/site/shardtune/"
    run --exit 0 in_modules lmod "$work/site" SHARDTUNE_ROOT="$work/moved"
    expect_output "^mpi=(lua|tcl)$"
    expect_output "^$work/moved/bin/shardtune$"
    expect_output "^shardtune $version"
    expect_output "^layout=ok$"
    ;;
  *) fail "unknown case" ;;
esac
echo "PASS [$case_name]"
