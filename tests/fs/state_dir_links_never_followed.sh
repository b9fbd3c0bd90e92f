#!/bin/sh
# Nothing under the state directory is followed through a link: a job's
# checkpoints directory planted as a symlink to another directory is
# neither written nor emptied by rmdir (it once deleted the files it
# pointed to); a FIFO or a symlink where a checkpoint should be is no
# checkpoint: restore says ENOENT at once, no thread blocks.
. "$(dirname "$0")/lib.sh"
need_root
fs_start
mkdir -p "$T/victim" "$S/0/ln"
echo precious >"$T/victim/keep.safetensors"
ln -s "$T/victim" "$S/0/ln/checkpoints"
new_job ln "model=quadratic:8"
expect "no listing through it" "$(ls "$M/jobs/ln/checkpoints" | wc -l)" 0
expect "checkpoint through the link" "$(w "$M/jobs/ln/ctl" "checkpoint a")" \
	ENOTDIR
# refused (the checkpoints are not a directory) or done: never through it
"$FSIO" rmdir "$M/jobs/ln" >/dev/null
expect "victim kept" "$(cat "$T/victim/keep.safetensors")" precious
[ -e "$T/victim/a.safetensors" ] && fail "a checkpoint went through the link"

# a FIFO and a symlink in place of checkpoints
new_job f "model=quadratic:8"
expect "checkpoint" "$(w "$M/jobs/f/ctl" "checkpoint good")" OK
mkfifo "$S/0/f/checkpoints/fifo.safetensors"
ln -s "$S/0/f/checkpoints/good.safetensors" \
	"$S/0/f/checkpoints/link.safetensors"
expect "fifo" "$(timeout 10 "$FSIO" write "$M/jobs/f/ctl" "restore fifo")" \
	ENOENT
expect "link" "$(w "$M/jobs/f/ctl" "restore link")" ENOENT
expect "good" "$(w "$M/jobs/f/ctl" "restore good")" OK
expect "fifo not listed" "$(ls "$M/jobs/f/checkpoints" | tr '\n' ' ')" \
	"good.safetensors "
expect "fifo not opened" "$(timeout 10 "$FSIO" open \
	"$M/jobs/f/checkpoints/fifo.safetensors" r)" ENOENT
fs_finish
