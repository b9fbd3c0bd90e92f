// SPDX-License-Identifier: MIT
/*
 * gpuoptctl - a friendly command over the /gpuopt tree of gpuoptfs
 *
 *   gpuoptctl [OPTION...] COMMAND [ARG...]     (gpuoptctl --help lists them)
 *
 * It works only through the mounted tree (GPUOPT_MNT, default /gpuopt):
 * every command is reads of files, writes of one value, mkdir and rmdir,
 * so whatever it does a script can do with cat and echo. It links libc,
 * libm, libsmartcols and common/. A failed write prints the daemon's own
 * reason, taken from error_log, and exits 1; a usage error exits 2.
 *
 * This file: the options, which go anywhere on the line (before or after
 * the command and its operands; "--" ends them), the command table and
 * the help texts.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <gpuopt.h>		/* the version macros only */
#include "gpuoptctl_i.h"

#define STR_(x) #x
#define STR(x) STR_(x)
#define CTL_VERSION STR(GPUOPT_VERSION_MAJOR) "." \
	STR(GPUOPT_VERSION_MINOR) "." STR(GPUOPT_VERSION_PATCH)

const char *ctl_mnt = "/gpuopt";
const struct cmd *cur_cmd;

void err(const char *fmt, ...)
{
	va_list ap;

	fflush(stdout);
	fputs("gpuoptctl: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static int cmd_help(int argc, char **argv);

#define TABLE_HELP \
	"  -J, --json          JSON (numbers as numbers, bytes in bytes)\n" \
	"  -r, --raw           raw output: one space between columns\n" \
	"  -n, --noheadings    no header line\n" \
	"  -o, --output LIST   the columns to show (comma list; +LIST adds to\n" \
	"                      the default ones)\n"

static const struct cmd cmds[] = {
	{ "devices", cmd_devices, "[-J] [-r] [-n] [-o COLUMNS]",
	  "the devices, as a table",
	  "A table of the devices: index, id, type, compute units, memory, bytes\n"
	  "held by the pool, busy share of the last second, enabled, name.\n"
	  TABLE_HELP,
	  TABLE_SHORTS, table_longs, table_opt },
	{ "pools", cmd_pools, "[-J] [-r] [-n] [-o COLUMNS]",
	  "the devices' memory pools",
	  "A table of the devices' memory pools (reading one opens its device).\n"
	  TABLE_HELP,
	  TABLE_SHORTS, table_longs, table_opt },
	{ "jobs", cmd_jobs, "[-J] [-r] [-n] [-o COLUMNS]",
	  "the jobs: state, step, loss, lr, ETA",
	  "A table of the jobs: owner, state, step, loss, lr, steps/s, ETA, device.\n"
	  TABLE_HELP,
	  TABLE_SHORTS, table_longs, table_opt },
	{ "create", cmd_create, "NAME [KEY=VALUE...]",
	  "make a job with its config",
	  "Make job NAME (mkdir jobs/NAME) and write its config. If the daemon\n"
	  "refuses the config, the job is removed again.\n"
	  "Example: gpuoptctl create rb optimizer=adam lr=0.01 model=rosenbrock:1000 max_steps=500\n",
	  NULL, NULL, NULL },
	{ "set", cmd_set, "NAME KEY=VALUE...",
	  "change a job's config",
	  "Change the job's config, all words at once or none.\n",
	  NULL, NULL, NULL },
	{ "start", cmd_verb, "NAME",
	  "start a created job", "Start the job (created -> running).\n",
	  NULL, NULL, NULL },
	{ "pause", cmd_verb, "NAME",
	  "pause a running job",
	  "Pause the job; returns when no step is under way.\n",
	  NULL, NULL, NULL },
	{ "resume", cmd_verb, "NAME",
	  "resume a paused job", "Resume a paused job.\n",
	  NULL, NULL, NULL },
	{ "stop", cmd_verb, "NAME",
	  "stop a job", "Stop a running or paused job.\n",
	  NULL, NULL, NULL },
	{ "reset", cmd_verb, "NAME",
	  "back to step 0",
	  "Back to created at step 0 (not while running).\n",
	  NULL, NULL, NULL },
	{ "step", cmd_step, "NAME N",
	  "run N steps, then pause",
	  "Run N steps of a created or paused job, then pause; returns when done.\n",
	  NULL, NULL, NULL },
	{ "checkpoint", cmd_checkpoint, "NAME [CKPT]",
	  "save a checkpoint",
	  "Save the job as checkpoint CKPT (default step-STEP).\n",
	  NULL, NULL, NULL },
	{ "restore", cmd_restore, "NAME CKPT",
	  "load a checkpoint",
	  "Load checkpoint CKPT into the job (not while running); it is then paused.\n",
	  NULL, NULL, NULL },
	{ "status", cmd_status, "[-J] NAME",
	  "a job's stat, error and checkpoints",
	  "The job's owner, stat, last error and checkpoints.\n"
	  "  -J, --json          one JSON object\n",
	  "J", table_longs, table_opt },
	{ "logs", cmd_logs, "[-f] [--history] NAME",
	  "a job's events (or history.csv)",
	  "Print the job's events.\n"
	  "  -f, --follow    keep printing new lines until the job is removed\n"
	  "  -H, --history   history.csv instead of events\n",
	  "fH", logs_longs, logs_opt },
	{ "wait", cmd_wait, "[--until STATE[,STATE...]] [--timeout S] [-q] NAME",
	  "wait for a state, with progress",
	  "Wait until the job is in one of the states (default done,stopped,failed).\n"
	  "On a terminal: a progress bar (step/max_steps, loss, ETA); otherwise a\n"
	  "plain line a second while it steps, and one at the end.\n"
	  "Exit 0 when a wanted state is reached (failed only if asked for), 1 when\n"
	  "the job fails, stops elsewhere or is removed, 124 after the timeout.\n"
	  "  -u, --until STATES  created running paused stopped done failed\n"
	  "  -t, --timeout S     give up after S seconds\n"
	  "  -q, --quiet         print nothing but errors\n",
	  "u:t:q", wait_longs, wait_opt },
	{ "top", cmd_top, "[-n N] [-d SECONDS] [--once]",
	  "a live table of devices and jobs",
	  "A live table of the devices and jobs, redrawn every second; q quits.\n"
	  "Not on a terminal, it prints a plain frame each time.\n"
	  "  -n, --iterations N  stop after N frames\n"
	  "  -d, --delay S       seconds between frames (default 1)\n"
	  "  -1, --once          one frame (-n 1)\n",
	  "n:d:1", top_longs, top_opt },
	{ "plot", cmd_plot, "[-o FILE] NAME",
	  "an SVG of loss, lr, grad_norm over steps",
	  "An SVG of the job's history.csv over steps: loss (left axis, log scale\n"
	  "when it spans 100x) and lr (right axis); below them grad_norm and\n"
	  "accuracy when history.csv has those columns. To open in a browser.\n"
	  "  -o, --output FILE   write FILE instead of standard output\n",
	  "o:", plot_longs, plot_opt },
	{ "sweep", cmd_sweep,
	  "KEY=V1,V2... [KEY=...] --template NAME [--parallel N]",
	  "a grid of jobs from a template, ranked",
	  "One job per point of the grid (every combination of the values) with\n"
	  "the template job's config and the point's values: PREFIX-0, PREFIX-1...\n"
	  "(PREFIX: the template's name). At most N run at once; a line per\n"
	  "finished job on stderr (a live count on a terminal); then a table of\n"
	  "the jobs, best first by eval_loss when the jobs have one, else loss.\n"
	  "Values with commas in them: separate the values with '|' instead.\n"
	  "Exit 0 when at least one job is done, 1 when none is.\n"
	  "  -t, --template NAME the job whose config the points start from\n"
	  "  -p, --parallel N    jobs running at once (default 1)\n"
	  "  -P, --prefix NAME   the jobs' names: NAME-0, NAME-1, ...\n"
	  "  -q, --quiet         no progress\n"
	  "      --rm            remove the jobs once the table is printed\n"
	  TABLE_HELP,
	  "t:p:P:q" TABLE_SHORTS, sweep_longs, sweep_opt },
	{ "rm", cmd_rm, "[--purge] NAME...",
	  "remove jobs",
	  "Remove jobs (rmdir jobs/NAME); not while running. A job that has\n"
	  "checkpoints stays (they outlive the daemon) unless --purge.\n"
	  "  -P, --purge         delete the job's checkpoints first (purge to ctl)\n",
	  "P", rm_longs, rm_opt },
	{ "rescan", cmd_rescan, "",
	  "probe the devices again (root)",
	  "Probe the devices again (root): new ones are added, lost ones marked\n"
	  "gone and their jobs fail; the udev rules do this when a GPU comes or goes.\n",
	  NULL, NULL, NULL },
	{ "help", cmd_help, "[COMMAND]",
	  "help on a command", "Help on gpuoptctl or one command.\n",
	  NULL, NULL, NULL },
	{ NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL },
};

static void main_usage(FILE *f)
{
	const struct cmd *c;

	fprintf(f,
		"usage: gpuoptctl [-m MOUNT] COMMAND [ARG...]\n"
		"\n"
		"Inspect and steer gpuoptfs through its tree (GPUOPT_MNT, default /gpuopt).\n"
		"Options go anywhere on the line; -- ends them.\n"
		"\n");
	for (c = cmds; c->name; c++) {
		int n = fprintf(f, "  %s%s%s", c->name, *c->args ? " " : "",
				c->args);

		if (n > 30)
			fprintf(f, "\n%32s%s\n", "", c->summary);
		else
			fprintf(f, "%*s%s\n", 32 - n, "", c->summary);
	}
	fprintf(f,
		"\n"
		"  -m, --mount DIR  the tree's mountpoint\n"
		"  -V, --version    print the version\n"
		"  -h, --help       this help; gpuoptctl COMMAND --help for one command\n"
		"Exit status: 0 ok, 1 failure, 2 usage error, 124 wait timed out.\n"
		"See gpuoptctl(1) and gpuoptfs(8).\n");
}

int cmd_usage(FILE *f)
{
	fprintf(f, "usage: gpuoptctl %s%s%s\n\n%s", cur_cmd->name,
		*cur_cmd->args ? " " : "", cur_cmd->args, cur_cmd->help);
	return f == stdout ? 0 : EXIT_USAGE;
}

int operands(int argc, int min, int max)
{
	if (argc >= min && argc <= max)
		return 0;
	return cmd_usage(stderr);
}

static const struct cmd *cmd_find(const char *name)
{
	const struct cmd *c;

	for (c = cmds; c->name; c++)
		if (!strcmp(c->name, name))
			return c;
	return NULL;
}

static int cmd_help(int argc, char **argv)
{
	int status = operands(argc, 0, 1);

	if (status)
		return status;
	if (argc == 0) {
		main_usage(stdout);
		return 0;
	}
	cur_cmd = cmd_find(argv[0]);
	if (!cur_cmd) {
		err("no command '%s' (gpuoptctl --help lists them)", argv[0]);
		return EXIT_USAGE;
	}
	return cmd_usage(stdout);
}

/* options every command takes */
static const struct option global_longs[] = {
	{ "mount", required_argument, NULL, 'm' },
	{ "version", no_argument, NULL, 'V' },
	{ "help", no_argument, NULL, 'h' },
};

/*
 * find_cmd - the index of the command word: the first operand, where the
 * options before it may be global ones or any command's (an option that
 * takes a value takes the next word, as -m DIR, -o COLUMNS and -o FILE
 * do). 0 when there is none.
 */
static int find_cmd(int argc, char **argv)
{
	static const char *const valued[] = {
		"-m", "--mount", "-o", "--output", "-u", "--until", "-t",
		"--timeout", "-d", "--delay", "--iterations", "--template",
		"-p", "--parallel", "-P", "--prefix",
	};
	size_t k;
	int i;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--"))
			return i + 1 < argc ? i + 1 : 0;
		if (argv[i][0] != '-' || !argv[i][1])
			return i;
		for (k = 0; k < ARRAY_SIZE(valued); k++)
			if (!strcmp(argv[i], valued[k]))
				break;
		if (k < ARRAY_SIZE(valued))
			i++;
	}
	return 0;
}

/*
 * parse_line - every option on the line, global and @c's, wherever they
 * are (getopt_long permutes; "--" ends them). The operands are left at
 * argv[*first...], the command word dropped. Returns -1 to go on, else
 * the exit status.
 */
static int parse_line(int argc, char **argv, int ci, const struct cmd *c,
		      int *first)
{
	struct option all[32];
	char shorts[64];
	int n = 0, i, opt, want_help = 0;

	if (c && c->longs)
		for (i = 0; c->longs[i].name && n < 24; i++)
			all[n++] = c->longs[i];
	for (i = 0; i < (int)ARRAY_SIZE(global_longs); i++)
		all[n++] = global_longs[i];
	all[n] = (struct option){ NULL, 0, NULL, 0 };
	snprintf(shorts, sizeof(shorts), ":%sm:Vh",
		 c && c->shorts ? c->shorts : "");

	/* the command word out of the way: getopt sees options and operands */
	if (ci) {
		memmove(argv + ci, argv + ci + 1, (argc - ci - 1) * sizeof(*argv));
		argc--;
		argv[argc] = NULL;
	}
	unsetenv("POSIXLY_CORRECT");	/* permutation, as the man page says */
	optind = 0;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, shorts, all, NULL)) != -1) {
		switch (opt) {
		case 'm':
			if (!c || !c->shorts || !strchr(c->shorts, 'm')) {
				ctl_mnt = optarg;
				continue;
			}
			break;
		case 'V':
			printf("gpuoptctl %s\n", CTL_VERSION);
			return 0;
		case 'h':
			want_help = 1;
			continue;
		case '?':
		case ':':
			if (opt == ':')
				err("%s%soption '%s' needs a value",
				    c ? c->name : "", c ? ": " : "",
				    argv[optind - 1]);
			else
				err("%s%sbad option '%s'", c ? c->name : "",
				    c ? ": " : "", argv[optind - 1]);
			if (c)
				return cmd_usage(stderr);
			main_usage(stderr);
			return EXIT_USAGE;
		}
		if (!c || !c->opt || c->opt(opt, optarg))
			return c ? cmd_usage(stderr) : EXIT_USAGE;
	}
	if (want_help) {
		if (c)
			return cmd_usage(stdout);
		main_usage(stdout);
		return 0;
	}
	*first = optind;
	return -1;
}

int main(int argc, char **argv)
{
	const char *env = getenv("GPUOPT_MNT");
	const struct cmd *c = NULL;
	int ci, first = 0, status;

	if (env && *env)
		ctl_mnt = env;
	ci = find_cmd(argc, argv);
	if (ci) {
		c = cmd_find(argv[ci]);
		if (!c) {
			err("no command '%s' (gpuoptctl --help lists them)",
			    argv[ci]);
			return EXIT_USAGE;
		}
	}
	cur_cmd = c;
	status = parse_line(argc, argv, ci, c, &first);
	if (status >= 0)
		return status;
	if (!c) {
		main_usage(stderr);
		return EXIT_USAGE;
	}
	argc -= !!ci;
	return c->fn(argc - first, argv + first);
}
