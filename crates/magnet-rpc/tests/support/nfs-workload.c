/* A scripted NFS workload on libnfs (a client nobody in magnet wrote), used by
 * magnet-rpc's live tests. Usage: nfs-workload SERVER EXPORT VERSION
 * Does: mkdir /d; create /d/f1 and write 3 x 3000 bytes; read /d/f1 back in 4000-byte
 * reads; create /d/f2 and write 2000 bytes; rename /d/f2 -> /d/f3; readdir /d;
 * read /d/f3; remove /d/f3 and /d/f1; rmdir /d. Writes stay under 3.9 KB per call
 * because libnfs's NFSv4 encoder fails above that. Exits non-zero on any failure. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <nfsc/libnfs.h>

static struct nfs_context *nfs;

static void die(const char *what) {
	fprintf(stderr, "nfs-workload: %s: %s\n", what, nfs_get_error(nfs));
	exit(1);
}

static void write_file(const char *path, size_t chunks, size_t chunk) {
	struct nfsfh *fh;
	char buf[4000];
	memset(buf, 'm', sizeof buf);
	if (nfs_create(nfs, path, O_RDWR | O_CREAT | O_TRUNC, 0644, &fh) < 0) die(path);
	for (size_t i = 0; i < chunks; i++)
		if (nfs_pwrite(nfs, fh, i * chunk, chunk, buf) != (int)chunk) die("pwrite");
	if (nfs_close(nfs, fh) < 0) die("close");
}

static size_t read_file(const char *path, size_t size) {
	struct nfsfh *fh;
	char buf[4000];
	size_t got = 0;
	if (nfs_open(nfs, path, O_RDONLY, &fh) < 0) die(path);
	while (got < size) {
		size_t want = size - got < sizeof buf ? size - got : sizeof buf;
		int n = nfs_pread(nfs, fh, got, want, buf);
		if (n <= 0) die("pread");
		got += n;
	}
	if (nfs_close(nfs, fh) < 0) die("close");
	return got;
}

int main(int argc, char **argv) {
	struct nfsdir *dir;
	struct nfsdirent *ent;
	int n = 0;
	if (argc != 4) {
		fprintf(stderr, "usage: nfs-workload SERVER EXPORT VERSION\n");
		return 2;
	}
	nfs = nfs_init_context();
	if (!nfs) return 1;
	if (atoi(argv[3]) == 4 && nfs_set_version(nfs, 4) < 0) die("set_version");
	if (nfs_mount(nfs, argv[1], argv[2]) < 0) die("mount");
	if (nfs_mkdir(nfs, "/d") < 0) die("mkdir");
	write_file("/d/f1", 3, 3000);
	if (read_file("/d/f1", 9000) != 9000) die("read f1");
	write_file("/d/f2", 1, 2000);
	if (nfs_rename(nfs, "/d/f2", "/d/f3") < 0) die("rename");
	if (nfs_opendir(nfs, "/d", &dir) < 0) die("opendir");
	while ((ent = nfs_readdir(nfs, dir)) != NULL) n++;
	nfs_closedir(nfs, dir);
	if (read_file("/d/f3", 2000) != 2000) die("read f3");
	if (nfs_unlink(nfs, "/d/f3") < 0) die("unlink f3");
	if (nfs_unlink(nfs, "/d/f1") < 0) die("unlink f1");
	if (nfs_rmdir(nfs, "/d") < 0) die("rmdir");
	nfs_destroy_context(nfs);
	printf("ok %d entries\n", n);
	return 0;
}
