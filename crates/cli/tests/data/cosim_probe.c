/* A fixed request sequence for the cosim tests: each call is timed with the program's own
 * clock (CLOCK_MONOTONIC, which cosim virtualises) and printed as "op offset bytes latency_ns".
 *
 *   cosim_probe seq FILE COUNT SIZE STRIDE   pwrite COUNT blocks, fsync, pread them back
 *   cosim_probe threads FILE THREADS COUNT   THREADS writers on disjoint ranges, plus a
 *                                            thread that sleeps 50 ms three times
 *   cosim_probe calls FILE N                 N clock_gettime calls, then N 4 KiB pwrites
 *                                            (docs/PERFORMANCE.md: per-call overhead)
 *   cosim_probe idle FILE N                  N times: 4 KiB pwrite, fsync, sleep 100 ms
 *                                            (docs/PERFORMANCE.md: an idle-heavy program)
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static pthread_mutex_t out_lock = PTHREAD_MUTEX_INITIALIZER;

static void report(const char *op, long long offset, long long bytes, uint64_t t0, uint64_t t1) {
    pthread_mutex_lock(&out_lock);
    printf("%s %lld %lld %llu %llu\n", op, offset, bytes, (unsigned long long)t0,
           (unsigned long long)(t1 - t0));
    pthread_mutex_unlock(&out_lock);
}

static int seq(const char *path, long count, long size, long stride) {
    int fd = open(path, O_RDWR | O_CREAT, 0644);
    if (fd < 0) { perror("open"); return 1; }
    char *buf = malloc(size);
    memset(buf, 'a', size);
    for (long i = 0; i < count; i++) {
        uint64_t t0 = now_ns();
        if (pwrite(fd, buf, size, i * stride) != size) { perror("pwrite"); return 1; }
        report("W", i * stride, size, t0, now_ns());
    }
    uint64_t t0 = now_ns();
    if (fsync(fd) != 0) { perror("fsync"); return 1; }
    report("F", 0, 0, t0, now_ns());
    for (long i = 0; i < count; i++) {
        uint64_t t0 = now_ns();
        if (pread(fd, buf, size, i * stride) != size) { perror("pread"); return 1; }
        report("R", i * stride, size, t0, now_ns());
        if (buf[0] != 'a') { fprintf(stderr, "bad data\n"); return 1; }
    }
    close(fd);
    return 0;
}

struct job { int fd; long first; long count; };

static void *writer(void *arg) {
    struct job *j = arg;
    char buf[4096];
    memset(buf, 'b', sizeof buf);
    for (long i = 0; i < j->count; i++) {
        long off = (j->first + i) * 4096;
        uint64_t t0 = now_ns();
        if (pwrite(j->fd, buf, sizeof buf, off) != (ssize_t)sizeof buf) { perror("pwrite"); exit(1); }
        report("W", off, 4096, t0, now_ns());
    }
    return NULL;
}

static void *sleeper(void *arg) {
    (void)arg;
    for (int i = 0; i < 3; i++) {
        uint64_t t0 = now_ns();
        usleep(50000);
        report("S", 0, 0, t0, now_ns());
    }
    return NULL;
}

static int threads(const char *path, int n, long count) {
    int fd = open(path, O_RDWR | O_CREAT, 0644);
    if (fd < 0) { perror("open"); return 1; }
    pthread_t t[65];
    struct job jobs[64];
    if (n > 64) n = 64;
    for (int i = 0; i < n; i++) {
        jobs[i] = (struct job){fd, (long)i * 100000, count};
        pthread_create(&t[i], NULL, writer, &jobs[i]);
    }
    pthread_create(&t[n], NULL, sleeper, NULL);
    for (int i = 0; i <= n; i++) pthread_join(t[i], NULL);
    close(fd);
    return 0;
}

static int calls(const char *path, long n) {
    int fd = open(path, O_RDWR | O_CREAT, 0644);
    if (fd < 0) { perror("open"); return 1; }
    char buf[4096];
    memset(buf, 'c', sizeof buf);
    uint64_t sum = 0;
    for (long i = 0; i < n; i++) sum += now_ns() & 1;
    for (long i = 0; i < n; i++)
        if (pwrite(fd, buf, sizeof buf, (i % 256) * 4096) != (ssize_t)sizeof buf) { perror("pwrite"); return 1; }
    close(fd);
    return (int)(sum & 0);
}

static int idle(const char *path, long n) {
    int fd = open(path, O_RDWR | O_CREAT, 0644);
    if (fd < 0) { perror("open"); return 1; }
    char buf[4096];
    memset(buf, 'i', sizeof buf);
    for (long i = 0; i < n; i++) {
        if (pwrite(fd, buf, sizeof buf, (i * 7919 % 1024) * 65536) != (ssize_t)sizeof buf) { perror("pwrite"); return 1; }
        fsync(fd);
        usleep(100000);
    }
    close(fd);
    return 0;
}

int main(int argc, char **argv) {
    if (argc == 6 && strcmp(argv[1], "seq") == 0)
        return seq(argv[2], atol(argv[3]), atol(argv[4]), atol(argv[5]));
    if (argc == 5 && strcmp(argv[1], "threads") == 0)
        return threads(argv[2], atoi(argv[3]), atol(argv[4]));
    if (argc == 4 && strcmp(argv[1], "calls") == 0)
        return calls(argv[2], atol(argv[3]));
    if (argc == 4 && strcmp(argv[1], "idle") == 0)
        return idle(argv[2], atol(argv[3]));
    fprintf(stderr, "usage: cosim_probe seq FILE COUNT SIZE STRIDE | threads FILE THREADS COUNT | calls FILE N | idle FILE N\n");
    return 2;
}
