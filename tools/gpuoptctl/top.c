// SPDX-License-Identifier: MIT
/*
 * top.c - gpuoptctl top: the devices and jobs tables, redrawn on the
 * terminal's alternate screen, or plain frames in a pipe.
 */
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>
#include "gpuoptctl_i.h"

static int top_iterations;
static double top_delay = 1;

const struct option top_longs[] = {
	{ "iterations", required_argument, NULL, 'n' },
	{ "delay", required_argument, NULL, 'd' },
	{ "once", no_argument, NULL, '1' },
	{ NULL, 0, NULL, 0 },
};

int top_opt(int c, const char *arg)
{
	uint64_t n;
	char *end;

	if (c == 'n') {
		if (gpo__parse_u64(arg, &n) || n < 1 || n > INT_MAX) {
			err("top: bad count '%s'", arg);
			return -1;
		}
		top_iterations = (int)n;
		return 0;
	}
	if (c == '1') {
		top_iterations = 1;
		return 0;
	}
	if (c == 'd') {
		top_delay = gpo__strtod(arg, &end);
		if (*end || end == arg || top_delay < 0.1 || top_delay > 3600) {
			err("top: bad delay '%s' (0.1 to 3600 s)", arg);
			return -1;
		}
		return 0;
	}
	return -1;
}

/* A table cut to the terminal's width, as top has no room to wrap */
static void top_table(struct gpo__sbuf *out, int width,
		      int (*table)(struct gpo__sbuf *out))
{
	struct gpo__sbuf tb = { 0 };
	const char *p, *nl;

	table(&tb);
	for (p = tb.buf; p && *p; p = nl + 1) {
		nl = strchr(p, '\n');
		if (!nl)
			nl = p + strlen(p);
		gpo__sbuf_printf(out, "%.*s\n",
				 (int)(nl - p) < width ? (int)(nl - p) : width,
				 p);
		if (!*nl)
			break;
	}
	gpo__sbuf_free(&tb);
}

static void top_frame(struct gpo__sbuf *out, int width)
{
	char stamp[32], uptime[24], v[64];
	struct gpo__sbuf st = { 0 };
	time_t now = time(NULL);
	struct tm tm;

	localtime_r(&now, &tm);
	strftime(stamp, sizeof(stamp), "%H:%M:%S", &tm);
	read_rel("stat", &st);
	kv_get(st.buf ? st.buf : "", "uptime_s", v, sizeof(v));
	fmt_duration(uptime, sizeof(uptime), num_of(v));
	gpo__sbuf_printf(out, "gpuoptctl top - %s  %s  up %s", stamp, ctl_mnt, uptime);
	kv_get(st.buf ? st.buf : "", "jobs", v, sizeof(v));
	gpo__sbuf_printf(out, "  jobs %s", *v ? v : "-");
	kv_get(st.buf ? st.buf : "", "jobs_running", v, sizeof(v));
	gpo__sbuf_printf(out, " (%s running)", *v ? v : "-");
	kv_get(st.buf ? st.buf : "", "steps", v, sizeof(v));
	gpo__sbuf_printf(out, "  steps %s\n\n", *v ? v : "-");
	gpo__sbuf_free(&st);
	top_table(out, width, devices_table);
	gpo__sbuf_printf(out, "\n");
	top_table(out, width, jobs_table);
}

static struct termios saved_tio;
static int raw_tty = -1;

static void tty_restore(void)
{
	if (raw_tty >= 0)
		tcsetattr(raw_tty, TCSAFLUSH, &saved_tio);
	raw_tty = -1;
}

static void tty_raw(int fd)
{
	struct termios t;

	if (tcgetattr(fd, &saved_tio))
		return;
	t = saved_tio;
	t.c_lflag &= ~(ICANON | ECHO);
	t.c_cc[VMIN] = 0;
	t.c_cc[VTIME] = 0;
	if (!tcsetattr(fd, TCSAFLUSH, &t))
		raw_tty = fd;
}

/* Wait up to @s seconds for a key: 'q' quits (1), others redraw. */
static int top_keys(double s)
{
	double end = mono_s() + s, left;
	struct pollfd pfd;
	char c;

	while (!got_signal && (left = end - mono_s()) > 0) {
		if (raw_tty < 0) {
			usleep((useconds_t)(left * 1e6));
			continue;
		}
		pfd.fd = raw_tty;
		pfd.events = POLLIN;
		if (poll(&pfd, 1, (int)(left * 1000) + 1) <= 0)
			continue;
		if (read(raw_tty, &c, 1) != 1)
			return 1;	/* the terminal went away */
		if (c == 'q' || c == 'Q' || c == 3 || c == 4)
			return 1;
		return 0;		/* any other key: now */
	}
	return got_signal != 0;
}

int cmd_top(int argc, char **argv)
{
	struct gpo__sbuf out = { 0 };
	int status, tty, i, width, height, lines;
	struct winsize ws;
	char *p;

	status = operands(argc, 0, 0);
	if (status)
		return status;
	if (!tree_ok())
		return 1;
	tty = isatty(STDOUT_FILENO);
	catch_signals();
	if (tty) {
		if (isatty(STDIN_FILENO))
			tty_raw(STDIN_FILENO);
		/* the alternate screen, the cursor hidden */
		fputs("\033[?1049h\033[?25l", stdout);
	}
	for (i = 0; !top_iterations || i < top_iterations; i++) {
		width = INT_MAX;
		height = INT_MAX;
		if (tty && !ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) &&
		    ws.ws_col) {
			width = ws.ws_col;
			height = ws.ws_row;
		}
		out.len = 0;
		top_frame(&out, width);
		if (!tty) {
			if (i)
				putchar('\n');
			fwrite(out.buf, 1, out.len, stdout);
		} else {
			/* home, each line cleared to its end, the rest too */
			fputs("\033[H", stdout);
			for (p = out.buf, lines = 0; p && *p && lines < height;
			     lines++) {
				size_t n = strcspn(p, "\n");

				fwrite(p, 1, n, stdout);
				fputs("\033[K", stdout);
				p += n;
				if (*p == '\n')
					p++;
				if (*p && lines + 1 < height)
					putchar('\n');
			}
			fputs("\033[J", stdout);
		}
		if (fflush(stdout))
			break;
		if (top_iterations && i + 1 == top_iterations)
			break;
		if (top_keys(top_delay))
			break;
	}
	if (tty) {
		fputs("\033[?25h\033[?1049l", stdout);
		fflush(stdout);
		tty_restore();
	}
	gpo__sbuf_free(&out);
	return 0;
}

