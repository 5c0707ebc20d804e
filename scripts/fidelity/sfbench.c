// sfbench: loopback TCP sendfile benchmark, a stand-in for
//   netperf -6 -H ::1 -t TCP_SENDFILE -- -m 10K
// One sender process (sendfile() of MSG bytes per call from a file in
// tmpfs/page cache, offset cycling over the file) and one receiver process
// (recv() of RECV bytes per call), connected over [::1].
// Both processes measure their own CPU time (CLOCK_PROCESS_CPUTIME_ID, which
// on this kernel includes softirq work done in task context since
// CONFIG_IRQ_TIME_ACCOUNTING is off) over the measured interval, and their
// context switches (getrusage).
//
// usage: sfbench [-t secs] [-w warmup_secs] [-m msg] [-r recvsize]
//                [-f file] [-s cpu] [-R cpu] [-S sndbuf] [-B rcvbuf]
//                [-x cmd-fifo-sync]
// Output (one line, key=value) from the sender after the receiver reports.
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now(clockid_t c) {
  struct timespec ts;
  clock_gettime(c, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void pin(int cpu) {
  if (cpu < 0) return;
  cpu_set_t s;
  CPU_ZERO(&s);
  CPU_SET(cpu, &s);
  if (sched_setaffinity(0, sizeof(s), &s)) perror("setaffinity");
}

struct rep {  // what the receiver reports back
  double cpu, wall;
  long bytes, calls, nvcsw, nivcsw;
};

static volatile sig_atomic_t stop_flag;
static void on_alarm(int s) { (void)s; stop_flag = 1; }

int main(int argc, char **argv) {
  double secs = 3, warm = 0.5;
  int msg = 10240, rsz = 131072, scpu = -1, rcpu = -1, sndbuf = 0, rcvbuf = 0;
  const char *file = "/dev/shm/sfbench.dat";
  int o;
  long fsz_opt = 0;
  while ((o = getopt(argc, argv, "t:w:m:r:f:s:R:S:B:F:")) != -1) {
    switch (o) {
      case 't': secs = atof(optarg); break;
      case 'w': warm = atof(optarg); break;
      case 'm': msg = atoi(optarg); break;
      case 'r': rsz = atoi(optarg); break;
      case 'f': file = optarg; break;
      case 's': scpu = atoi(optarg); break;
      case 'R': rcpu = atoi(optarg); break;
      case 'S': sndbuf = atoi(optarg); break;
      case 'B': rcvbuf = atoi(optarg); break;
      case 'F': fsz_opt = atol(optarg); break;
      default: fprintf(stderr, "bad option\n"); return 2;
    }
  }
  // file: created/resized if its size differs; contents arbitrary bytes.
  long fsize = 3L * msg;  // netperf: a ring of send_width (~2-3) buffers of msg bytes
  if (fsz_opt > 0) fsize = fsz_opt;
  int fd = open(file, O_RDWR | O_CREAT, 0644);
  if (fd < 0) { perror("open file"); return 1; }
  struct stat st;
  fstat(fd, &st);
  if (st.st_size != fsize) {
    ftruncate(fd, 0);
    char *b = malloc(fsize);
    for (long i = 0; i < fsize; i++) b[i] = (char)(i * 7 + 1);
    pwrite(fd, b, fsize, 0);
    free(b);
  }
  // touch it so it is in page cache
  { char c; for (long p = 0; p < fsize; p += 4096) pread(fd, &c, 1, p); }

  int ls = socket(AF_INET6, SOCK_STREAM, 0);
  int one = 1;
  setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  struct sockaddr_in6 a = {.sin6_family = AF_INET6, .sin6_addr = IN6ADDR_LOOPBACK_INIT};
  if (bind(ls, (void *)&a, sizeof a) || listen(ls, 1)) { perror("bind/listen"); return 1; }
  socklen_t al = sizeof a;
  getsockname(ls, (void *)&a, &al);
  int pfd[2], gofd[2];
  pipe(pfd);
  pipe(gofd);
  pid_t pid = fork();
  if (pid == 0) {  // receiver
    pin(rcpu);
    int s = accept(ls, NULL, NULL);
    if (rcvbuf) setsockopt(s, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf);
    char *buf = malloc(rsz);
    // Phase 1: warmup until the sender writes 'g' on gofd (non-blocking check)
    fcntl(gofd[0], F_SETFL, O_NONBLOCK);
    struct rep r = {0};
    int measuring = 0;
    double c0 = 0, w0 = 0;
    struct rusage ru0, ru1;
    for (;;) {
      if (!measuring) {
        char g;
        if (read(gofd[0], &g, 1) == 1) {
          measuring = 1;
          c0 = now(CLOCK_PROCESS_CPUTIME_ID);
          w0 = now(CLOCK_MONOTONIC);
          getrusage(RUSAGE_SELF, &ru0);
        }
      }
      ssize_t n = recv(s, buf, rsz, 0);
      if (n <= 0) break;
      if (measuring) { r.bytes += n; r.calls++; }
    }
    r.cpu = now(CLOCK_PROCESS_CPUTIME_ID) - c0;
    r.wall = now(CLOCK_MONOTONIC) - w0;
    getrusage(RUSAGE_SELF, &ru1);
    r.nvcsw = ru1.ru_nvcsw - ru0.ru_nvcsw;
    r.nivcsw = ru1.ru_nivcsw - ru0.ru_nivcsw;
    write(pfd[1], &r, sizeof r);
    _exit(0);
  }
  close(ls);
  pin(scpu);
  int s = socket(AF_INET6, SOCK_STREAM, 0);
  if (sndbuf) setsockopt(s, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof sndbuf);
  if (connect(s, (void *)&a, sizeof a)) { perror("connect"); return 1; }
  signal(SIGALRM, on_alarm);
  off_t off = 0;
  long wcalls = 0;
  // warmup
  double wend = now(CLOCK_MONOTONIC) + warm;
  while (now(CLOCK_MONOTONIC) < wend) {
    if (off + msg > fsize) off = 0;
    if (sendfile(s, fd, &off, msg) < 0) { perror("sendfile"); return 1; }
    wcalls++;
  }
  // measured interval; the receiver starts measuring on its next recv
  write(gofd[1], "g", 1);
  struct rusage ru0, ru1;
  getrusage(RUSAGE_SELF, &ru0);
  double c0 = now(CLOCK_PROCESS_CPUTIME_ID), w0 = now(CLOCK_MONOTONIC);
  struct itimerval it = {.it_value = {.tv_sec = (long)secs, .tv_usec = (long)((secs - (long)secs) * 1e6)}};
  setitimer(ITIMER_REAL, &it, NULL);
  long calls = 0, bytes = 0;
  while (!stop_flag) {
    if (off + msg > fsize) off = 0;
    ssize_t n = sendfile(s, fd, &off, msg);
    if (n < 0) { if (errno == EINTR) continue; perror("sendfile"); return 1; }
    calls++;
    bytes += n;
  }
  double c1 = now(CLOCK_PROCESS_CPUTIME_ID), w1 = now(CLOCK_MONOTONIC);
  getrusage(RUSAGE_SELF, &ru1);
  shutdown(s, SHUT_WR);
  struct rep r;
  if (read(pfd[0], &r, sizeof r) != sizeof r) { fprintf(stderr, "no receiver report\n"); return 1; }
  waitpid(pid, NULL, 0);
  double sc = c1 - c0, wall = w1 - w0;
  printf("sends=%ld bytes=%ld wall_s=%.3f gbps=%.3f snd_cpu_s=%.4f rcv_cpu_s=%.4f "
         "snd_ns_per_send=%.1f rcv_ns_per_send=%.1f tot_ns_per_send=%.1f "
         "snd_csw_per_send=%.4f rcv_csw_per_send=%.4f snd_invol=%ld rcv_invol=%ld rcv_calls=%ld all_sends=%ld\n",
         calls, bytes, wall, bytes * 8 / wall / 1e9, sc, r.cpu, sc / calls * 1e9,
         r.cpu / calls * 1e9, (sc + r.cpu) / calls * 1e9,
         (double)(ru1.ru_nvcsw - ru0.ru_nvcsw + ru1.ru_nivcsw - ru0.ru_nivcsw) / calls,
         (double)(r.nvcsw + r.nivcsw) / calls, ru1.ru_nivcsw - ru0.ru_nivcsw, r.nivcsw, r.calls,
         calls + wcalls);
  return 0;
}
