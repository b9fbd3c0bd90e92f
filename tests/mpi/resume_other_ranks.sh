#!/bin/sh
# A checkpoint written by 2 ranks after 10 steps, resumed on 3 ranks and
# on 1 for 10 more: the parameters of 20 steps on one process, bit for
# bit; rank 0 wrote history.csv with gpuoptfs's mlp columns. (The
# one-process run reads a settings file: -c.)
. "$(dirname "$0")/lib.sh"
gen_data
common="model=mlp:37x16x7 data=$T/data.safetensors batch_size=36 optimizer=adam
	lr=0.02 seed=9 shards=6 device=cpu:0"
# the reference from a settings file (-c), the command line after it
printf '# settings\n\n' >"$T/job.conf"
for w in $common; do printf '  %s\n' "$w" >>"$T/job.conf"; done
echo "max_steps=7" >>"$T/job.conf"
mpi 1 -c "$T/job.conf" max_steps=20 dump=$T/ref.bin
ok "-np 1 -c, 20 steps"
mpi 1 $common max_steps=20 dump=$T/ref2.bin
ok "-np 1, 20 steps"
cmp "$T/ref.bin" "$T/ref2.bin" || fail "-c FILE trains otherwise than the same words"
echo "oops" >>"$T/job.conf"
mpi 1 -c "$T/job.conf"
refused "-c with a bad line" "'oops': not key=value"
mpi 2 $common max_steps=10 checkpoint_dir=$T/ck log_every=1
ok "-np 2, 10 steps"
ck=$T/ck/step-00000010.safetensors
[ -s "$ck" ] || fail "no $ck: $(ls "$T/ck")"
head -n 1 "$T/ck/history.csv" | grep -qx \
	'step,loss,lr,grad_norm,elapsed_s,epoch,samples_per_sec,eval_loss,accuracy' ||
	fail "history.csv header: $(head -n 1 "$T/ck/history.csv")"
rows=$(($(wc -l <"$T/ck/history.csv") - 1))
[ "$rows" -eq 10 ] || fail "history.csv: $rows rows, want 10 (rank 0 alone)"
for n in 3 1; do
	rm -f "$T/np.bin"
	mpi $n $common max_steps=20 resume=$ck dump=$T/np.bin
	ok "-np $n resumed"
	cmp "$T/ref.bin" "$T/np.bin" ||
		fail "resumed on $n ranks: differs from 20 steps on one"
	echo "resumed on $n ranks: bitwise equal"
done
