/* journal.c — the history's redo log on SQLite: "answered means recorded" without waiting
 * for a commit.
 *
 * A durable call used to wait for the group commit of its record (suspend the connection,
 * wait the commit window and the transaction, resume): about a quarter of the call's CPU
 * and most of its latency. Instead the submitting thread copies the record into this log
 * and answers at once; the history writer still commits it to SQLite in large batches.
 *
 * The log is a shared memory mapping of a preallocated file: a store into it is in the
 * kernel's page cache at once, no system call per record, and survives a crash of the
 * process exactly as a write(2) or a SQLite WAL commit with synchronous=NORMAL does (the
 * guarantee of the durable mode). The file is allocated in full before it is mapped
 * (posix_fallocate), so a full disk refuses a segment up front instead of faulting a store
 * (SIGBUS). At the next start every entry still in the log is written to the database (an
 * upsert: entries already there change nothing) before anything else.
 *
 * Layout: a directory beside the database holding numbered segment files of SEGMENT_MAX
 * bytes (8-byte magic, then entries [u32 length][u32 checksum of the payload][payload], then
 * zeros; the checksum is FNV-1a over 8-byte words, sum_words, since GGHJ0003: bytewise
 * FNV-1a, still read in GGHJ0002 segments, was a serial multiply per byte, about 1 µs a
 * call) and a lock file that one process holds (flock) while it appends. Appends are
 * serialized, so only the last entry can be cut short by a crash, and its caller was never
 * answered: a zero length or a checksum that does not match ends a segment's replay. Once
 * the writer has committed everything, the current segment is cleared (zeroed back to its
 * header); a segment left behind by a writer that fell far behind is removed once the
 * writer reaches the next. When no segment can be allocated (a full disk) appends fail, so
 * durable answers wait for their commit again, and an append retries once a second.
 *
 * Thread model: append/release/close are serialized by the journal's own mutex; the payload
 * format belongs to the caller (history.c). */
#include "store/store_internal.h"

#include <stdatomic.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <unistd.h>

#define MAGIC "GGHJ0003"
#define MAGIC_V2 "GGHJ0002" /* bytewise FNV-1a: replayed, never written */
#define MAGIC_LEN 8
#define SEGMENT_MAX (2u << 20) /* ~4,000 records of a small graph; allocated in full */
#define RETRY_MS 1000.0         /* after a segment could not be allocated (a full disk) */
#define HDR 8

struct gg_history_journal {
    pthread_mutex_t mu;
    char *dir;
    int lock_fd;
    unsigned char *map;           /* the current segment, SEGMENT_MAX bytes, shared */
    unsigned first, cur;          /* oldest segment still on disk, the one appended to */
    unsigned replay_end;          /* segments < replay_end existed at open */
    size_t size;                  /* bytes used in the current segment */
    unsigned long long appended;  /* entries appended so far (entry numbers start at 1) */
    unsigned long long cur_first; /* number of the current segment's first entry */
    _Atomic bool broken;          /* no segment could be made: appends wait for retry_at */
    double retry_at;              /* monotonic ms */
};

/* broken is read without the mutex (gg_history_journal_usable, per call) */
static void set_broken(gg_history_journal *j) { atomic_store_explicit(&j->broken, true, memory_order_relaxed); }

static uint32_t fnv1a(uint32_t h, const unsigned char *p, size_t n) {
    for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 16777619u;
    return h;
}

/* FNV-1a over 8-byte words, then the tail bytes, folded to 32 bits: one multiply per 8
 * bytes. The segments are read back on the machine that wrote them (native byte order). */
static uint32_t sum_words(const unsigned char *p, size_t n) {
    uint64_t h = 14695981039346656037ULL;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, p + i, 8);
        h = (h ^ w) * 1099511628211ULL;
    }
    for (; i < n; i++) h = (h ^ p[i]) * 1099511628211ULL;
    return (uint32_t)(h ^ (h >> 32));
}

static void seg_path(const gg_history_journal *j, unsigned seg, char *out, size_t size) {
    snprintf(out, size, "%s/%010u.hj", j->dir, seg);
}

/* Create segment seg, allocated in full, map it and make it current (caller holds mu or is
 * alone). */
static bool seg_open(gg_history_journal *j, unsigned seg, gg_error *err) {
    char path[4200];
    seg_path(j, seg, path, sizeof path);
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    int rc = fd < 0 ? errno : posix_fallocate(fd, 0, SEGMENT_MAX);
    void *map = rc ? MAP_FAILED : mmap(NULL, SEGMENT_MAX, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (map == MAP_FAILED) {
        gg_error_set(err, "db", "history journal %s: %s", path, strerror(rc ? rc : errno));
        if (fd >= 0) { close(fd); unlink(path); }
        return false;
    }
    close(fd); /* the mapping keeps the file */
    if (j->map) munmap(j->map, SEGMENT_MAX);
    j->map = map;
    memcpy(j->map, MAGIC, MAGIC_LEN);
    j->cur = seg;
    j->size = MAGIC_LEN;
    j->cur_first = j->appended + 1;
    return true;
}

/* The numbers of the segments in dir: lowest and one past the highest (0, 0 when none). */
static void seg_range(const char *dir, unsigned *lo, unsigned *hi) {
    *lo = *hi = 0;
    DIR *d = opendir(dir);
    if (!d) return;
    bool any = false;
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        unsigned n;
        char tail[8];
        if (sscanf(e->d_name, "%10u.%3s", &n, tail) != 2 || strcmp(tail, "hj") != 0) continue;
        if (!any || n < *lo) *lo = n;
        if (!any || n + 1 > *hi) *hi = n + 1;
        any = true;
    }
    closedir(d);
}

gg_history_journal *gg_history_journal_open(const char *dir, gg_error *err) {
    if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
        gg_error_set(err, "db", "history journal %s: %s", dir, strerror(errno));
        return NULL;
    }
    gg_history_journal *j = calloc(1, sizeof *j);
    if (!j || !(j->dir = strdup(dir))) {
        free(j);
        gg_error_set(err, "oom", "out of memory");
        return NULL;
    }
    char path[4200];
    snprintf(path, sizeof path, "%s/lock", dir);
    j->lock_fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (j->lock_fd < 0 || flock(j->lock_fd, LOCK_EX | LOCK_NB) != 0) {
        bool busy = j->lock_fd >= 0 && errno == EWOULDBLOCK;
        gg_error_set(err, busy ? "busy" : "db", "history journal %s: %s", dir,
                     busy ? "held by another graphgate process" : strerror(errno));
        if (j->lock_fd >= 0) close(j->lock_fd);
        free(j->dir);
        free(j);
        return NULL;
    }
    pthread_mutex_init(&j->mu, NULL);
    seg_range(dir, &j->first, &j->replay_end);
    if (!seg_open(j, j->replay_end, err)) {
        gg_history_journal_close(j, false);
        return NULL;
    }
    if (j->replay_end == j->first) j->first = j->cur; /* nothing to replay */
    return j;
}

/* Replay one segment file; false on a read error. Counts entries and torn tails. */
static bool replay_file(const char *path, gg_history_journal_fn fn, void *user, long long *n, long long *torn,
                        gg_error *err) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        gg_error_set(err, "db", "history journal %s: %s", path, strerror(errno));
        return false;
    }
    char magic[MAGIC_LEN];
    bool ok = true;
    unsigned char *buf = NULL;
    size_t cap = 0;
    bool v2 = false;
    if (fread(magic, 1, MAGIC_LEN, f) == MAGIC_LEN &&
        (memcmp(magic, MAGIC, MAGIC_LEN) == 0 || (v2 = memcmp(magic, MAGIC_V2, MAGIC_LEN) == 0))) {
        for (;;) {
            uint32_t hdr[2];
            size_t got = fread(hdr, 1, sizeof hdr, f);
            if (got == 0 || (got == sizeof hdr && hdr[0] == 0)) break; /* the end of what was appended */
            if (got != sizeof hdr || hdr[0] > SEGMENT_MAX) { (*torn)++; break; }
            if (hdr[0] > cap) {
                unsigned char *nb = realloc(buf, hdr[0]);
                if (!nb) { gg_error_set(err, "oom", "out of memory"); ok = false; break; }
                buf = nb;
                cap = hdr[0];
            }
            if (fread(buf, 1, hdr[0], f) != hdr[0] ||
                (v2 ? fnv1a(2166136261u, buf, hdr[0]) : sum_words(buf, hdr[0])) != hdr[1]) {
                (*torn)++;
                break;
            }
            if (!fn(user, buf, hdr[0])) { gg_error_set(err, "db", "history journal %s: an entry cannot be read back", path); ok = false; break; }
            (*n)++;
        }
    }
    free(buf);
    fclose(f);
    return ok;
}

long long gg_history_journal_replay(gg_history_journal *j, gg_history_journal_fn fn, void *user, long long *torn, gg_error *err) {
    long long n = 0;
    *torn = 0;
    for (unsigned seg = j->first; seg < j->replay_end; seg++) {
        char path[4200];
        seg_path(j, seg, path, sizeof path);
        if (access(path, F_OK) != 0) continue;
        if (!replay_file(path, fn, user, &n, torn, err)) return -1;
    }
    return n;
}

void gg_history_journal_drop_replayed(gg_history_journal *j) {
    pthread_mutex_lock(&j->mu);
    for (; j->first < j->replay_end; j->first++) {
        char path[4200];
        seg_path(j, j->first, path, sizeof path);
        unlink(path);
    }
    j->first = j->cur;
    pthread_mutex_unlock(&j->mu);
}

unsigned long long gg_history_journal_append(gg_history_journal *j, const struct iovec *parts, int n_parts) {
    uint32_t hdr[2] = {0, 0};
    size_t len = 0;
    for (int i = 0; i < n_parts; i++) len += parts[i].iov_len;
    if (len == 0 || len > SEGMENT_MAX - MAGIC_LEN - HDR) return 0; /* such a record waits for its commit */
    hdr[0] = (uint32_t)len;
    unsigned long long no = 0;
    pthread_mutex_lock(&j->mu);
    bool broken = atomic_load_explicit(&j->broken, memory_order_relaxed);
    if ((broken && gg_now_ms() >= j->retry_at) || (!broken && j->size + HDR + len > SEGMENT_MAX)) {
        gg_error err = GG_ERROR_INIT;
        if (seg_open(j, j->cur + 1, &err)) {
            if (broken) gg_log(GG_LOG_WARN, "history journal: segments can be allocated again", NULL);
            atomic_store_explicit(&j->broken, false, memory_order_relaxed);
        } else { /* a full disk: until a retry succeeds, durable answers wait for commits */
            if (!broken)
                gg_log(GG_LOG_ERROR, "history journal: no new segment, durable answers wait for commits", "error",
                       err.message, NULL);
            set_broken(j);
            j->retry_at = gg_now_ms() + RETRY_MS;
        }
        gg_error_clear(&err);
    }
    if (!atomic_load_explicit(&j->broken, memory_order_relaxed)) {
        unsigned char *p = j->map + j->size;
        memcpy(p + HDR, parts[0].iov_base, parts[0].iov_len);
        size_t off = HDR + parts[0].iov_len;
        for (int i = 1; i < n_parts; i++) {
            memcpy(p + off, parts[i].iov_base, parts[i].iov_len);
            off += parts[i].iov_len;
        }
        hdr[1] = sum_words(p + HDR, len); /* over the copy: one contiguous run of bytes */
        memcpy(p, hdr, HDR); /* last: a zero length until the entry is whole */
        j->size += HDR + len;
        no = ++j->appended;
    }
    pthread_mutex_unlock(&j->mu);
    return no;
}

void gg_history_journal_release(gg_history_journal *j, unsigned long long upto) {
    pthread_mutex_lock(&j->mu);
    /* Entry upto is in the current segment: every older one is committed. (Older segments'
     * boundaries are not kept: they go once the writer reaches the current one, which it
     * does within a batch or two of a switch.) */
    unsigned keep = upto >= j->cur_first ? j->cur : j->first;
    for (; j->first < keep; j->first++) {
        char path[4200];
        seg_path(j, j->first, path, sizeof path);
        unlink(path);
    }
    /* caught up: the current segment holds nothing uncommitted; cleared so a restart finds
     * nothing to write again (zeroing costs what the appends cost, once) */
    if (upto == j->appended && j->size > MAGIC_LEN) {
        memset(j->map + MAGIC_LEN, 0, j->size - MAGIC_LEN);
        j->size = MAGIC_LEN;
    }
    pthread_mutex_unlock(&j->mu);
}

bool gg_history_journal_usable(gg_history_journal *j) {
    return j && !atomic_load_explicit(&j->broken, memory_order_relaxed);
}

void gg_history_journal_close(gg_history_journal *j, bool all_committed) {
    if (!j) return;
    if (j->map) munmap(j->map, SEGMENT_MAX);
    if (all_committed) {
        unsigned lo, hi;
        seg_range(j->dir, &lo, &hi);
        for (unsigned seg = lo; seg < hi; seg++) {
            char path[4200];
            seg_path(j, seg, path, sizeof path);
            unlink(path);
        }
    }
    if (j->lock_fd >= 0) close(j->lock_fd); /* releases the flock */
    pthread_mutex_destroy(&j->mu);
    free(j->dir);
    free(j);
}
