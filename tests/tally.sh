# tally.sh - sourced by the test runners (run-unit.sh, run-fs.sh,
# run-tools.sh, ckpt/run.sh) just before their loop: count each test's
# result, show a failure's log, end with a summary that fails loudly.
# A test exiting 77 is skipped; the last line of its log says why.
pass=0 fail=0 skip=0 failed=""
start=$(date +%s)

# tally NAME RC LOG [NOTE]: count one test and report it (NOTE on a pass)
tally() {
	case $2 in
	0) pass=$((pass + 1)); printf 'PASS  %s%s\n' "$1" "$4" ;;
	77) skip=$((skip + 1))
	    printf 'SKIP  %s: %s\n' "$1" "$(tail -n 1 "$3")" ;;
	*) fail=$((fail + 1)); failed="$failed $1"
	   printf 'FAIL  %s (exit %d)\n' "$1" "$2"
	   sed 's/^/      /' "$3" | tail -n 40 ;;
	esac
}

# tally_end [WHAT]: the summary (with WHAT, the time taken); exit 1 if a
# test failed
tally_end() {
	if [ -n "$1" ]; then
		printf '%d passed, %d failed, %d skipped (%s, %ds)\n' $pass \
			$fail $skip "$1" $(($(date +%s) - start))
	else
		printf '%d passed, %d failed, %d skipped\n' $pass $fail $skip
	fi
	[ $fail -eq 0 ] || { echo "FAILED:$failed" >&2; exit 1; }
}
