/*
** store_vfs.c -- the file layer under the store: SQLite's default "unix" VFS with one change,
** a WAL frame is written with one system call instead of two.
**
** SQLite (3.40, walWriteOneFrame) appends each frame of the WAL as two writes: the 24-byte
** frame header, then the page right after it. A judging run commits a few frames per call, so
** half of the run's pwrite64 calls were 24-byte headers (issue 17 point 5). This VFS,
** "arbiter-unix", holds such a header in the file object and hands it to the unix VFS together
** with the page that follows it, as one write of 24 + page size bytes.
**
** Why this is safe (a reader, in this process or another, never sees a state SQLite itself
** would not have produced, and no failure goes unreported):
**   - Only an appended frame header is held: a write of exactly 24 bytes to a WAL file at or
**     beyond the end of everything this handle wrote since it last wrote the WAL header. Such
**     a write comes only from walWriteOneFrame, whose very next operation is the write of the
**     page at the offset just after the header (or nothing, when the header write failed,
**     and a held write never fails). The headers walRewriteChecksums rewrites in place lie
**     below that end and go straight through, as does everything else.
**   - Whatever else happens to the file first writes what is held: a read, a write that does
**     not continue it, sync, truncate, file size, lock, unlock, reserved-lock check, file
**     control, sector size, device characteristics, fetch, close. So the file never differs
**     from the unix VFS's file when anyone (SQLite itself included) looks at it.
**   - Before SQLite publishes frames to other connections it updates the wal-index header in
**     shared memory with a memory barrier (xShmBarrier on the database file) between its two
**     copies; the database file's barrier first writes what its WAL holds. By the argument
**     above nothing is held there, but the barrier does not rely on it.
**   - The held bytes reach the file in the same order and at the same offsets as the unix VFS
**     would write them, only one system call later; a write SQLite believes done is in the
**     file before any other operation on it. A crash (kill -9) can lose only a held header
**     whose page had not been written either: a torn last frame, which SQLite's recovery
**     already discards by its checksum, as it does when the process dies between its two
**     writes.
**   - A failed combined write returns the unix VFS's error to the page write that asked for
**     it, which fails the transaction as a failed page write does. A flush that fails in an
**     operation that can report it returns the error; the barrier, which cannot, makes every
**     later operation on the WAL fail with SQLITE_IOERR_WRITE.
** Files other than a main database and its WAL are opened by the unix VFS itself, unwrapped.
*/
#include "store_internal.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define WAL_FRAME_HEADER 24
#define WAL_FILE_HEADER 32

typedef struct vfs_file vfs_file;
struct vfs_file {
    sqlite3_file base;     /* pMethods = &vfs_methods */
    sqlite3_file *real;    /* the unix VFS's file, in the memory right after this struct */
    int is_wal;
    const char *name;      /* the database name pointer SQLite passed to xOpen (main db) */
    vfs_file *wal;         /* main db: its open WAL file, if any (for the barrier) */
    vfs_file *db;          /* WAL: its main database file, if open */
    vfs_file *next_db;     /* list of open main databases */
    /* WAL: the held frame header, and the end of what this handle appended. */
    sqlite3_int64 held_offset;
    int held_len;
    int sticky_error;      /* a flush that could not report its failure (barrier) */
    sqlite3_int64 append_end;
    unsigned char held[WAL_FRAME_HEADER];
    unsigned char *joined; /* buffer for header + page */
    int joined_cap;
};

static sqlite3_vfs vfs;
static sqlite3_vfs *unix_vfs;
static pthread_mutex_t open_dbs_lock = PTHREAD_MUTEX_INITIALIZER;
static vfs_file *open_dbs;

/* Writes what is held, if anything. SQLITE_OK or the unix VFS's error. */
static int flush_held(vfs_file *f)
{
    if (f->sticky_error) return f->sticky_error;
    if (!f->held_len) return SQLITE_OK;
    int len = f->held_len;
    f->held_len = 0;
    return f->real->pMethods->xWrite(f->real, f->held, len, f->held_offset);
}

static int f_close(sqlite3_file *file)
{
    vfs_file *f = (vfs_file *)file;
    int rc = flush_held(f);
    pthread_mutex_lock(&open_dbs_lock);
    if (f->is_wal) {
        if (f->db && f->db->wal == f) f->db->wal = NULL;
    } else {
        for (vfs_file **p = &open_dbs; *p; p = &(*p)->next_db)
            if (*p == f) {
                *p = f->next_db;
                break;
            }
        if (f->wal) f->wal->db = NULL;
    }
    pthread_mutex_unlock(&open_dbs_lock);
    free(f->joined);
    int rc_close = f->real->pMethods->xClose(f->real);
    return rc != SQLITE_OK ? rc : rc_close;
}

static int f_read(sqlite3_file *file, void *buf, int amount, sqlite3_int64 offset)
{
    vfs_file *f = (vfs_file *)file;
    int rc = flush_held(f);
    if (rc != SQLITE_OK) return rc;
    return f->real->pMethods->xRead(f->real, buf, amount, offset);
}

static int f_write(sqlite3_file *file, const void *buf, int amount, sqlite3_int64 offset)
{
    vfs_file *f = (vfs_file *)file;
    if (!f->is_wal) return f->real->pMethods->xWrite(f->real, buf, amount, offset);
    if (f->sticky_error) return f->sticky_error;
    if (offset == 0 && amount == WAL_FILE_HEADER) f->append_end = 0; /* a new WAL begins */
    int appended = offset >= f->append_end;
    if (offset + amount > f->append_end) f->append_end = offset + amount;

    if (f->held_len && offset == f->held_offset + f->held_len) {
        /* The page after the held header: both in one write. */
        int total = f->held_len + amount;
        if (total > f->joined_cap) {
            unsigned char *grown = realloc(f->joined, (size_t)total);
            if (!grown) {
                int rc = flush_held(f);
                if (rc != SQLITE_OK) return rc;
                return f->real->pMethods->xWrite(f->real, buf, amount, offset);
            }
            f->joined = grown;
            f->joined_cap = total;
        }
        memcpy(f->joined, f->held, (size_t)f->held_len);
        memcpy(f->joined + f->held_len, buf, (size_t)amount);
        sqlite3_int64 at = f->held_offset;
        f->held_len = 0;
        return f->real->pMethods->xWrite(f->real, f->joined, total, at);
    }
    int rc = flush_held(f);
    if (rc != SQLITE_OK) return rc;
    if (amount == WAL_FRAME_HEADER && appended) {
        /* An appended frame header (see the file comment): held for its page. */
        memcpy(f->held, buf, WAL_FRAME_HEADER);
        f->held_offset = offset;
        f->held_len = WAL_FRAME_HEADER;
        return SQLITE_OK;
    }
    return f->real->pMethods->xWrite(f->real, buf, amount, offset);
}

static int f_truncate(sqlite3_file *file, sqlite3_int64 size)
{
    vfs_file *f = (vfs_file *)file;
    int rc = flush_held(f);
    if (rc != SQLITE_OK) return rc;
    if (f->append_end > size) f->append_end = size;
    return f->real->pMethods->xTruncate(f->real, size);
}

/* The methods that only pass the call on, once what is held is written. */
#define FLUSH_THEN(call)                                                                    \
    vfs_file *f = (vfs_file *)file;                                                         \
    int rc = flush_held(f);                                                                 \
    if (rc != SQLITE_OK) return rc;                                                         \
    return f->real->pMethods->call

static int f_sync(sqlite3_file *file, int flags) { FLUSH_THEN(xSync(f->real, flags)); }
static int f_file_size(sqlite3_file *file, sqlite3_int64 *size)
{
    FLUSH_THEN(xFileSize(f->real, size));
}
static int f_lock(sqlite3_file *file, int level) { FLUSH_THEN(xLock(f->real, level)); }
static int f_unlock(sqlite3_file *file, int level) { FLUSH_THEN(xUnlock(f->real, level)); }
static int f_check_reserved(sqlite3_file *file, int *out)
{
    FLUSH_THEN(xCheckReservedLock(f->real, out));
}
static int f_file_control(sqlite3_file *file, int op, void *arg)
{
    FLUSH_THEN(xFileControl(f->real, op, arg));
}
static int f_fetch(sqlite3_file *file, sqlite3_int64 offset, int amount, void **out)
{
    *out = NULL;
    FLUSH_THEN(xFetch(f->real, offset, amount, out));
}
static int f_unfetch(sqlite3_file *file, sqlite3_int64 offset, void *page)
{
    FLUSH_THEN(xUnfetch(f->real, offset, page));
}
static int f_sector_size(sqlite3_file *file)
{
    vfs_file *f = (vfs_file *)file;
    (void)flush_held(f); /* nothing can be held here; a failure stays for the next write */
    return f->real->pMethods->xSectorSize(f->real);
}
static int f_device_characteristics(sqlite3_file *file)
{
    vfs_file *f = (vfs_file *)file;
    (void)flush_held(f);
    return f->real->pMethods->xDeviceCharacteristics(f->real);
}
static int f_shm_map(sqlite3_file *file, int page, int page_size, int extend, void volatile **out)
{
    vfs_file *f = (vfs_file *)file;
    return f->real->pMethods->xShmMap(f->real, page, page_size, extend, out);
}
static int f_shm_lock(sqlite3_file *file, int offset, int n, int flags)
{
    vfs_file *f = (vfs_file *)file;
    return f->real->pMethods->xShmLock(f->real, offset, n, flags);
}
/* Frames are published to other connections across this barrier: the WAL's held bytes go
** first. */
static void f_shm_barrier(sqlite3_file *file)
{
    vfs_file *f = (vfs_file *)file;
    vfs_file *wal = f->wal;
    if (wal && wal->held_len) {
        int rc = flush_held(wal);
        if (rc != SQLITE_OK) wal->sticky_error = SQLITE_IOERR_WRITE;
    }
    f->real->pMethods->xShmBarrier(f->real);
}
static int f_shm_unmap(sqlite3_file *file, int delete_flag)
{
    vfs_file *f = (vfs_file *)file;
    return f->real->pMethods->xShmUnmap(f->real, delete_flag);
}

static const sqlite3_io_methods vfs_methods = {
    3,           f_close,          f_read,          f_write,
    f_truncate,  f_sync,           f_file_size,     f_lock,
    f_unlock,    f_check_reserved, f_file_control,  f_sector_size,
    f_device_characteristics,      f_shm_map,       f_shm_lock,
    f_shm_barrier,                 f_shm_unmap,     f_fetch,
    f_unfetch,
};

static int vfs_open(sqlite3_vfs *self, sqlite3_filename name, sqlite3_file *file, int flags,
                    int *out_flags)
{
    (void)self;
    int wrapped = (flags & (SQLITE_OPEN_MAIN_DB | SQLITE_OPEN_WAL)) && name;
    if (!wrapped) return unix_vfs->xOpen(unix_vfs, name, file, flags, out_flags);

    vfs_file *f = (vfs_file *)file;
    memset(f, 0, sizeof *f);
    f->real = (sqlite3_file *)(f + 1);
    int rc = unix_vfs->xOpen(unix_vfs, name, f->real, flags, out_flags);
    if (rc != SQLITE_OK) {
        /* SQLite does not close a file whose open failed: the unix VFS cleaned up. */
        f->base.pMethods = NULL;
        return rc;
    }
    if (!f->real->pMethods || f->real->pMethods->iVersion < 3) {
        /* Not the unix VFS's files as known (3.40 has version 3): give it back unwrapped. */
        if (f->real->pMethods) f->real->pMethods->xClose(f->real);
        f->base.pMethods = NULL;
        return SQLITE_CANTOPEN;
    }
    f->base.pMethods = &vfs_methods;
    f->is_wal = (flags & SQLITE_OPEN_WAL) != 0;
    pthread_mutex_lock(&open_dbs_lock);
    if (f->is_wal) {
        /* The WAL's name lives in the same allocation as its database's name: SQLite gives
        ** the database's pointer back, the one its xOpen received. */
        const char *db_name = sqlite3_filename_database(name);
        for (vfs_file *d = open_dbs; d; d = d->next_db)
            if (d->name == db_name) {
                d->wal = f;
                f->db = d;
                break;
            }
    } else {
        f->name = name;
        f->next_db = open_dbs;
        open_dbs = f;
    }
    pthread_mutex_unlock(&open_dbs_lock);
    return SQLITE_OK;
}

static pthread_once_t vfs_once = PTHREAD_ONCE_INIT;
static int vfs_registered;

static void register_vfs(void)
{
    unix_vfs = sqlite3_vfs_find("unix");
    if (!unix_vfs) return;
    vfs = *unix_vfs;
    vfs.szOsFile = (int)sizeof(vfs_file) + unix_vfs->szOsFile;
    vfs.pNext = NULL;
    vfs.zName = ARB__STORE_VFS;
    vfs.xOpen = vfs_open;
    vfs_registered = sqlite3_vfs_register(&vfs, 0) == SQLITE_OK;
}

/* The name of the VFS to open stores with: ARB__STORE_VFS once it is registered, NULL (SQLite's
** default) when it could not be. */
const char *arb__store_vfs(void)
{
    pthread_once(&vfs_once, register_vfs);
    return vfs_registered ? ARB__STORE_VFS : NULL;
}
