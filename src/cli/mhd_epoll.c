/* mhd_epoll.c — graphgate's epoll_wait, which libmicrohttpd's calls reach before libc's.
 *
 * libmicrohttpd's epoll loop (MHD_epoll in daemon.c: 0.9.75, Debian 12's, and still 1.0.1)
 * drains the kernel's ready list in rounds of MAX_EVENTS (128) and calls epoll_wait again
 * while a round comes back full, each time with the timeout it computed before the first
 * round. When the ready events were an exact multiple of 128, the round after the last full
 * one finds nothing and sleeps that whole timeout (the connection timeout, or forever),
 * while the connections the full rounds marked ready wait, unread, in the daemon's eready
 * list. Seen here: 256 keep-alive connections on one worker, each with its next request
 * unread in the socket and marked READ_READY and in eready by libmicrohttpd, the worker in
 * epoll_wait for 60 s (bench/gateway/keepalive_stall.sh, about 1 run in 30).
 *
 * The fix is at the one seam that is ours: a symbol the executable defines is found first by
 * the dynamic linker, so libmicrohttpd's epoll_wait calls land here. A call on the epoll
 * descriptor whose previous round, on this thread, came back full does not wait: it returns
 * what is ready now, possibly nothing, which ends libmicrohttpd's drain and lets it process
 * the connections. Any other call waits as asked (an event loop may always see a round end
 * early). Linked into the graphgate binary only (not a library: the symbol is libc's name).
 *
 * Thread rules: the state is one int per thread (an epoll descriptor is waited on by the
 * thread that runs its loop). */
#include <stddef.h>
#include <sys/epoll.h>

/* the epoll descriptor whose last round on this thread filled the caller's array, or -1 */
static _Thread_local int full_round_epfd = -1;

int epoll_wait(int epfd, struct epoll_event *events, int maxevents, int timeout) {
    if (epfd == full_round_epfd) timeout = 0;
    int n = epoll_pwait(epfd, events, maxevents, timeout, NULL);
    full_round_epfd = n > 0 && n == maxevents ? epfd : -1;
    return n;
}
