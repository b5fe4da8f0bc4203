/* tiny_http.h — the small HTTP server the mcp check programs run their clients against
 * (included by one .c file each, not a library): a listening socket on 127.0.0.1 and a
 * thread that accepts one request a connection, reads it whole (its head and a
 * Content-Length body) and hands it, with the connection, to the test's answer function;
 * the connection is closed when that returns.
 *
 * Ownership: the test owns the tiny_http (on its stack); tiny_http_stop ends the thread,
 * which may be inside the answer function until its connection ends. The answer function
 * runs on that thread: what it shares with the test goes under the test's own lock. */
#ifndef GG_TESTS_MCP_TINY_HTTP_H
#define GG_TESTS_MCP_TINY_HTTP_H

#include <arpa/inet.h>
#include <check.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

/* One request on connection conn: head is its head without the blank line ("" when the
 * client closed before the head ended), body its body's bytes as read (NULL, 0: none). */
typedef void tiny_http_answer(void *user, int conn, const char *head, const char *body, size_t len);

typedef struct tiny_http {
    int fd;
    pthread_t th;
    tiny_http_answer *answer;
    void *user;
    char url[96]; /* http://127.0.0.1:PORT/path */
} tiny_http;

/* Read one request from conn into buf (size bytes) and answer it. */
static void tiny_http_serve(tiny_http *t, int conn, char *buf, size_t size) {
    size_t n = 0, want = 0;
    char *end = NULL;
    for (ssize_t k; n < size - 1 && (k = read(conn, buf + n, size - 1 - n)) > 0;) {
        n += (size_t)k;
        if (!end && (end = memmem(buf, n, "\r\n\r\n", 4))) {
            *end = '\0';
            char *cl = strcasestr(buf, "content-length:");
            want = cl ? (size_t)atol(cl + 15) : 0;
        }
        if (end && n - (size_t)(end + 4 - buf) >= want) break;
    }
    buf[n] = '\0';
    size_t got = end ? n - (size_t)(end + 4 - buf) : 0;
    if (got > want) got = want;
    t->answer(t->user, conn, end ? buf : "", got ? end + 4 : NULL, got);
}

static void *tiny_http_run(void *arg) {
    tiny_http *t = arg;
    char *buf = malloc(65536);
    if (!buf) return NULL;
    for (int s; (s = accept(t->fd, NULL, NULL)) >= 0; close(s)) tiny_http_serve(t, s, buf, 65536);
    free(buf);
    return NULL;
}

/* Listen on a free port of 127.0.0.1 (url: that port and path) and start answering. */
static inline void tiny_http_start(tiny_http *t, const char *path, tiny_http_answer *answer, void *user) {
    memset(t, 0, sizeof *t);
    t->answer = answer;
    t->user = user;
    t->fd = socket(AF_INET, SOCK_STREAM, 0);
    ck_assert_int_ge(t->fd, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    ck_assert_int_eq(bind(t->fd, (struct sockaddr *)&a, sizeof a), 0);
    ck_assert_int_eq(listen(t->fd, 16), 0);
    ck_assert_int_eq(getsockname(t->fd, (struct sockaddr *)&a, &len), 0);
    snprintf(t->url, sizeof t->url, "http://127.0.0.1:%u%s", (unsigned)ntohs(a.sin_port), path);
    ck_assert_int_eq(pthread_create(&t->th, NULL, tiny_http_run, t), 0);
}

/* Stop accepting and wait for the thread (and an answer in progress) to end. */
static inline void tiny_http_stop(tiny_http *t) {
    shutdown(t->fd, SHUT_RDWR);
    close(t->fd);
    pthread_join(t->th, NULL);
}

#endif
