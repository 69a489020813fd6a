#!/bin/sh
# need.sh PACKAGE TEST...: make sure a Debian package is present.
# TEST is a shell command that succeeds when the package's files are there.
# Missing: installed with apt-get when running as root, otherwise one line
# naming the package and exit status 1.
pkg=$1; shift
if sh -c "$*" >/dev/null 2>&1; then exit 0; fi
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "norm_bwd: installing $pkg with apt-get"
    stamp=/tmp/norm_bwd_apt_updated
    [ -f $stamp ] || { apt-get update -qq >/dev/null 2>&1 && touch $stamp; }
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$pkg" >/dev/null 2>&1 || {
        echo "norm_bwd: apt-get install $pkg failed"; exit 1; }
    sh -c "$*" >/dev/null 2>&1 && exit 0
    echo "norm_bwd: $pkg installed but still not usable"; exit 1
fi
echo "norm_bwd: missing package $pkg (install it: sudo apt-get install $pkg)"
exit 1
