/*
 * slowsync: a disk of a given sync time for each process, for
 * tests/sync-sweep.sh. Preloaded (LD_PRELOAD) into a process whose name is
 * SLOWSYNC_COMM ("handlestore" when unset), it makes each fsync and
 * fdatasync last SLOWSYNC_US microseconds: the real call runs first (on
 * tmpfs it returns at once), then the caller sleeps until that time has
 * passed since the call began. Each process sleeps on its own, as if each
 * had a disk of its own. Any other process, or SLOWSYNC_US unset or 0,
 * sees the real calls only.
 *
 * A measuring tool, never for a data directory that must survive a power
 * cut: on tmpfs nothing does.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

extern char *program_invocation_short_name;

static long delay_us = -1;

static long delay(void)
{
	if (delay_us < 0) {
		const char *us = getenv("SLOWSYNC_US");
		const char *comm = getenv("SLOWSYNC_COMM");
		if (!comm || !*comm)
			comm = "handlestore";
		long d = us ? atol(us) : 0;
		delay_us = (d > 0 && strcmp(program_invocation_short_name, comm) == 0) ? d : 0;
	}
	return delay_us;
}

static void sleep_until(const struct timespec *start, long us)
{
	struct timespec end = *start;
	end.tv_sec += us / 1000000;
	end.tv_nsec += (us % 1000000) * 1000;
	if (end.tv_nsec >= 1000000000L) {
		end.tv_nsec -= 1000000000L;
		end.tv_sec += 1;
	}
	int saved = errno;
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &end, NULL) == EINTR) {
	}
	errno = saved;
}

#define SLOW(name)                                                        \
	int name(int fd)                                                  \
	{                                                                 \
		static int (*real)(int);                                  \
		if (!real)                                                \
			real = (int (*)(int))dlsym(RTLD_NEXT, #name);     \
		long us = delay();                                        \
		if (us == 0)                                              \
			return real(fd);                                  \
		struct timespec start;                                    \
		clock_gettime(CLOCK_MONOTONIC, &start);                   \
		int r = real(fd);                                         \
		sleep_until(&start, us);                                  \
		return r;                                                 \
	}

SLOW(fsync)
SLOW(fdatasync)
