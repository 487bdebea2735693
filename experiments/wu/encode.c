/*
 * A stand-in for the video encoders of Wu's CPU-speed study (seed 003, Table 4.10: five ffmpeg
 * processes encoding the 300-frame CIF sequence Foreman on a disk mounted `sync`). Like them it
 * alternates computation and I/O per frame: read a raw CIF frame (352 x 288, YCbCr 4:2:0,
 * 152064 bytes) from its input file, transform it for a fixed amount of arithmetic, and write
 * a compressed-sized result to its output file, synced. The arithmetic is fixed, not timed, so
 * under `storsim cosim --cpu-speed X` it takes 1/X of its real time in virtual time while the
 * device's time stays the same, which is the whole point of the study.
 *
 *   encode prepare DIR FRAMES        write DIR/input.yuv (deterministic bytes), outside cosim
 *   encode run DIR FRAMES ROUNDS PROCS
 *       PROCS processes each encode FRAMES frames of DIR/input.yuv into DIR/out-N.bin,
 *       ROUNDS passes of arithmetic over each frame.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

enum { FRAME_BYTES = 352 * 288 * 3 / 2, OUT_BYTES = 16384 };

static void die(const char *what) {
    perror(what);
    exit(1);
}

static long arg_count(const char *text, const char *name) {
    char *end;
    long v = strtol(text, &end, 10);
    if (*text == '\0' || *end != '\0' || v < 1) {
        fprintf(stderr, "encode: %s must be a whole number >= 1, not '%s'\n", name, text);
        exit(2);
    }
    return v;
}

static void write_all(int fd, const uint8_t *buf, size_t len, off_t offset) {
    while (len > 0) {
        ssize_t n = pwrite(fd, buf, len, offset);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            die("pwrite");
        buf += n;
        len -= (size_t)n;
        offset += n;
    }
}

static void prepare(const char *dir, long frames) {
    char path[4096];
    snprintf(path, sizeof path, "%s/input.yuv", dir);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0)
        die(path);
    static uint8_t frame[FRAME_BYTES];
    uint64_t x = 0x9e3779b97f4a7c15u;
    for (long f = 0; f < frames; f++) {
        for (size_t i = 0; i < FRAME_BYTES; i++) {
            /* xorshift64: deterministic content, so every run reads the same frames. */
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            frame[i] = (uint8_t)x;
        }
        write_all(fd, frame, FRAME_BYTES, (off_t)f * FRAME_BYTES);
    }
    if (close(fd) != 0)
        die("close");
}

/* The "encoding": ROUNDS passes of a 2-tap filter and a running checksum over the frame, then
 * the result folded into OUT_BYTES. Cheap to state, impossible for the compiler to skip. */
static void encode_frame(uint8_t *frame, long rounds, uint8_t *out) {
    uint32_t acc = 0;
    for (long r = 0; r < rounds; r++) {
        for (size_t i = 1; i < FRAME_BYTES; i++) {
            frame[i] = (uint8_t)((frame[i] + frame[i - 1] * 3u + (uint32_t)r) >> 1);
            acc = acc * 31u + frame[i];
        }
    }
    for (size_t i = 0; i < OUT_BYTES; i++)
        out[i] = (uint8_t)(frame[i * (FRAME_BYTES / OUT_BYTES)] ^ (acc >> (i % 24)));
}

static void worker(const char *dir, int id, long frames, long rounds) {
    char in_path[4096], out_path[4096];
    snprintf(in_path, sizeof in_path, "%s/input.yuv", dir);
    snprintf(out_path, sizeof out_path, "%s/out-%d.bin", dir, id);
    int in = open(in_path, O_RDONLY);
    if (in < 0)
        die(in_path);
    int out = open(out_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (out < 0)
        die(out_path);
    static uint8_t frame[FRAME_BYTES], encoded[OUT_BYTES];
    for (long f = 0; f < frames; f++) {
        size_t got = 0;
        while (got < FRAME_BYTES) {
            ssize_t n = pread(in, frame + got, FRAME_BYTES - got, (off_t)f * FRAME_BYTES + got);
            if (n < 0 && errno == EINTR)
                continue;
            if (n <= 0)
                die("pread");
            got += (size_t)n;
        }
        encode_frame(frame, rounds, encoded);
        write_all(out, encoded, OUT_BYTES, (off_t)f * OUT_BYTES);
        /* The thesis mounted its file system `sync`: each frame's output reaches the disk
         * before the encoder goes on. */
        if (fdatasync(out) != 0)
            die("fdatasync");
    }
    close(in);
    close(out);
}

int main(int argc, char **argv) {
    if (argc == 4 && strcmp(argv[1], "prepare") == 0) {
        prepare(argv[2], arg_count(argv[3], "FRAMES"));
        return 0;
    }
    if (argc != 6 || strcmp(argv[1], "run") != 0) {
        fprintf(stderr, "usage: encode prepare DIR FRAMES | encode run DIR FRAMES ROUNDS PROCS\n");
        return 2;
    }
    const char *dir = argv[2];
    long frames = arg_count(argv[3], "FRAMES");
    long rounds = arg_count(argv[4], "ROUNDS");
    long procs = arg_count(argv[5], "PROCS");
    for (long p = 0; p < procs; p++) {
        pid_t pid = fork();
        if (pid < 0)
            die("fork");
        if (pid == 0) {
            worker(dir, (int)p, frames, rounds);
            _exit(0);
        }
    }
    int failed = 0, status;
    while (wait(&status) > 0)
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
            failed = 1;
    return failed;
}
