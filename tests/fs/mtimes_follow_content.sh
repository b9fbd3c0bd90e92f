#!/bin/sh
# mtimes follow content: a job's files when what they show changed, the
# job's directory with any of them, jobs/ when a job is made or removed,
# checkpoints/ entries when written; so `ls -t jobs` sorts by activity.
. "$(dirname "$0")/lib.sh"
mt() { stat -c %Y "$1"; }
# later A B: fail unless mtime B > A (seconds, as ls shows them)
later() { [ "$3" -gt "$2" ] || fail "$1: mtime $3 is not after $2"; }
same() { [ "$3" -eq "$2" ] || fail "$1: mtime moved from $2 to $3"; }
tick() { sleep 1.1; }

fs_start
J=$M/jobs
new_job a "model=quadratic:10 max_steps=100 log_every=1"
new_job b "model=quadratic:10 max_steps=100 log_every=1"
a_state=$(mt "$J/a/state") a_dir=$(mt "$J/a") b_dir=$(mt "$J/b")
jobs=$(mt "$J")
tick
expect "config" "$(w "$J/a/config" "lr=0.01")" OK
later "a/config" "$a_dir" "$(mt "$J/a/config")"
later "a/" "$a_dir" "$(mt "$J/a")"
same "a/state after a config change" "$a_state" "$(mt "$J/a/state")"
same "b/" "$b_dir" "$(mt "$J/b")"
same "jobs/" "$jobs" "$(mt "$J")"
expect "ls -t" "$(ls -t "$J" | tr '\n' ' ')" "a b "

tick
b_hist=$(mt "$J/b/history.csv") b_stat=$(mt "$J/b/stat")
b_state=$(mt "$J/b/state")
expect "step" "$(w "$J/b/ctl" "step 3")" OK
later "b/history.csv" "$b_hist" "$(mt "$J/b/history.csv")"
later "b/stat" "$b_stat" "$(mt "$J/b/stat")"
later "b/state" "$b_state" "$(mt "$J/b/state")"
later "b/params/x" "$b_stat" "$(mt "$J/b/params/x")"
expect "ls -t" "$(ls -t "$J" | tr '\n' ' ')" "b a "
# nothing happens: nothing moves
b_dir=$(mt "$J/b") b_stat=$(mt "$J/b/stat")
tick
same "b/ idle" "$b_dir" "$(mt "$J/b")"
same "b/stat idle" "$b_stat" "$(mt "$J/b/stat")"

tick
expect "checkpoint" "$(w "$J/a/ctl" "checkpoint c1")" OK
c1=$(mt "$J/a/checkpoints/c1.safetensors")
later "checkpoints/c1" "$b_dir" "$c1"
expect "ls -t" "$(ls -t "$J" | tr '\n' ' ')" "a b "
tick
expect "checkpoint" "$(w "$J/a/ctl" "checkpoint c2")" OK
later "checkpoints/c2" "$c1" "$(mt "$J/a/checkpoints/c2.safetensors")"
later "checkpoints/" "$c1" "$(mt "$J/a/checkpoints")"
same "checkpoints/c1 kept" "$c1" "$(mt "$J/a/checkpoints/c1.safetensors")"
expect "ls -t checkpoints" "$(ls -t "$J/a/checkpoints" | tr '\n' ' ')" \
	"c2.safetensors c1.safetensors "

tick
expect "mkdir" "$("$FSIO" mkdir "$J/c")" OK
later "jobs/ after mkdir" "$jobs" "$(mt "$J")"
jobs=$(mt "$J")
tick
expect "rmdir" "$("$FSIO" rmdir "$J/c")" OK
later "jobs/ after rmdir" "$jobs" "$(mt "$J")"
fs_finish
