#!/bin/sh
# bench/deps.sh - what `make bench` needs beyond a C compiler with OpenMP:
#   libdnnl-dev  (oneDNN, for the comparison columns; optional)
#   gnuplot-nox  (for --plot; optional)
#   python3-torch (PyTorch, the peer of the rows oneDNN 2.x lacks:
#                bench/torch_peer.py; optional; without its recommended
#                packages, which are a desktop's worth of Qt)
# As root: apt-get update once, then apt-get install -y the missing ones.
# Otherwise: one line per missing package, and the benchmark runs without it.
# CC is the compiler the build will use (for the dnnl.h probe); TORCH_PYTHON
# the interpreter that runs torch_peer.py (Debian's, for its python3-torch).
CC=${CC:-cc}
TORCH_PYTHON=${TORCH_PYTHON:-/usr/bin/python3}
missing=""
if ! printf '#include <dnnl.h>\nint main(void){return 0;}\n' | $CC -x c -o /dev/null - -ldnnl >/dev/null 2>&1; then
    missing="$missing libdnnl-dev"
fi
if ! command -v gnuplot >/dev/null 2>&1; then
    missing="$missing gnuplot-nox"
fi
# (only for Debian's own interpreter: the package would not reach another)
if [ "$TORCH_PYTHON" = /usr/bin/python3 ] && [ -x /usr/bin/python3 ] &&
   ! /usr/bin/python3 -c 'import torch' >/dev/null 2>&1; then
    missing="$missing python3-torch"
fi
[ -z "$missing" ] && exit 0
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "bench: installing$missing"
    if apt-get update -qq >/dev/null 2>&1; then
        for pkg in $missing; do
            extra=""
            [ "$pkg" = python3-torch ] && extra=--no-install-recommends
            DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $extra "$pkg" >/dev/null 2>&1 ||
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
        python3-torch) echo "bench: python3-torch not installed (not root): no PyTorch column" ;;
        esac
    done
fi
exit 0
