#!/bin/sh
# bench/deps.sh - what `make bench` needs beyond a C compiler with OpenMP:
#   libdnnl-dev  (oneDNN, for the comparison columns; optional)
#   gnuplot-nox  (for --plot; optional)
# As root: apt-get update once, then apt-get install -y the missing ones.
# Otherwise: one line per missing package, and the benchmark runs without it.
# CC is the compiler the build will use (for the dnnl.h probe).
CC=${CC:-cc}
missing=""
if ! printf '#include <dnnl.h>\nint main(void){return 0;}\n' | $CC -x c -o /dev/null - -ldnnl >/dev/null 2>&1; then
    missing="$missing libdnnl-dev"
fi
if ! command -v gnuplot >/dev/null 2>&1; then
    missing="$missing gnuplot-nox"
fi
[ -z "$missing" ] && exit 0
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "bench: installing$missing"
    if apt-get update -qq >/dev/null 2>&1; then
        for pkg in $missing; do
            DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$pkg" >/dev/null 2>&1 ||
                echo "bench: apt-get install $pkg failed; continuing without it"
        done
    else
        echo "bench: apt-get update failed; continuing without$missing"
    fi
else
    for pkg in $missing; do
        case $pkg in
        libdnnl-dev) echo "bench: libdnnl-dev not installed (not root): oneDNN columns will say n/a" ;;
        gnuplot-nox) echo "bench: gnuplot-nox not installed (not root): no --plot" ;;
        esac
    done
fi
exit 0
