#!/bin/sh
# Bad input to a job that trains on data fails with its errno and a reason
# in error, and changes nothing: a bad config word is refused at the
# write; what only the worker can see (the data file, as the owner reads
# it; the data against the model; memory) fails `start`, the job staying
# created. Run as root, with one case as nobody.
. "$(dirname "$0")/lib.sh"
slice=$(cd "$(dirname "$0")/../data/train" && pwd)/fmnist-slice.safetensors
[ -r "$slice" ] || fail "no $slice"
fs_start
good="model=mlp:784x16x10 data=$slice device=cpu batch_size=16 max_steps=5"
new_job b "$good"
cp "$M/jobs/b/config" "$T/before"

# config words: refused at the write, config as it was
bad_word()
{
	expect "$1" "$(w "$M/jobs/b/config" "$1")" "$2"
	[ -s "$M/jobs/b/error" ] || fail "$1: error is empty"
	cmp -s "$T/before" "$M/jobs/b/config" || fail "$1: config changed"
}
bad_word "model=cnn:784x10" EINVAL
bad_word "model=mlp:784" EINVAL
bad_word "model=mlp:784x0x10" EINVAL
bad_word "model=mlp:784x100000x100000x10" EINVAL
bad_word "activation=swish" EINVAL
bad_word "loss=hinge" EINVAL
bad_word "batch_size=0" EINVAL
bad_word "data=relative/path" EINVAL
bad_word "shuffle=2" EINVAL

# what the worker finds: start fails, the job stays created
bad_start()
{
	job=$1 want=$2 cfg=$3 why=$4
	new_job "$job" "$cfg"
	expect "$job start" "$(w "$M/jobs/$job/ctl" start)" "$want"
	expect "$job state" "$(cat "$M/jobs/$job/state")" created
	grep -q "$why" "$M/jobs/$job/error" ||
		fail "$job: error '$(cat "$M/jobs/$job/error")' does not say '$why'"
}
bad_start missing ENOENT "$good data=$T/nothing" "nothing"
head -c 3000 "$slice" > "$T/cut.safetensors"
bad_start cut EINVAL "$good data=$T/cut.safetensors" "cut.safetensors"
mkdir "$T/idx"
printf '\037\213garbage, not a gzip stream' > "$T/idx/train-images-idx3-ubyte.gz"
printf '\0\0\10\1\0\0\0\1\7' > "$T/idx/train-labels-idx1-ubyte"
bad_start corrupt EINVAL "$good data=$T/idx" "train-images"
bad_start width EINVAL \
	"model=mlp:100x10 data=$slice device=cpu batch_size=16" "100"
bad_start labels EINVAL \
	"model=mlp:784x5 data=$slice device=cpu batch_size=16" "labels"
bad_start batch EINVAL "$good batch_size=801" "batch_size 801"
# (ASan reserves terabytes of address space: no RLIMIT_AS under it)
if ! ldd "$(dirname "$GPUOPTFS")/gpuoptfs-worker" | grep -q libasan; then
	bad_start memory ENOMEM \
		"model=mlp:784x65536x10 data=$slice device=cpu memory_limit_bytes=268435456" \
		"memory\|pool\|ENOMEM\|Cannot allocate"
fi

# a file the owner may not read: nobody's job gets EACCES
if [ "$(id -u)" = 0 ]; then
	cp "$slice" "$T/secret.safetensors"
	chmod 600 "$T/secret.safetensors"
	expect "mkdir as nobody" "$(setpriv --reuid=nobody --regid=nogroup \
		--clear-groups "$FSIO" mkdir "$M/jobs/nb")" OK
	expect "config as nobody" "$(setpriv --reuid=nobody --regid=nogroup \
		--clear-groups "$FSIO" write "$M/jobs/nb/config" \
		"model=mlp:784x16x10 data=$T/secret.safetensors device=cpu batch_size=16")" OK
	expect "start as nobody" "$(setpriv --reuid=nobody --regid=nogroup \
		--clear-groups "$FSIO" write "$M/jobs/nb/ctl" start)" EACCES
	expect "nb state" "$(cat "$M/jobs/nb/state")" created
fi

# and the good config still trains
expect "b start" "$(w "$M/jobs/b/ctl" start)" OK
done_b()
{
	[ "$(cat "$M/jobs/b/state")" = done ]
}
wait_for 60 done_b || fail "b did not finish"
expect "b step" "$(stat_of b step)" 5
fs_finish
