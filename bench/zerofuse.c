/*
 * The yardstick for storsim's FUSE front end in bench/emulate.sh: the least a FUSE server
 * written in C against libfuse 3 can do per request. It serves one file, "disk", of a fixed
 * size, opened with direct I/O as storsim's is; reads return zeros and writes are acknowledged
 * and dropped, so what a client measures is libfuse and the kernel's FUSE path alone.
 *
 *   cc -O2 bench/zerofuse.c $(pkg-config --cflags --libs fuse3) -o zerofuse
 *   ./zerofuse -f [-s] MOUNTPOINT     (-s: one thread, as storsim's pacing thread)
 */
#define FUSE_USE_VERSION 34
#include <errno.h>
#include <fuse_lowlevel.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char file_name[] = "disk";
static const off_t file_bytes = 1L << 30;
static const fuse_ino_t file_ino = 2;
/* The largest read the kernel sends by default (max_read is 128 KiB with most kernels; 1 MiB
 * leaves room for larger ones). */
static char zeros[1 << 20];

static void fill_stat(fuse_ino_t ino, struct stat *st)
{
	memset(st, 0, sizeof(*st));
	st->st_ino = ino;
	if (ino == FUSE_ROOT_ID) {
		st->st_mode = S_IFDIR | 0755;
		st->st_nlink = 2;
	} else {
		st->st_mode = S_IFREG | 0644;
		st->st_nlink = 1;
		st->st_size = file_bytes;
	}
}

static void zf_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct fuse_entry_param e;
	if (parent != FUSE_ROOT_ID || strcmp(name, file_name) != 0) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	memset(&e, 0, sizeof(e));
	e.ino = file_ino;
	e.attr_timeout = 1e9;
	e.entry_timeout = 1e9;
	fill_stat(file_ino, &e.attr);
	fuse_reply_entry(req, &e);
}

static void zf_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct stat st;
	(void)fi;
	if (ino != FUSE_ROOT_ID && ino != file_ino) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	fill_stat(ino, &st);
	fuse_reply_attr(req, &st, 1e9);
}

static void zf_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	if (ino != file_ino) {
		fuse_reply_err(req, EISDIR);
		return;
	}
	fi->direct_io = 1;
	fuse_reply_open(req, fi);
}

static void zf_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	(void)ino;
	(void)fi;
	if (off >= file_bytes)
		size = 0;
	else if ((off_t)size > file_bytes - off)
		size = file_bytes - off;
	if (size > sizeof(zeros))
		size = sizeof(zeros);
	fuse_reply_buf(req, zeros, size);
}

static void zf_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size, off_t off,
		     struct fuse_file_info *fi)
{
	(void)ino;
	(void)buf;
	(void)fi;
	if (off >= file_bytes) {
		fuse_reply_err(req, ENOSPC);
		return;
	}
	fuse_reply_write(req, size);
}

static void zf_fsync(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
	(void)ino;
	(void)datasync;
	(void)fi;
	fuse_reply_err(req, 0);
}

static const struct fuse_lowlevel_ops ops = {
	.lookup = zf_lookup,
	.getattr = zf_getattr,
	.open = zf_open,
	.read = zf_read,
	.write = zf_write,
	.fsync = zf_fsync,
};

int main(int argc, char *argv[])
{
	struct fuse_args args = FUSE_ARGS_INIT(argc, argv);
	struct fuse_cmdline_opts opts;
	struct fuse_session *se;
	int ret = 1;

	if (fuse_parse_cmdline(&args, &opts) != 0 || opts.mountpoint == NULL) {
		fprintf(stderr, "usage: %s -f [-s] MOUNTPOINT\n", argv[0]);
		return 1;
	}
	se = fuse_session_new(&args, &ops, sizeof(ops), NULL);
	if (se == NULL)
		goto out;
	if (fuse_set_signal_handlers(se) != 0)
		goto destroy;
	if (fuse_session_mount(se, opts.mountpoint) != 0)
		goto remove_handlers;
	printf("zerofuse: %s/%s\n", opts.mountpoint, file_name);
	fflush(stdout);
	if (opts.singlethread) {
		ret = fuse_session_loop(se);
	} else {
		struct fuse_loop_config config = { .clone_fd = 0, .max_idle_threads = 10 };
		ret = fuse_session_loop_mt(se, &config);
	}
	fuse_session_unmount(se);
remove_handlers:
	fuse_remove_signal_handlers(se);
destroy:
	fuse_session_destroy(se);
out:
	free(opts.mountpoint);
	fuse_opt_free_args(&args);
	return ret ? 1 : 0;
}
