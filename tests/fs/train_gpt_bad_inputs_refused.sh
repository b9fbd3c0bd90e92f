#!/bin/sh
# Bad input to a gpt job fails with its errno and a reason in error, and
# changes nothing: a bad spec, key or value is refused at the config
# write; what only the worker can see (ctx longer than the data, an empty
# file, one the owner may not read) fails `start`, the job staying
# created. sample: only a gpt job's, N in [1, 65536], a prompt of at most
# 4096 bytes; bad ones are EINVAL and leave the sample file as it was.
# Run as root (the worker has no capability: a mode 000 file is closed
# to root's job too), with one case as nobody.
. "$(dirname "$0")/lib.sh"
need_root
text=/usr/share/common-licenses/GPL-3
[ -r "$text" ] || skip "no $text"
fs_start
good="model=gpt:layers=1,heads=2,dim=16,ctx=16 data=$text device=cpu batch_size=4 max_steps=3"
new_job g "$good"
cp "$M/jobs/g/config" "$T/before"

# config words: refused at the write, config as it was
bad_word()
{
	: > "$T/empty"
	expect "$1" "$(w "$M/jobs/g/config" "$1")" "$2"
	[ -s "$M/jobs/g/error" ] || fail "$1: error is empty"
	cmp -s "$T/before" "$M/jobs/g/config" || fail "$1: config changed"
	if [ -n "${3:-}" ]; then
		grep -q -- "$3" "$M/jobs/g/error" ||
			fail "$1: error '$(cat "$M/jobs/g/error")' does not say '$3'"
	fi
}
bad_word "model=gpt:layers=2,heads=3,dim=32,ctx=16" EINVAL "not a multiple of heads"
bad_word "model=gpt:layers=0,heads=2,dim=32,ctx=16" EINVAL "layers=0"
bad_word "model=gpt:heads=2,dim=32,ctx=16" EINVAL "no layers"
bad_word "model=gpt:layers=2,heads=2,dim=32,ctx=16,ctx=8" EINVAL "twice"
bad_word "model=gpt:layers=2,heads=2,dim=32,ctx=16,vocab=50257" EINVAL "vocab"
bad_word "model=gpt:layers=2,heads=2,dim=32,ctx=100000" EINVAL "ctx"
bad_word "model=gpt:layers=x,heads=2,dim=32,ctx=16" EINVAL
bad_word "model=gpt:layers=2,heads=2,dim=32,ctx=16," EINVAL
bad_word "model=gpt:layers=2;heads=2,dim=32,ctx=16" EINVAL
bad_word "model=gpt:" EINVAL
bad_word "model=gpt:layers=1024,heads=64,dim=65536,ctx=16" EINVAL "parameters"
bad_word "dropout=1" EINVAL "dropout"
bad_word "dropout=-0.1" EINVAL "dropout"
bad_word "dropout=nan" EINVAL "dropout"
bad_word "dropout=0.1x" EINVAL "dropout"
bad_word "temperature=-1" EINVAL "temperature"
bad_word "temperature=inf" EINVAL "temperature"
bad_word "activation=tanh" EINVAL "activation"
bad_word "loss=mse" EINVAL "loss"
bad_word "batch_size=0" EINVAL
# a gpt's key on another model, in the same write
bad_word "model=mlp:784x10 dropout=0.1" EINVAL "only gpt"
# the good values are taken
expect "dropout" "$(w "$M/jobs/g/config" "dropout=0.25 temperature=0.5")" OK
grep -qx "dropout=0.25" "$M/jobs/g/config" || fail "no dropout=0.25"
grep -qx "temperature=0.5" "$M/jobs/g/config" || fail "no temperature=0.5"
expect "dropout back" "$(w "$M/jobs/g/config" "dropout=0 temperature=0")" OK
cp "$M/jobs/g/config" "$T/before"

# sample: bad requests change nothing
expect "sample before" "$(stat -c %s "$M/jobs/g/sample")" 0
for bad in "sample" "sample 0" "sample 65537" "sample -1" "sample 1x" \
	"sample 18446744073709551617"; do
	expect "$bad" "$(w "$M/jobs/g/ctl" "$bad")" EINVAL
done
long=$(head -c 4097 /dev/zero | tr '\0' a)
expect "sample long prompt" "$(w "$M/jobs/g/ctl" "sample 5 $long")" EINVAL
grep -q "prompt" "$M/jobs/g/error" || fail "no word of the prompt in error"
expect "sample file after" "$(stat -c %s "$M/jobs/g/sample")" 0
expect "sample file read" "$(wc -c < "$M/jobs/g/sample")" 0
expect "g state" "$(cat "$M/jobs/g/state")" created
# the sample file takes no writes
expect "write sample" "$(w "$M/jobs/g/sample" hello)" EACCES

# a job that is not gpt generates nothing
new_job m "model=quadratic:8"
expect "sample on quadratic" "$(w "$M/jobs/m/ctl" "sample 10")" EINVAL
grep -q "gpt" "$M/jobs/m/error" || fail "error does not name gpt"
new_job ml "model=mlp:784x10 data=$text"
expect "sample on mlp" "$(w "$M/jobs/ml/ctl" "sample 10")" EINVAL
expect "mlp sample size" "$(stat -c %s "$M/jobs/ml/sample")" 0
# mlp keeps its keys, and refuses gpt's
expect "dropout on mlp" "$(w "$M/jobs/ml/config" "dropout=0.1")" EINVAL
expect "temperature on mlp" "$(w "$M/jobs/ml/config" "temperature=1")" EINVAL
expect "activation on mlp" "$(w "$M/jobs/ml/config" "activation=tanh")" OK

# what the worker finds: start fails, the job stays created
bad_start()
{
	job=$1 want=$2 cfg=$3 why=$4
	new_job "$job" "$cfg"
	expect "$job start" "$(w "$M/jobs/$job/ctl" start)" "$want"
	expect "$job state" "$(cat "$M/jobs/$job/state")" created
	expect "$job step" "$(stat_of "$job" step)" 0
	grep -q -- "$why" "$M/jobs/$job/error" ||
		fail "$job: error '$(cat "$M/jobs/$job/error")' does not say '$why'"
}
spec="model=gpt:layers=1,heads=2,dim=16,ctx=16 device=cpu batch_size=1"
bad_start missing ENOENT "$spec data=$T/nothing" "nothing"
: > "$T/empty.txt"
bad_start empty EINVAL "$spec data=$T/empty.txt" "empty.txt"
# 40 bytes: 36 to train on, fewer than ctx + 1 = 65
head -c 40 "$text" > "$T/short.txt"
bad_start short EINVAL \
	"model=gpt:layers=1,heads=2,dim=16,ctx=64 device=cpu batch_size=1 data=$T/short.txt" \
	"ctx\|short.txt"
cp "$text" "$T/closed.txt"
chmod 000 "$T/closed.txt"
bad_start closed EACCES "$spec data=$T/closed.txt" "closed.txt"
mkdir "$T/dir"
bad_start directory EINVAL "$spec data=$T/dir" "dir"

# a file the owner may not read: nobody's job gets EACCES
cp "$text" "$T/secret.txt"
chmod 600 "$T/secret.txt"
as_nobody()
{
	setpriv --reuid=nobody --regid=nogroup --clear-groups "$@"
}
expect "mkdir as nobody" "$(as_nobody "$FSIO" mkdir "$M/jobs/nb")" OK
expect "config as nobody" "$(as_nobody "$FSIO" write "$M/jobs/nb/config" \
	"$spec data=$T/secret.txt")" OK
expect "start as nobody" "$(as_nobody "$FSIO" write "$M/jobs/nb/ctl" start)" EACCES
expect "nb state" "$(cat "$M/jobs/nb/state")" created

# and the good config still trains
expect "g start" "$(w "$M/jobs/g/ctl" start)" OK
done_g()
{
	[ "$(cat "$M/jobs/g/state")" = done ]
}
wait_for 60 done_g || fail "g did not finish: $(cat "$M/jobs/g/error")"
expect "g step" "$(stat_of g step)" 3
fs_finish
