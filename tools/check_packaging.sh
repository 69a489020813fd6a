#!/bin/sh
# check_packaging.sh - the CMake and pkg-config routes into a user's build,
# with tests/cmake_consumer (its main.c defines NORM_BWD_IMPLEMENTATION,
# makes one call and prints "openmp: yes" or "openmp: no"):
#   cmake     configure this repository (NORM_BWD_BUILD_EXAMPLES=ON) and
#             `cmake --install` it into a prefix under $BUILD: exactly the
#             headers (not norm_bwd_gpu.h), the package config files and
#             the pkg-config files; the quickstart example built by CMake
#             (linked with norm_bwd::openmp; the others are built the same
#             way, and by tools/check_examples.sh) prints its .expected;
#             NORM_BWD_INSTALL_GPU_HEADER=ON and `--install --prefix`
#             add norm_bwd_gpu.h and put that prefix in the .pc files
#   consumer  find_package(norm_bwd CONFIG REQUIRED COMPONENTS openmp) of
#             that prefix, and add_subdirectory of this checkout: consumer
#             (norm_bwd::norm_bwd) runs without OpenMP, consumer_openmp
#             (norm_bwd::openmp) with it
#   make      `make install PREFIX=...` (and GPU_HEADER=1), then the consumer
#             compiled with `pkg-config --cflags --libs norm_bwd` and with
#             norm_bwd-openmp (PKG_CONFIG_PATH), run without and with OpenMP
# The CMake install and its find_package consumer run beside the
# add_subdirectory consumer and then the make install checks (2 cores).
# Ends with a "N passed, N failed" line.
set -u
mkdir -p "${BUILD:-build}"
B=$(cd "${BUILD:-build}" && pwd)/packaging
SRC=$(pwd)
CC=${CC:-cc}
export CC
rm -rf "$B"; mkdir -p "$B"
# each check prints one "ok: " or "FAIL: " line; they are counted at the end
ok() { echo "ok: $*"; }
fail() { echo "FAIL: $*"; }
step() { # label log command...: run, keep the output in log, count
    sl=$1 slog=$2; shift 2
    if "$@" > "$slog" 2>&1; then ok "$sl"; return 0; fi
    fail "$sl (log $slog)"; tail -n 20 "$slog"; return 1
}
# The header's version, as CMake and `make install` write it.
VERSION=$(awk '/^#define NBWD_VERSION_(MAJOR|MINOR|PATCH) /{ v[$2] = $3 }
    END { printf "%d.%d.%d\n", v["NBWD_VERSION_MAJOR"], v["NBWD_VERSION_MINOR"], v["NBWD_VERSION_PATCH"] }' norm_bwd.h)

# a directory holds exactly these files (relative paths, sorted)
has_files() { # label dir file...
    hl=$1 hd=$2; shift 2
    want=$(printf '%s\n' "$@" | sort)
    got=$(cd "$hd" 2>/dev/null && find . -type f | sed 's|^\./||' | sort)
    if [ "$got" = "$want" ]; then ok "$hl"; else
        fail "$hl: installed files differ"; printf 'expected:\n%s\ngot:\n%s\n' "$want" "$got"
    fi
}
# the consumer's two programs: without, then with OpenMP
run_consumer() { # label dir
    rl=$1 rd=$2
    for prog in consumer:no consumer_openmp:yes; do
        exe=$rd/${prog%%:*}; want="openmp: ${prog#*:}"
        out=$("$exe" 2>&1); rc=$?
        if [ $rc -eq 0 ] && echo "$out" | grep -qx "$want"; then ok "$rl: ${prog%%:*} ($want)"; else
            fail "$rl: ${prog%%:*}: exit $rc, expected \"$want\""; echo "$out"
        fi
    done
}

cmake_install_and_find_package() {
    # --- CMake: configure, build the quickstart example, install ---------------
    cm=$B/cmake-build
    if step "cmake: configure the repository" "$B/cmake-configure.log" \
            cmake -S "$SRC" -B "$cm" -DCMAKE_INSTALL_PREFIX="$prefix" -DNORM_BWD_BUILD_EXAMPLES=ON &&
       step "cmake: build examples/quickstart.c" "$B/cmake-build.log" \
            cmake --build "$cm" --target norm_bwd_example_quickstart &&
       step "cmake --install" "$B/cmake-install.log" cmake --install "$cm"; then
        has_files "cmake --install: headers, package config, pkg-config files" "$prefix" \
            include/norm_bwd.h include/norm_bwd_simd.h \
            lib/cmake/norm_bwd/norm_bwdConfig.cmake lib/cmake/norm_bwd/norm_bwdConfigVersion.cmake \
            lib/cmake/norm_bwd/norm_bwdTargets.cmake \
            lib/pkgconfig/norm_bwd.pc lib/pkgconfig/norm_bwd-openmp.pc
        if grep -q -- '-fopenmp' "$cm"/CMakeFiles/norm_bwd_example_quickstart.dir/flags.make; then
            ok "cmake: the examples build with norm_bwd::openmp (-fopenmp)"
        else
            fail "cmake: the examples were not built with -fopenmp (norm_bwd::openmp missing?)"
        fi
        if "$cm/quickstart" 2>/dev/null | cmp -s - examples/quickstart.expected; then ok "cmake-built example quickstart"; else
            fail "cmake-built example quickstart: output differs from examples/quickstart.expected"
        fi
        # the GPU header only on request; --prefix at install time reaches the .pc files
        gp=$B/cmake-prefix-gpu
        if step "cmake: NORM_BWD_INSTALL_GPU_HEADER=ON, --install --prefix" "$B/cmake-install-gpu.log" \
                sh -c "cmake -DNORM_BWD_INSTALL_GPU_HEADER=ON '$cm' && cmake --install '$cm' --prefix '$gp'"; then
            if [ -f "$gp/include/norm_bwd_gpu.h" ] && grep -qx "prefix=$gp" "$gp/lib/pkgconfig/norm_bwd.pc"; then
                ok "cmake: norm_bwd_gpu.h installed on request; the .pc files name the --prefix"
            else
                fail "cmake: no norm_bwd_gpu.h in $gp/include, or norm_bwd.pc does not say prefix=$gp"
            fi
        fi
    fi

    # --- a CMake consumer: find_package of that prefix ---------------------------
    fp=$B/consumer-find-package
    if step "consumer: find_package(norm_bwd CONFIG REQUIRED COMPONENTS openmp)" "$B/consumer-find-package.log" \
            sh -c "cmake -S '$SRC/tests/cmake_consumer' -B '$fp' -DCMAKE_PREFIX_PATH='$prefix' -DREQUIRE_OPENMP=ON &&
                   cmake --build '$fp' -j 2"; then
        if grep -qx "norm_bwd_DIR:PATH=$prefix/lib/cmake/norm_bwd" "$fp/CMakeCache.txt"; then
            ok "consumer: find_package found $prefix"
        else
            fail "consumer: find_package found another norm_bwd: $(grep '^norm_bwd_DIR' "$fp/CMakeCache.txt")"
        fi
        run_consumer "find_package" "$fp"
    fi
}

add_subdirectory_and_make_install() {
    # --- a CMake consumer: add_subdirectory of this checkout --------------------
    as=$B/consumer-add-subdirectory
    if step "consumer: add_subdirectory(norm_bwd)" "$B/consumer-add-subdirectory.log" \
            sh -c "cmake -S '$SRC/tests/cmake_consumer' -B '$as' -DNORM_BWD_SOURCE_DIR='$SRC' -DREQUIRE_OPENMP=ON &&
                   cmake --build '$as' -j 2"; then
        run_consumer "add_subdirectory" "$as"
    fi

    # --- make install and pkg-config ---------------------------------------------
    mp=$B/make-prefix
    if step "make install PREFIX=$mp" "$B/make-install.log" env MAKEFLAGS= make --no-print-directory install PREFIX="$mp"; then
        has_files "make install: headers and pkg-config files" "$mp" \
            include/norm_bwd.h include/norm_bwd_simd.h lib/pkgconfig/norm_bwd.pc lib/pkgconfig/norm_bwd-openmp.pc
    fi
    if step "make install GPU_HEADER=1 DESTDIR=..." "$B/make-install-gpu.log" \
            env MAKEFLAGS= make --no-print-directory install PREFIX=/usr/local GPU_HEADER=1 DESTDIR="$B/make-destdir"; then
        if [ -f "$B/make-destdir/usr/local/include/norm_bwd_gpu.h" ] &&
           grep -qx "prefix=/usr/local" "$B/make-destdir/usr/local/lib/pkgconfig/norm_bwd.pc"; then
            ok "make install GPU_HEADER=1: norm_bwd_gpu.h installed, DESTDIR left out of the .pc files"
        else
            fail "make install GPU_HEADER=1: no norm_bwd_gpu.h, or norm_bwd.pc does not say prefix=/usr/local"
        fi
    fi
    PKG_CONFIG_PATH=$mp/lib/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}
    export PKG_CONFIG_PATH
    v=$(pkg-config --modversion norm_bwd 2>&1)
    if [ "$v" = "$VERSION" ]; then ok "pkg-config --modversion norm_bwd: $v"; else
        fail "pkg-config --modversion norm_bwd: \"$v\", the header says $VERSION"
    fi
    mkdir -p "$B/pkg-config"
    for pc in norm_bwd:no norm_bwd-openmp:yes; do
        name=${pc%%:*} want="openmp: ${pc#*:}"
        flags=$(pkg-config --cflags --libs "$name" 2>&1) || { fail "pkg-config --cflags --libs $name: $flags"; continue; }
        exe=$B/pkg-config/$name
        # (main.c's folder has no norm_bwd.h: the header comes from the prefix)
        if step "cc \$(pkg-config --cflags --libs $name): $flags" "$B/pkg-config/$name.log" \
                $CC tests/cmake_consumer/main.c -o "$exe" $flags; then
            out=$("$exe" 2>&1); rc=$?
            if [ $rc -eq 0 ] && echo "$out" | grep -qx "$want"; then ok "pkg-config $name: runs ($want)"; else
                fail "pkg-config $name: exit $rc, expected \"$want\""; echo "$out"
            fi
        fi
    done
}

prefix=$B/cmake-prefix
add_subdirectory_and_make_install > "$B/part2.out" 2>&1 &
cmake_install_and_find_package > "$B/part1.out" 2>&1
wait
# the .pc files of the CMake install point at its prefix
if [ -f "$prefix/lib/pkgconfig/norm_bwd.pc" ]; then
    f=$(PKG_CONFIG_PATH=$prefix/lib/pkgconfig pkg-config --cflags --libs norm_bwd-openmp 2>&1)
    case " $f " in
        *" -I$prefix/include "*"-fopenmp"*|*"-fopenmp"*" -I$prefix/include "*) ok "pkg-config on the CMake install: $f" ;;
        *) fail "pkg-config --cflags --libs norm_bwd-openmp on the CMake install: $f" ;;
    esac
fi > "$B/part3.out"
cat "$B/part1.out" "$B/part2.out" "$B/part3.out"
PASS=$(cat "$B"/part*.out | grep -c '^ok: ')
FAIL=$(cat "$B"/part*.out | grep -c '^FAIL: ')
echo "$PASS passed, $FAIL failed"
[ "$FAIL" -eq 0 ]
