// Open-loop HTTP/1.1 load generator for the latency phases of the benchmark (bench/open-loop.ts
// builds and runs it). Request i is sent at start + i/rate whether or not earlier ones have
// answered, so a slow target cannot slow the load down and hide its own latency. One thread,
// epoll, keep-alive connections opened as needed up to a cap, sleeps to the next send with
// nanosecond timeouts: its own overhead per request is a few µs and it has no collector to
// pause, so the tails it records are the target's and the host's, not its own.
//
// usage: open-loop PORT REQUEST_FILE RATE WARMUP_S DURATION_S MAX_IN_FLIGHT TIMEOUT_MS STREAM
//   REQUEST_FILE holds the raw request (head and body), sent as is on 127.0.0.1:PORT.
//   STREAM 1: the reply is an event stream that must end with a `[DONE]` event.
// output (stdout): one line `scheduled ok errors dropped elapsed_us`, one line with the first
// error's text (empty when none), then one line per recorded reply: `latency_us ttfb_us lag_us`
// (issue to end of reply, issue to first body byte, issue time after its scheduled time).
// Linux 5.11 or later (epoll_pwait2).
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

enum state { FREE, IDLE, CONNECTING, HEAD, BODY_LENGTH, CHUNK_SIZE, CHUNK_DATA, CHUNK_TRAILER, UNTIL_CLOSE };

struct conn {
  int fd;
  enum state state;
  long index;     // request index in flight
  double sent;    // µs, when issued
  double lag;     // µs, issued after its scheduled time
  double first;   // µs, first body byte (0: none yet)
  long left;      // bytes left in the body or chunk
  int status;
  int close_after;  // the reply ends the connection (Connection: close, or HTTP/1.0)
  char tail[16];  // the body's last bytes (for the `[DONE]` check)
  int tail_len;
  size_t len;     // unparsed bytes in buf
  char buf[65536];
};

static double now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static char first_error[200];
static long errors, ok;

static void fail(long index, long warm, const char *fmt, ...) {
  if (index < warm) return;
  errors++;
  if (first_error[0] == '\0') {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(first_error, sizeof first_error, fmt, ap);
    va_end(ap);
  }
}

static void keep_tail(struct conn *c, const char *p, size_t n) {
  if (n >= sizeof c->tail) {
    memcpy(c->tail, p + n - sizeof c->tail, sizeof c->tail);
    c->tail_len = sizeof c->tail;
    return;
  }
  size_t keep = sizeof c->tail - n;
  if ((size_t)c->tail_len < keep) keep = c->tail_len;
  memmove(c->tail, c->tail + c->tail_len - keep, keep);
  memcpy(c->tail + keep, p, n);
  c->tail_len = keep + n;
}

static void drop(struct conn *c, int ep) {
  epoll_ctl(ep, EPOLL_CTL_DEL, c->fd, NULL);
  close(c->fd);
  c->fd = -1;
  c->state = FREE;
}

// A body byte arrived (time `t`): the first one sets the time to first byte.
static void body_bytes(struct conn *c, const char *p, size_t n, double t) {
  if (n == 0) return;
  if (c->first == 0) c->first = t;
  keep_tail(c, p, n);
}

// Parse what is buffered; returns 1 when the reply is complete, -1 on a malformed reply.
static int parse(struct conn *c, double t) {
  size_t at = 0;
  int done = 0;
  while (!done) {
    char *p = c->buf + at;
    size_t n = c->len - at;
    if (c->state == HEAD) {
      char *end = memmem(p, n, "\r\n\r\n", 4);
      if (end == NULL) break;
      size_t head = end - p + 4;
      if (n < 12 || strncmp(p, "HTTP/1.", 7) != 0) return -1;
      c->status = atoi(p + 9);
      c->close_after = strncmp(p, "HTTP/1.0", 8) == 0;
      c->state = UNTIL_CLOSE;
      for (char *line = memmem(p, head, "\r\n", 2); line != NULL && line + 2 < p + head - 2;) {
        line += 2;
        char *eol = memmem(line, p + head - line, "\r\n", 2);
        if (strncasecmp(line, "content-length:", 15) == 0) {
          c->state = BODY_LENGTH;
          c->left = strtol(line + 15, NULL, 10);
        } else if (strncasecmp(line, "transfer-encoding:", 18) == 0 && memmem(line, eol - line, "chunked", 7) != NULL) {
          c->state = CHUNK_SIZE;
        } else if (strncasecmp(line, "connection:", 11) == 0 && memmem(line, eol - line, "close", 5) != NULL) {
          c->close_after = 1;
        }
        line = eol;
      }
      at += head;
      if (c->state == BODY_LENGTH && c->left == 0) done = 1;
    } else if (c->state == BODY_LENGTH || c->state == CHUNK_DATA) {
      size_t take = n < (size_t)c->left ? n : (size_t)c->left;
      body_bytes(c, p, take, t);
      c->left -= take;
      at += take;
      if (c->left > 0) break;
      if (c->state == BODY_LENGTH) done = 1;
      else c->state = CHUNK_TRAILER;
    } else if (c->state == CHUNK_TRAILER) {
      if (n < 2) break;
      at += 2;
      c->state = CHUNK_SIZE;
    } else if (c->state == CHUNK_SIZE) {
      char *eol = memmem(p, n, "\r\n", 2);
      if (eol == NULL) break;
      long size = strtol(p, NULL, 16);
      at += eol - p + 2;
      if (size > 0) {
        c->left = size;
        c->state = CHUNK_DATA;
      } else {
        // The last chunk: an empty trailer section follows.
        char *end = memmem(c->buf + at, c->len - at, "\r\n", 2);
        if (end == NULL) {
          at -= eol - p + 2;
          break;
        }
        at = end - c->buf + 2;
        done = 1;
      }
    } else {  // UNTIL_CLOSE: the body ends with the connection
      body_bytes(c, p, n, t);
      at += n;
      break;
    }
  }
  memmove(c->buf, c->buf + at, c->len - at);
  c->len -= at;
  return done;
}

int main(int argc, char **argv) {
  if (argc != 9) {
    fprintf(stderr, "usage: open-loop PORT REQUEST_FILE RATE WARMUP_S DURATION_S MAX_IN_FLIGHT TIMEOUT_MS STREAM\n");
    return 2;
  }
  int port = atoi(argv[1]);
  FILE *f = fopen(argv[2], "rb");
  if (f == NULL) {
    perror(argv[2]);
    return 2;
  }
  static char request[1 << 20];
  size_t request_len = fread(request, 1, sizeof request, f);
  int longer = fgetc(f) != EOF;
  fclose(f);
  if (longer) {
    fprintf(stderr, "open-loop: the request is over %zu bytes\n", sizeof request);
    return 2;
  }
  double rate = atof(argv[3]), warmup = atof(argv[4]), duration = atof(argv[5]);
  int max_conns = atoi(argv[6]);
  double timeout_us = atof(argv[7]) * 1000;
  int stream = atoi(argv[8]);
  if (port <= 0 || rate <= 0 || max_conns <= 0 || request_len == 0) {
    fprintf(stderr, "open-loop: bad arguments\n");
    return 2;
  }
  long warm = (long)(rate * warmup + 0.5), total = warm + (long)(rate * duration + 0.5);
  double period = 1e6 / rate;
  struct conn *conns = calloc(max_conns, sizeof *conns);
  double *samples = malloc(sizeof(double) * 3 * (total - warm + 1));
  if (conns == NULL || samples == NULL) return 2;
  for (int i = 0; i < max_conns; i++) conns[i].fd = -1;
  struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons(port)};
  inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr);
  int ep = epoll_create1(0);
  long next = 0, in_flight = 0, dropped = 0, recorded = 0;
  double start = now_us(), record_start = 0, record_end = 0;
  double hard_stop = start + (warmup + duration) * 1e6 + timeout_us;
  struct epoll_event events[64];

  while (next < total || in_flight > 0) {
    double t = now_us();
    if (t > hard_stop) break;
    // Send every request that is due.
    while (next < total && start + next * period <= t) {
      if (next == warm) record_start = t;
      struct conn *c = NULL;
      int refused = 0;
      for (int i = 0; i < max_conns && c == NULL; i++)
        if (conns[i].state == IDLE) c = &conns[i];
      for (int i = 0; i < max_conns && c == NULL; i++)
        if (conns[i].state == FREE) {
          int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
          int one = 1;
          setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
          if (connect(fd, (struct sockaddr *)&addr, sizeof addr) != 0 && errno != EINPROGRESS) {
            fail(next, warm, "connect: %s", strerror(errno));
            close(fd);
            refused = 1;
            break;
          }
          c = &conns[i];
          c->fd = fd;
          c->state = CONNECTING;
          struct epoll_event ev = {.events = EPOLLIN | EPOLLOUT, .data.ptr = c};
          epoll_ctl(ep, EPOLL_CTL_ADD, c->fd, &ev);
        }
      if (c == NULL) {
        // Every connection busy: the request is dropped, counted (a refused connect is an error).
        if (!refused && next >= warm) dropped++;
        if (++next == total) record_end = now_us();
        continue;
      }
      c->index = next;
      c->sent = now_us();
      c->first = 0;
      c->close_after = 0;
      c->tail_len = 0;
      c->len = 0;
      c->lag = c->sent - (start + next * period);
      if (c->state == IDLE) {
        // Small requests go out whole on a connected socket with room.
        ssize_t w = write(c->fd, request, request_len);
        if (w != (ssize_t)request_len) {
          fail(next, warm, "write: %s", w < 0 ? strerror(errno) : "the request did not fit the socket buffer");
          drop(c, ep);
        } else {
          c->state = HEAD;
          in_flight++;
        }
      } else {
        in_flight++;  // sent once connected
      }
      if (++next == total) record_end = now_us();
    }
    // Requests past their timeout fail, and their connections close.
    for (int i = 0; i < max_conns; i++) {
      struct conn *c = &conns[i];
      if (c->state != FREE && c->state != IDLE && t - c->sent > timeout_us) {
        fail(c->index, warm, "timeout after %.0f ms", timeout_us / 1000);
        drop(c, ep);
        in_flight--;
      }
    }
    double wake = next < total ? start + next * period : t + 1000;
    for (int i = 0; i < max_conns; i++)
      if (conns[i].state != FREE && conns[i].state != IDLE && conns[i].sent + timeout_us < wake) wake = conns[i].sent + timeout_us;
    double wait = wake - now_us();
    if (wait < 0) wait = 0;
    struct timespec timeout = {.tv_sec = (time_t)(wait / 1e6), .tv_nsec = (long)((wait - (time_t)(wait / 1e6) * 1e6) * 1e3)};
    int n = epoll_pwait2(ep, events, 64, &timeout, NULL);
    if (n < 0) {
      if (errno == EINTR) continue;
      // ENOSYS: a kernel before 5.11.
      perror("open-loop: epoll_pwait2");
      return 2;
    }
    double arrived = now_us();
    for (int e = 0; e < n; e++) {
      struct conn *c = events[e].data.ptr;
      if (c->state == CONNECTING) {
        int err = 0;
        socklen_t len = sizeof err;
        getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &len);
        ssize_t w = err == 0 ? write(c->fd, request, request_len) : -1;
        if (w != (ssize_t)request_len) {
          fail(c->index, warm, "%s: %s", err != 0 ? "connect" : "write", err != 0 ? strerror(err) : w < 0 ? strerror(errno) : "the request did not fit the socket buffer");
          drop(c, ep);
          in_flight--;
          continue;
        }
        c->state = HEAD;
        struct epoll_event ev = {.events = EPOLLIN, .data.ptr = c};
        epoll_ctl(ep, EPOLL_CTL_MOD, c->fd, &ev);
        continue;
      }
      for (;;) {
        ssize_t r = read(c->fd, c->buf + c->len, sizeof c->buf - c->len);
        if (r < 0 && (errno == EAGAIN || errno == EINTR)) break;
        if (r <= 0) {
          // Closed by the target: the end of a reply without a length, else a failure (a reset
          // ends no reply).
          if (r == 0 && c->state == UNTIL_CLOSE) goto complete;
          if (c->state != IDLE) {
            fail(c->index, warm, "connection closed mid-reply");
            in_flight--;
          }
          drop(c, ep);
          break;
        }
        c->len += r;
        int done = parse(c, arrived);
        if (done < 0 || (done == 0 && c->len == sizeof c->buf)) {
          fail(c->index, warm, "malformed reply");
          drop(c, ep);
          in_flight--;
          break;
        }
        if (done == 0) continue;
      complete:
        in_flight--;
        if (c->index >= warm) {
          if (c->status != 200) fail(c->index, warm, "status %d", c->status);
          else if (stream && memmem(c->tail, c->tail_len, "[DONE]", 6) == NULL) fail(c->index, warm, "stream ended without [DONE]");
          else {
            ok++;
            samples[3 * recorded] = arrived - c->sent;
            samples[3 * recorded + 1] = (c->first != 0 ? c->first : arrived) - c->sent;
            samples[3 * recorded + 2] = c->lag;
            recorded++;
          }
        }
        if (c->state == UNTIL_CLOSE || c->close_after) drop(c, ep);
        else c->state = IDLE;
        break;
      }
    }
  }
  if (record_end == 0) record_end = now_us();
  long scheduled = total - warm;
  // Whatever is still outstanding at the hard stop counts as failed.
  long unanswered = (next > warm ? next - warm : 0) - ok - errors - dropped;
  if (unanswered > 0) {
    errors += unanswered;
    if (first_error[0] == '\0') snprintf(first_error, sizeof first_error, "%ld requests unanswered at the hard stop", unanswered);
  }
  printf("%ld %ld %ld %ld %.0f\n%s\n", scheduled, ok, errors, dropped, record_start > 0 ? record_end - record_start : 0, first_error);
  for (long i = 0; i < recorded; i++) printf("%.1f %.1f %.1f\n", samples[3 * i], samples[3 * i + 1], samples[3 * i + 2]);
  return 0;
}
