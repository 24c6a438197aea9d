/*
** test_store_vfs.c -- the store's VFS (store_vfs.c): a WAL frame is written with one system
** call, and the WAL it writes is what SQLite's own would be: read correctly by another
** process (through SQLite's default VFS) while it is written, and recovered after kill -9 of
** the writer, including the transactions that spill and rewrite their own frames.
*/
#include "test_sql.h"
#include "testutil.h"

#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

typedef struct fixture {
    char dir[256];
    char db[300];
} fixture;

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    if (!f || arb_test_make_dir("vfs", f->dir, sizeof f->dir)) {
        free(f);
        return -1;
    }
    snprintf(f->db, sizeof f->db, "%s/arbiter.db", f->dir);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    arb_test_remove_dir(f->dir);
    free(f);
    return 0;
}

/* Write system calls of this process so far (syscw of /proc/self/io: write, pwrite64,
** writev...), or -1 when the kernel does not tell. */
static long long write_syscalls(void)
{
    FILE *io = fopen("/proc/self/io", "r");
    if (!io) return -1;
    char line[128];
    long long n = -1;
    while (fgets(line, sizeof line, io))
        if (sscanf(line, "syscw: %lld", &n) == 1) break;
    fclose(io);
    return n;
}

static long long file_size(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0 ? (long long)sb.st_size : -1;
}

static arb_store *open_ok(const char *path)
{
    arb_store *s = NULL;
    arb_status st = arb_store_open(path, &s);
    if (st) fprintf(stderr, "open %s: %s\n", path, arb_store_errmsg(s));
    assert_int_equal(st, ARB_OK);
    return s;
}

/* 750 letters, the letter chosen by k: a row's text says which row it belongs to. */
#define FILL(k) "replace(hex(zeroblob(750)), '00', char(65 + (" k ") % 26))"
/* The same in a format of arb_test_exec_sql. */
#define FILL_FORMAT(k) "replace(hex(zeroblob(750)), '00', char(65 + (" k ") %% 26))"

static void make_tables(const char *db)
{
    arb_store *s = open_ok(db);
    assert_int_equal(arb_test_exec_sql(s, "CREATE TABLE t(k INTEGER PRIMARY KEY, v TEXT);"
                                          "CREATE TABLE n(c INTEGER); INSERT INTO n VALUES (0)"),
                     0);
    arb_store_close(s);
}

/* Each appended frame is one write: commits of one or two pages each write as many frames as
** before, in as many write system calls (SQLite's unix VFS makes two per frame). */
static void test_wal_frame_is_one_write(void **state)
{
    fixture *f = *state;
    make_tables(f->db);
    arb_store *s = open_ok(f->db);
    long long page = arb_test_query_int(s, "PRAGMA page_size");
    assert_true(page > 0);
    assert_int_equal(arb_test_exec_sql(s, "INSERT INTO t VALUES (0, 'x')"), 0); /* WAL begun */
    char wal[320];
    snprintf(wal, sizeof wal, "%s-wal", f->db);
    long long wal_before = file_size(wal), writes_before = write_syscalls();
    if (writes_before < 0) skip();
    for (int k = 1; k <= 100; k++)
        if (arb_test_exec_sql(s, "INSERT INTO t VALUES (%d, 'x')", k)) fail();
    long long writes = write_syscalls() - writes_before;
    long long frames = (file_size(wal) - wal_before) / (page + 24);
    assert_true(frames >= 100);
    /* One write per frame; no other write happens (no checkpoint: wal_autocheckpoint). */
    assert_int_equal(writes, frames);
    assert_int_equal(arb_test_query_int(s, "SELECT count(*) FROM t"), 101);
    arb_store_close(s);
}

/* The writer: transactions of 1 to 8 rows, every 7th of 300 rows in a tiny page cache (it
** spills, and rewrites frames it wrote before its commit: walRewriteChecksums), checkpoints
** every 20 pages (the WAL restarts from its start). After each commit it tells the rows
** committed so far through fd. Never returns. */
static void writer_child(const char *db, int fd)
{
    arb_store *s = NULL;
    if (arb_store_open(db, &s) ||
        arb_test_exec_sql(s, "PRAGMA wal_autocheckpoint = 20; PRAGMA cache_size = 5"))
        _exit(2);
    long long rows = 0;
    for (int txn = 0;; txn++) {
        int n = txn % 7 == 6 ? 300 : 1 + txn % 8;
        if (arb_test_exec_sql(s,
                              "BEGIN; WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i + 1 "
                              "FROM r WHERE i < %d) INSERT INTO t SELECT %lld + i, " FILL_FORMAT("%lld + i")
                              " FROM r; UPDATE n SET c = (SELECT count(*) FROM t); COMMIT",
                              n, rows, rows))
            _exit(3);
        rows += n;
        if (write(fd, &rows, sizeof rows) != (ssize_t)sizeof rows) _exit(4);
    }
}

/* One read transaction of another connection: the counter equals the rows, and every row's
** text is its own. Returns the rows seen. */
static long long check_consistent(sqlite3 *db)
{
    sqlite3_stmt *q = NULL;
    const char *sql = "SELECT (SELECT count(*) FROM t), (SELECT c FROM n), "
                      "(SELECT count(*) FROM t WHERE v IS NOT " FILL("k") ")";
    assert_int_equal(sqlite3_exec(db, "BEGIN", NULL, NULL, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &q, NULL), SQLITE_OK);
    int rc = sqlite3_step(q);
    if (rc != SQLITE_ROW) fprintf(stderr, "reader: %s\n", sqlite3_errmsg(db));
    assert_int_equal(rc, SQLITE_ROW);
    long long rows = sqlite3_column_int64(q, 0);
    assert_int_equal(sqlite3_column_int64(q, 1), rows);
    assert_int_equal(sqlite3_column_int64(q, 2), 0);
    sqlite3_finalize(q);
    assert_int_equal(sqlite3_exec(db, "COMMIT", NULL, NULL, NULL), SQLITE_OK);
    return rows;
}

/* A reader in another process, through SQLite's default VFS, sees only whole transactions
** while the store writes; after kill -9 of the writer the next open recovers the WAL from
** its frames alone (no process has it open: the wal-index is rebuilt) and holds every
** transaction the writer saw committed. */
static void test_wal_read_elsewhere_and_recovered_after_kill(void **state)
{
    fixture *f = *state;
    make_tables(f->db);
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(fds[0]);
        writer_child(f->db, fds[1]);
    }
    close(fds[1]);

    sqlite3 *reader = NULL;
    assert_int_equal(sqlite3_open_v2(f->db, &reader, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    sqlite3_busy_timeout(reader, 10000);
    long long acked = 0, seen = 0, v;
    int reads = 0, big_txns = 0;
    /* Until the writer has committed a few hundred transactions (its 300-row ones among
    ** them) and the reader has looked at least 50 times, or 60 s have passed. */
    double start = arb__now_ms();
    while (arb__now_ms() - start < 60000 && (big_txns < 20 || reads < 50)) {
        struct pollfd p = {.fd = fds[0], .events = POLLIN};
        while (poll(&p, 1, 0) > 0) {
            ssize_t n = read(fds[0], &v, sizeof v);
            assert_int_equal(n, sizeof v); /* the writer is alive */
            if (v - acked == 300) big_txns++;
            acked = v;
        }
        long long rows = check_consistent(reader);
        assert_true(rows >= seen); /* never goes back */
        seen = rows;
        reads++;
    }
    assert_true(big_txns >= 20);
    assert_int_equal(sqlite3_close(reader), SQLITE_OK);
    kill(pid, SIGKILL);
    int wstatus = 0;
    assert_int_equal(waitpid(pid, &wstatus, 0), pid);
    assert_true(WIFSIGNALED(wstatus) && WTERMSIG(wstatus) == SIGKILL);
    ssize_t n;
    while ((n = read(fds[0], &v, sizeof v)) == (ssize_t)sizeof v) acked = v;
    close(fds[0]);

    arb_store *s = open_ok(f->db);
    assert_int_equal(arb_test_query_int(s, "SELECT count(*) FROM pragma_integrity_check "
                                           "WHERE integrity_check <> 'ok'"),
                     0);
    long long rows = check_consistent(arb__store_conn(s));
    assert_true(rows >= acked);
    arb_store_close(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_wal_frame_is_one_write, setup, teardown),
        cmocka_unit_test_setup_teardown(test_wal_read_elsewhere_and_recovered_after_kill, setup,
                                        teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
