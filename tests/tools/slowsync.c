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
 * A sleeping thread wakes up to its timer slack late (50 µs by default on
 * Linux), so the calling thread's slack is set to 1 ns first. What each
 * slowed call really lasted is counted when SLOWSYNC_STATS names a
 * directory: the process keeps a histogram in <dir>/<pid>.syncs, mapped
 * shared so that it survives the process being killed: SLOWSYNC_BUCKETS
 * 64-bit counters, counter i for calls that lasted i µs (the last one for
 * that long or longer).
 *
 * A measuring tool, never for a data directory that must survive a power
 * cut: on tmpfs nothing does.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#define SLOWSYNC_BUCKETS 16384

extern char *program_invocation_short_name;

static long delay_us = -1;
static uint64_t *histogram;
static pthread_once_t histogram_once = PTHREAD_ONCE_INIT;
static __thread int slack_set;

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

/* Opens <SLOWSYNC_STATS>/<pid>.syncs; without it, or on any error, nothing
 * is counted and the calls are slowed all the same. */
static void open_histogram(void)
{
	const char *dir = getenv("SLOWSYNC_STATS");
	if (!dir || !*dir)
		return;
	char path[4096];
	if (snprintf(path, sizeof path, "%s/%ld.syncs", dir, (long)getpid()) >= (int)sizeof path)
		return;
	int saved = errno;
	int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	if (fd >= 0) {
		size_t size = SLOWSYNC_BUCKETS * sizeof(uint64_t);
		if (ftruncate(fd, (off_t)size) == 0) {
			void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
			if (p != MAP_FAILED)
				histogram = p;
		}
		close(fd);
	}
	errno = saved;
}

/* Before a slowed call is timed: the thread's timer slack, the histogram. */
static void prepare(void)
{
	int saved = errno;
	if (!slack_set) {
		prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
		slack_set = 1;
	}
	pthread_once(&histogram_once, open_histogram);
	errno = saved;
}

static long elapsed_us(const struct timespec *start)
{
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	return (now.tv_sec - start->tv_sec) * 1000000L + (now.tv_nsec - start->tv_nsec) / 1000L;
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
	if (histogram) {
		long took = elapsed_us(start);
		if (took >= SLOWSYNC_BUCKETS)
			took = SLOWSYNC_BUCKETS - 1;
		__atomic_fetch_add(&histogram[took < 0 ? 0 : took], 1, __ATOMIC_RELAXED);
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
		prepare();                                                \
		struct timespec start;                                    \
		clock_gettime(CLOCK_MONOTONIC, &start);                   \
		int r = real(fd);                                         \
		sleep_until(&start, us);                                  \
		return r;                                                 \
	}

SLOW(fsync)
SLOW(fdatasync)
