#!/bin/sh
# need.sh PACKAGE TEST...: make sure a Debian package is present.
# TEST is a shell command that succeeds when the package's files are there.
# Missing: installed with apt-get when running as root, otherwise one line
# naming the package and exit status 1.
# NEED_SKIPPING (optional): what the caller leaves out when the package cannot
# be had; it ends that one line (the caller goes on without the package).
# NEED_NO_RECOMMENDS=1: without the package's recommended packages (wine's
# are fonts, sound and graphics libraries: hundreds of MB nobody here uses).
pkg=$1; shift
say() { # message: one line, with what is skipped when the caller goes on
    if [ -n "${NEED_SKIPPING:-}" ]; then echo "norm_bwd: $1: $NEED_SKIPPING"; else echo "norm_bwd: $1"; fi
}
if sh -c "$*" >/dev/null 2>&1; then exit 0; fi
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "norm_bwd: installing $pkg with apt-get"
    stamp=/tmp/norm_bwd_apt_updated
    [ -f $stamp ] || { apt-get update -qq >/dev/null 2>&1 && touch $stamp; }
    opts=
    [ "${NEED_NO_RECOMMENDS:-0}" = 1 ] && opts=--no-install-recommends
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $opts "$pkg" >/dev/null 2>&1 || {
        say "apt-get install $pkg failed"; exit 1; }
    sh -c "$*" >/dev/null 2>&1 && exit 0
    say "$pkg installed but still not usable"; exit 1
fi
say "missing package $pkg (install it: sudo apt-get install $pkg)"
exit 1
