/*
 * How long a thread that never blocks loses its processor anyway, for docs/PERFORMANCE.md: it
 * reads CLOCK_MONOTONIC in a loop for a while and counts the gaps between consecutive readings,
 * which are the interrupts, kernel threads, other programs and (in a virtual machine) the
 * hypervisor's own preemptions that a spinning pacing thread would suffer too. The emulator's
 * reply lateness cannot be lower than this machine's gaps, whatever the emulator does.
 *
 *   cc -O2 bench/jitter.c -o jitter && ./jitter SECONDS [CPU]
 */
#define _GNU_SOURCE
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int main(int argc, char *argv[])
{
	static const uint64_t limits_us[] = { 2, 5, 10, 20, 50, 100, 1000 };
	enum { LIMITS = sizeof(limits_us) / sizeof(limits_us[0]) };
	uint64_t over[LIMITS] = { 0 }, lost_ns[LIMITS] = { 0 };
	uint64_t seconds, start, last, end, max_gap = 0, readings = 0;
	int i;

	if (argc < 2 || (seconds = strtoull(argv[1], NULL, 10)) == 0) {
		fprintf(stderr, "usage: %s SECONDS [CPU]\n", argv[0]);
		return 1;
	}
	if (argc > 2) {
		cpu_set_t set;
		CPU_ZERO(&set);
		CPU_SET(atoi(argv[2]), &set);
		if (sched_setaffinity(0, sizeof(set), &set) != 0) {
			perror("sched_setaffinity");
			return 1;
		}
	}
	start = last = now_ns();
	end = start + seconds * 1000000000u;
	while (last < end) {
		uint64_t t = now_ns(), gap = t - last;
		readings++;
		if (gap > max_gap)
			max_gap = gap;
		for (i = 0; i < LIMITS; i++) {
			if (gap > limits_us[i] * 1000) {
				over[i]++;
				lost_ns[i] += gap;
			}
		}
		last = t;
	}
	printf("%llu readings in %llu s, longest gap %.1f us\n", (unsigned long long)readings,
	       (unsigned long long)seconds, max_gap / 1000.0);
	printf("| gap over (us) | gaps | per second | share of the time |\n|---|---|---|---|\n");
	for (i = 0; i < LIMITS; i++)
		printf("| %llu | %llu | %.1f | %.4f %% |\n", (unsigned long long)limits_us[i],
		       (unsigned long long)over[i], over[i] / (double)seconds,
		       100.0 * lost_ns[i] / (double)(end - start));
	return 0;
}
