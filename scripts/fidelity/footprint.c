// footprint: how much of a small set of lines one kernel operation leaves
// in L1, measured on the host (prime + probe).
//
// The lines a memcg stat update walks (a few per cgroup level) are touched
// once or more per operation; between two walks the operation itself runs
// (a page fault, a send).  This program primes PROBE lines scattered over a
// 4 MiB buffer (a random dependent chain, so no prefetcher helps), runs one
// operation, then times one dependent pass over the same lines with the
// TSC.  Two references bracket it: the pass right after priming (every line
// in L1) and the pass after streaming 2 MiB through a scratch buffer (every
// line out of L1 and L2, in L3).  An L2 reference (lines evicted from L1
// only) comes from a pass after 256 KiB of scratch.  The fraction left in
// L1 is (t_L2 - t_op) / (t_L2 - t_L1), from the trimmed means (the
// fastest 95% of the trials).
//
// usage: footprint OP [TRIALS]      (prints one line of key=value pairs)
//   OP: none | syscall | fill:BYTES | rand:LINES | spin:NS | pf1 | pf2 | pf3 | send | recv,
//   each optionally suffixed `x2` (the operation twice between prime and
//   probe: what an SMT sibling running the same workload adds)
//   fill: a memset of BYTES contiguous bytes; rand: LINES lines at random
//   addresses of an 8 MiB buffer (the calibration curve a kernel path's
//   scattered footprint is read against); spin: NS ns of pause loop, no
//   memory touched (what the host's other tenants evict meanwhile: the
//   control an operation of that length is divided by)
//   pf1/pf2/pf3: will-it-scale's page_fault1/2/3 (one write fault per
//   trial on a 128 MiB region: anonymous, a private file mapping, a shared
//   file mapping of a tmpfs file that was faulted in once before, so that
//   the file's pages are in the page cache as in will-it-scale's steady
//   state); send: one 10 KiB sendfile() on a loopback TCP connection whose
//   receiver (a child on the other CPU) drains it; recv: the receiving side
//   (the child sends, this process receives 10 KiB).
// Build: gcc -O2 -o footprint footprint.c
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <x86intrin.h>

#define PROBE 32
#define SPAN (4ul << 20)
#define REGION (128ul << 20)
#define MSG 10240

struct line { struct line *next; char pad[56]; };
static struct line *head;
static char *scratch;

static uint64_t rnd = 88172645463325252ull;
static uint64_t xr(void) { rnd ^= rnd << 13; rnd ^= rnd >> 7; rnd ^= rnd << 17; return rnd; }

static void pin(int cpu) { cpu_set_t s; CPU_ZERO(&s); CPU_SET(cpu, &s); sched_setaffinity(0, sizeof s, &s); }

static void build(void) {
  char *buf = aligned_alloc(4096, SPAN);
  memset(buf, 0, SPAN);
  size_t n = SPAN / 64, idx[PROBE];
  for (int i = 0; i < PROBE; i++) {
  again:
    idx[i] = xr() % n;
    for (int j = 0; j < i; j++) if (idx[j] == idx[i]) goto again;
  }
  for (int i = 0; i < PROBE; i++) ((struct line *)(buf + idx[i] * 64))->next = (struct line *)(buf + idx[(i + 1) % PROBE] * 64);
  head = (struct line *)(buf + idx[0] * 64);
}

static inline struct line *chase(struct line *p) { for (int i = 0; i < PROBE; i++) p = p->next; return p; }
static inline uint64_t probe(void) {
  unsigned aux;
  uint64_t t0 = __rdtscp(&aux);
  struct line *p = chase(head);
  uint64_t t1 = __rdtscp(&aux);
  __asm__ volatile("" ::"r"(p));
  return t1 - t0;
}
static void prime(void) { struct line *p = head; for (int k = 0; k < 4; k++) p = chase(p); __asm__ volatile("" ::"r"(p)); }
static size_t randlines;
static void touch_random(size_t n) { for (size_t i = 0; i < n; i++) scratch[(xr() % ((8ul << 20) / 64)) * 64] += 1; }
static void fill(size_t bytes) { static size_t off; if (off + bytes > (8ul << 20)) off = 0; memset(scratch + off, (int)off, bytes); off += bytes; }

static int cmp(const void *a, const void *b) { uint64_t x = *(uint64_t *)a, y = *(uint64_t *)b; return x < y ? -1 : x > y; }
static double quant(uint64_t *v, int n, double q) { qsort(v, n, sizeof *v, cmp); return v[(int)(q * (n - 1))]; }

// Mean of the fastest 95% (a trial hit by an interrupt or a preemption is
// dropped with the slowest 5%).
static double trimmed(uint64_t *v, int n) { qsort(v, n, sizeof *v, cmp); double s = 0; int k = n * 95 / 100; for (int i = 0; i < k; i++) s += v[i]; return s / k; }
static double tsc_per_ns(void) {
  struct timespec a, b; clock_gettime(CLOCK_MONOTONIC, &a); uint64_t t0 = __rdtsc();
  usleep(200000);
  clock_gettime(CLOCK_MONOTONIC, &b); uint64_t t1 = __rdtsc();
  return (t1 - t0) / ((b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec));
}

static int sock_pair(int *snd, int *rcv) {
  int l = socket(AF_INET6, SOCK_STREAM, 0), one = 1;
  setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  struct sockaddr_in6 a = {.sin6_family = AF_INET6, .sin6_addr = in6addr_loopback};
  if (bind(l, (void *)&a, sizeof a) || listen(l, 1)) { perror("bind"); exit(1); }
  socklen_t al = sizeof a; getsockname(l, (void *)&a, &al);
  *snd = socket(AF_INET6, SOCK_STREAM, 0);
  if (connect(*snd, (void *)&a, sizeof a)) { perror("connect"); exit(1); }
  *rcv = accept(l, NULL, NULL);
  close(l);
  return 0;
}

int main(int argc, char **argv) {
  if (argc < 2) { fprintf(stderr, "usage: footprint OP [TRIALS]\n"); return 2; }
  char opbuf[64];
  snprintf(opbuf, sizeof opbuf, "%s", argv[1]);
  // OPx2: the operation twice between prime and probe (an SMT sibling
  // running the same workload on the same L1).
  int reps = 1;
  size_t ol = strlen(opbuf);
  if (ol > 2 && !strcmp(opbuf + ol - 2, "x2")) { opbuf[ol - 2] = 0; reps = 2; }
  const char *op = opbuf;
  int trials = argc > 2 ? atoi(argv[2]) : 4000;
  pin(0);
  scratch = aligned_alloc(4096, 8ul << 20); memset(scratch, 1, 8ul << 20);
  build();
  double f = tsc_per_ns();
  uint64_t *l1 = calloc(trials, 8), *l2 = calloc(trials, 8), *l3 = calloc(trials, 8), *t = calloc(trials, 8);
  // References: all in L1; out of L1 (256 KiB streamed); out of L2 (2 MiB).
  for (int i = 0; i < trials; i++) { prime(); l1[i] = probe(); }
  for (int i = 0; i < trials; i++) { prime(); fill(256 << 10); l2[i] = probe(); }
  for (int i = 0; i < trials; i++) { prime(); fill(2 << 20); l3[i] = probe(); }

  char *region = NULL; int fd = -1, snd = -1, rcv = -1; long page = 0; pid_t child = 0;
  char *rbuf = malloc(1 << 17);
  size_t fillb = 0;
  if (!strncmp(op, "fill:", 5)) fillb = strtoul(op + 5, NULL, 0);
  if (!strncmp(op, "rand:", 5)) randlines = strtoul(op + 5, NULL, 0);
  uint64_t spin_ticks = 0;
  if (!strncmp(op, "spin:", 5)) spin_ticks = (uint64_t)(strtod(op + 5, NULL) * f);
  int kind = !strcmp(op, "pf1") ? 1 : !strcmp(op, "pf2") ? 2 : !strcmp(op, "pf3") ? 3 : !strcmp(op, "send") ? 4
           : !strcmp(op, "recv") ? 5 : !strcmp(op, "syscall") ? 6 : fillb ? 7 : randlines ? 8 : spin_ticks ? 9 : 0;
  if (kind >= 1 && kind <= 3) {
    if (kind > 1) {
      char path[] = "/dev/shm/footprint.XXXXXX"; fd = mkstemp(path); unlink(path);
      if (ftruncate(fd, REGION)) { perror("ftruncate"); return 1; }
      // Fault the file's pages in once (will-it-scale's steady state: the
      // page cache holds them from the earlier iterations).
      char *c = mmap(NULL, REGION, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
      for (size_t i = 0; i < REGION; i += 4096) c[i] = 1;
      munmap(c, REGION);
    }
  }
  if (kind == 4 || kind == 5) {
    sock_pair(&snd, &rcv);
    int sfd = -1;
    char path[] = "/dev/shm/footprint-send.XXXXXX"; sfd = mkstemp(path); unlink(path);
    char *blk = malloc(3 * MSG); memset(blk, 'x', 3 * MSG);
    if (write(sfd, blk, 3 * MSG) != 3 * MSG) return 1;
    fd = sfd;
    child = fork();
    if (child == 0) {
      pin(1);
      if (kind == 4) { for (;;) if (recv(rcv, rbuf, 1 << 17, 0) <= 0) _exit(0); }
      off_t o = 0;
      for (;;) { if (o >= 3 * MSG) o = 0; if (sendfile(snd, sfd, &o, MSG) <= 0) _exit(0); }
    }
  }
  for (int i = 0; i < trials; i++) {
    if (kind >= 1 && kind <= 3 && (region == NULL || page + reps > (long)(REGION / 4096))) {
      if (region) munmap(region, REGION);
      region = kind == 1 ? mmap(NULL, REGION, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)
                         : mmap(NULL, REGION, PROT_READ | PROT_WRITE, kind == 2 ? MAP_PRIVATE : MAP_SHARED, fd, 0);
      page = 0;
    }
    prime();
    for (int r = 0; r < reps; r++) switch (kind) {
    case 1: case 2: case 3: region[page++ * 4096] = 0; break;
    case 4: { static off_t o; if (o >= 3 * MSG) o = 0; size_t left = MSG; while (left) { ssize_t k = sendfile(snd, fd, &o, left); if (k <= 0) { perror("sendfile"); return 1; } left -= k; } break; }
    case 5: { size_t got = 0; while (got < MSG) { ssize_t k = recv(rcv, rbuf, MSG - got, 0); if (k <= 0) { perror("recv"); return 1; } got += k; } break; }
    case 6: syscall(SYS_getppid); break;
    case 7: fill(fillb); break;
    case 8: touch_random(randlines); break;
    case 9: { uint64_t t0 = __rdtsc(); while (__rdtsc() - t0 < spin_ticks) _mm_pause(); break; }
    default: break;
    }
    t[i] = probe();
  }
  if (child) { kill(child, SIGKILL); waitpid(child, NULL, 0); }
  double a = trimmed(l1, trials) / f, b = trimmed(l2, trials) / f, c = trimmed(l3, trials) / f;
  double m = trimmed(t, trials) / f, q1 = quant(t, trials, 0.25) / f, q3 = quant(t, trials, 0.75) / f;
  printf("op=%s%s left_in_l1=%.3f op_ns_per_line=%.2f ref_l1_ns=%.2f ref_l2_ns=%.2f ref_l3_ns=%.2f "
         "op_p25=%.2f op_p75=%.2f trials=%d probe_lines=%d tsc_per_ns=%.3f\n",
         op, reps == 2 ? "x2" : "", (b - m) / (b - a), m / PROBE, a / PROBE, b / PROBE, c / PROBE,
         q1 / PROBE, q3 / PROBE, trials, PROBE, f);
  return 0;
}
