// pf: will-it-scale-like page_fault1/2/3, per-fault CPU time.
//   pf1: mmap 128 MiB anonymous private, write one byte per page, munmap.
//   pf2: mmap 128 MiB of a file MAP_PRIVATE, write every page (COW from the
//        page cache), munmap.
//   pf3: mmap 128 MiB of a file MAP_SHARED, write every page, munmap.
// (will-it-scale: the same loops; one "op" = one page touched; munmap is
// inside the timed loop.)  The file is created per task in DIR (default
// /dev/shm, tmpfs) with ftruncate (sparse), like will-it-scale's mkstemp.
// usage: pf TEST NTASKS MODE(proc|thread) ITERS [DIR]
// Each task: one untimed warm-up iteration, then ITERS timed iterations;
// for each it records thread CPU time (CLOCK_THREAD_CPUTIME_ID) of the touch
// loop and of mmap+munmap.  Prints per-iteration ns per fault for each task.
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MEMSIZE (128ul << 20)
static int test, iters;
static const char *dir = "/dev/shm";

static double tcpu(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static void *task(void *arg) {
  long id = (long)arg;
  int fd = -1;
  if (test != 1) {
    char path[256];
    snprintf(path, sizeof path, "%s/pfbench.%d.%ld.XXXXXX", dir, getpid(), id);
    fd = mkstemp(path);
    if (fd < 0) { perror("mkstemp"); exit(1); }
    unlink(path);
    if (ftruncate(fd, MEMSIZE)) { perror("ftruncate"); exit(1); }
  }
  long pg = 4096, n = MEMSIZE / pg;
  char line[16384];
  int len = 0;
  line[0] = 0;
  for (int it = -1; it < iters; it++) {
    double t0 = tcpu();
    char *c = test == 1 ? mmap(NULL, MEMSIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)
                        : mmap(NULL, MEMSIZE, PROT_READ | PROT_WRITE, test == 2 ? MAP_PRIVATE : MAP_SHARED, fd, 0);
    if (c == MAP_FAILED) { perror("mmap"); exit(1); }
    double t1 = tcpu();
    for (long i = 0; i < (long)MEMSIZE; i += pg) c[i] = 0;
    double t2 = tcpu();
    munmap(c, MEMSIZE);
    double t3 = tcpu();
    if (it >= 0)
      len += snprintf(line + len, sizeof line - len, "pf%d task=%ld iter=%d fault_ns=%.1f all_ns=%.1f\n", test, id,
                      it, (t2 - t1) / n, (t3 - t0) / n);
  }
  fputs(line, stdout);
  fflush(stdout);
  if (fd >= 0) close(fd);
  return NULL;
}

int main(int argc, char **argv) {
  if (argc < 5) { fprintf(stderr, "usage: pf TEST NTASKS proc|thread ITERS [DIR]\n"); return 2; }
  test = atoi(argv[1]);
  int nt = atoi(argv[2]);
  int threads = !strcmp(argv[3], "thread");
  iters = atoi(argv[4]);
  if (argc > 5) dir = argv[5];
  if (threads) {
    pthread_t th[64];
    for (long i = 0; i < nt; i++) pthread_create(&th[i], NULL, task, (void *)i);
    for (int i = 0; i < nt; i++) pthread_join(th[i], NULL);
  } else {
    for (long i = 0; i < nt; i++)
      if (fork() == 0) { task((void *)i); _exit(0); }
    for (int i = 0; i < nt; i++) wait(NULL);
  }
  return 0;
}
