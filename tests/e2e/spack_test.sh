#!/usr/bin/env bash
# spack_test.sh <shardtune binary> <case>: the Spack recipe (spack/repo) with a real Spack, as a
# cluster user runs it. concretize_cpu_and_gpu: the GPU spec concretizes for two architectures
# with every package buildable and nothing installed, and cuda_arch reaches nccl and py-torch; the
# GPU spec also concretizes onto the site packages.yaml that docs/install.md prints; the CPU spec
# concretizes onto a site's externals (spack/externals/debian12.yaml) with shardtune the only
# package built. install_test_root: `spack install --test=root` of the CPU spec onto those
# externals builds, runs the recipe's check() (unit and MPI tiers) and installs; Spack's own Tcl
# module then puts shardtune, launch.slurm, the examples and the docs where launch.slurm's
# comments say they are.
# Spack: ST_SPACK (its bin/spack), else $SPACK_ROOT/bin/spack, else `spack` on PATH. Skipped
# (77, with the reason) where there is none or its Python lacks clingo (docs/install.md);
# install_test_root also where no externals file fits the machine (ST_SPACK_EXTERNALS names one).
# shellcheck source=harness.sh
source "$(dirname "$0")/harness.sh"
skip() { echo "skipped: $*"; exit 77; }

spack=${ST_SPACK:-}
[ -z "$spack" ] && [ -n "${SPACK_ROOT:-}" ] && spack=$SPACK_ROOT/bin/spack
[ -z "$spack" ] && spack=$(command -v spack || true)
[ -n "$spack" ] && [ -x "$spack" ] || skip "no Spack (set ST_SPACK or SPACK_ROOT; docs/install.md)"
# The test's own configuration: nothing from ~/.spack or the site's, a fresh store and stage.
export SPACK_DISABLE_LOCAL_CONFIG=1 SPACK_USER_CONFIG_PATH=$work/user SPACK_USER_CACHE_PATH=${ST_SPACK_CACHE:-$work/cache}
"$spack" python -c 'import clingo' >/dev/null 2>&1 ||
  skip "$spack cannot import clingo (offline: build its Python module, docs/install.md; online: spack bootstrap now)"
version=$("$spack" --version | awk '{ print $1 }')
echo "Spack $version at $spack"

# A scope with the recipe's repository, and (with_externals) the site's externals.
scope() {  # scope <dir> [externals.yaml]
  mkdir -p "$1"
  printf 'repos:\n- %s/spack/repo\n' "$ST_SOURCE_DIR" >"$1/repos.yaml"
  [ -z "${2:-}" ] || cp "$2" "$1/packages.yaml"
}
externals=${ST_SPACK_EXTERNALS:-}
if [ -z "$externals" ] && grep -q '^12' /etc/debian_version 2>/dev/null; then
  externals=$ST_SOURCE_DIR/spack/externals/debian12.yaml
fi

case "$case_name" in
  concretize_cpu_and_gpu)
    scope "$work/bare"
    for arch in 90 80; do
      run --exit 0 "$spack" -C "$work/bare" spec -I shardtune@main +cuda cuda_arch=$arch
      expect_output "^ -   shardtune@main.*\+cuda.* cuda_arch=$arch"
      grep -E '^ -\s+\^nccl@' <<<"$out" | grep -q "cuda_arch=$arch" || fail "nccl did not get cuda_arch=$arch"
      grep -E '^ -\s+\^py-torch@' <<<"$out" | grep -q "+cuda.*cuda_arch=$arch" || fail "py-torch is not +cuda cuda_arch=$arch"
      # (the libc is always the system's: Spack detects it)
      grep -E '^\[[+e^]\]' <<<"$out" | grep -qv '\^glibc@' && fail "the GPU spec reused something installed or external"
    done
    run --exit 1 "$spack" -C "$work/bare" spec -I shardtune@main +cuda
    expect_output "cuda_arch=90 for H100"
    # The site packages.yaml that docs/install.md prints, as printed: the GPU spec links the
    # site's openmpi, hdf5, cuda and nccl and builds only what the site lacks.
    awk '/^### A site.s externals/ { section = 1 } section && /^```yaml$/ { body = 1; next }
      body && /^```$/ { exit } body' "$ST_SOURCE_DIR/docs/install.md" >"$work/docs_packages.yaml"
    [ -s "$work/docs_packages.yaml" ] || fail "no packages.yaml under docs/install.md's \"A site's externals\""
    scope "$work/docs_site" "$work/docs_packages.yaml"
    run --exit 0 "$spack" -C "$work/docs_site" spec -I shardtune@main +cuda cuda_arch=90
    for package in openmpi hdf5 cuda nccl; do
      grep -Eq "^\[e\]\s+\^$package@" <<<"$out" || fail "docs/install.md's $package external was not used"
    done
    grep -E '^ -\s+\^py-torch@' <<<"$out" | grep -q "+cuda.*cuda_arch=90" || fail "py-torch is not +cuda cuda_arch=90 on the docs' externals"
    [ -n "$externals" ] || skip "the GPU spec concretizes; no externals file fits this machine for the CPU spec"
    scope "$work/site" "$externals"
    run --exit 0 "$spack" -C "$work/site" spec -I shardtune@main ~cuda
    built=$(grep -E '^ -  ' <<<"$out" | grep -Ev 'shardtune@|gcc-runtime@' || true)
    [ -z "$built" ] || fail "the CPU spec builds more than shardtune on the externals: $built"
    ;;
  install_test_root)
    [ -n "$externals" ] || skip "no externals file fits this machine (ST_SPACK_EXTERNALS names one)"
    # The working tree as it is (uncommitted changes included), built by Spack as a develop spec.
    mkdir -p "$work/src"
    git -C "$ST_SOURCE_DIR" ls-files -z --cached --others --exclude-standard |
      (cd "$ST_SOURCE_DIR" && xargs -0 tar -cf - --ignore-failed-read) | tar -xf - -C "$work/src"
    mkdir -p "$work/env"
    cat >"$work/env/spack.yaml" <<EOF
spack:
  specs: [shardtune@main ~cuda]
  include: [$externals]
  repos: [$work/src/spack/repo]
  develop:
    shardtune: {spec: shardtune@main, path: $work/src}
  config:
    install_tree: {root: $work/store}
    build_stage: [$work/stage]
  modules:
    default:
      roots: {tcl: $work/modules}
      enable: [tcl]
      tcl: {hash_length: 0, all: {autoload: none}}
  view: false
EOF
    start=$(date +%s)
    if ! out=$("$spack" -e "$work/env" install --test=root -j "$(nproc)" 2>&1); then
      echo "$out" | tail -n 30
      # The tests check() ran, as ctest named them (the stage goes with $work).
      find "$work/stage" -name install-time-test-log.txt -exec grep -E -A40 'tests passed|FAILED' {} + | tail -n 60
      fail "spack install --test=root failed"
    fi
    echo "spack install --test=root: $(( $(date +%s) - start )) s"
    echo "external and built:"
    grep -E '^\[\+\] .*\(external|Successfully installed|Installing ' <<<"$out" | sed 's/^/  /'
    # ctest's summary, in the build log (gzipped in the store by current Spack) or the
    # install-time test log, by Spack version.
    logs=$(find "$work/store" -path '*shardtune*/.spack/*' \( -name 'spack-build-out.txt*' -o -name 'install-time-test-log.txt*' \))
    [ -n "$logs" ] || fail "no build or test log of shardtune in the store"
    # shellcheck disable=SC2086
    checked=$(gzip -dcf $logs | grep -E 'tests passed|tests failed')
    grep -Eq '100% tests passed, 0 tests failed out of [0-9]+' <<<"$checked" || fail "check() did not pass: $checked"
    echo "check(): $checked"
    run --exit 0 "$spack" -e "$work/env" find --format '{name} {prefix}'
    prefix=$(awk '$1 == "shardtune" { print $2 }' <<<"$out")
    [ -x "$prefix/bin/shardtune" ] || fail "no bin/shardtune under $prefix"
    run --exit 0 "$spack" -e "$work/env" module tcl refresh -y
    module=$(find "$work/modules" -path '*shardtune*' -type f | head -1)
    [ -n "$module" ] || fail "Spack wrote no shardtune module under $work/modules"
    grep -q "SHARDTUNE_ROOT" "$module" || fail "Spack's module does not set SHARDTUNE_ROOT: $module"
    # Loaded in a fresh shell: where launch.slurm's comments and the installed modulefile say.
    run --exit 0 env -i HOME="$HOME" PATH=/usr/bin:/bin bash -c "source /usr/share/modules/init/bash &&
      module use '$(dirname "$(dirname "$module")")' && module load '$(basename "$(dirname "$module")")' &&
      echo root=\$SHARDTUNE_ROOT && command -v shardtune && shardtune --version | head -1 && $installed_layout_check"
    expect_output "^root=$prefix$"
    expect_output "^$prefix/bin/shardtune$"
    expect_output "^layout=ok$"
    ;;
  *) fail "unknown case" ;;
esac
echo "PASS [$case_name]"
