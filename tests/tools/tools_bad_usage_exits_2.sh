#!/bin/sh
# A usage error - an unknown option, a missing or an unwanted operand -
# makes gpuopt-devices and gpuopt-ckpt exit 2 with the message on
# stderr and nothing on stdout; --help prints the usage on stdout, exit 0.
. "$(dirname "$0")/lib.sh"
export LSAN_OPTIONS="suppressions=$TOP/tests/lsan.supp"

# usage_error TEXT TOOL ARG...
usage_error()
{
	text=$1 tool=$2
	shift 2
	rc=0
	"$BUILD/bin/$tool" "$@" >"$T/out" 2>"$T/err" || rc=$?
	[ $rc -eq 2 ] || fail "$tool $*: exit $rc, want 2"
	[ ! -s "$T/out" ] || fail "$tool $*: stdout: $(cat "$T/out")"
	grep -q -- "$text" "$T/err" || fail "$tool $*: stderr lacks '$text': $(cat "$T/err")"
	grep -q "^usage: " "$T/err" || fail "$tool $*: no usage line on stderr"
}
usage_error "unrecognized option '--no-such-option'" gpuopt-devices --no-such-option
usage_error "invalid option -- 'z'" gpuopt-devices -z
usage_error "unexpected argument 'extra'" gpuopt-devices extra
usage_error "unrecognized option '--no-such-option'" gpuopt-ckpt --no-such-option x.st
usage_error "unrecognized option '--no-such-option'" gpuopt-ckpt x.st --no-such-option
usage_error "no FILE" gpuopt-ckpt
usage_error "no FILE" gpuopt-ckpt --json -q
for t in gpuopt-devices gpuopt-ckpt; do
	"$BUILD/bin/$t" --help >"$T/out" 2>"$T/err" || fail "$t --help: exit $?"
	grep -q "^usage: $t " "$T/out" || fail "$t --help: $(cat "$T/out")"
	grep -q -- "--json" "$T/out" || fail "$t --help lacks --json"
	[ ! -s "$T/err" ] || fail "$t --help: stderr $(cat "$T/err")"
done
echo "ok"
