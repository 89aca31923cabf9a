/* base.h: what every module shares and nothing else: the arena that owns a
 * graph's memory, error statuses and diagnostics (file:line:col), growable
 * text buffers, whole-file reads and atomic writes, a monotonic clock, and
 * the heap allocator every module uses (with its fault-injection switch).
 *
 * Depends on nothing of superopt's. Library functions never exit or print:
 * they return a base_status and fill a base_diag that the caller prints.
 */
#ifndef SUPEROPT_BASE_H
#define SUPEROPT_BASE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* ---- heap allocation --------------------------------------------------- */

/* malloc, calloc, realloc and strdup for all of superopt (release with
 * free). Nothing else in src/ calls libc's allocators: scripts/check-alloc
 * enforces it, so the switch below reaches every allocation we own. */
void *base_malloc(size_t n);
void *base_calloc(size_t n, size_t size);
void *base_realloc(void *p, size_t n);
char *base_strdup(const char *s);

/* The allocator hooks for libraries that take one (protobuf-c's
 * ProtobufCAllocator: {base_hook_alloc, base_hook_free, &failed}): they
 * allocate through base_malloc and set *(int *)data to 1 when an allocation
 * failed, so a caller can tell "out of memory" from "malformed input". */
void *base_hook_alloc(void *data, size_t n);
void base_hook_free(void *data, void *p);

/* Fault injection for tests: the nth allocation from now (1-based) fails
 * once, returning NULL; n <= 0 turns the switch off. Thread-safe. */
void base_alloc_fail_at(long n);
/* Sets the switch from $SUPEROPT_FAIL_ALLOC (a positive integer; the CLI
 * calls this once at start-up); returns it, or 0 when unset. With
 * $SUPEROPT_FAIL_ALLOC_TRACE set too, the failing allocation prints its
 * call stack to stderr (glibc). */
long base_alloc_fail_from_env(void);
/* Allocations made since the switch was set (counted only while it is on):
 * a run whose count stays below n never reached the failure. */
long base_alloc_count(void);

/* The allocator of one copy of this module. A shared object that links its
 * own copy of libsuperopt (the GPU executor, libsuperopt_gpu.so) is handed
 * the host's by its loader (src/gpu/lazy.c): after base_alloc_use_host(a)
 * this copy's base_malloc, base_calloc and base_realloc are a's, so the
 * host's counter and failure switch ($SUPEROPT_FAIL_ALLOC) see them. Call
 * it before the copy allocates anything; memory is released with free
 * either way (one libc). */
typedef struct base_allocator {
  void *(*malloc_fn)(size_t n);
  void *(*calloc_fn)(size_t n, size_t size);
  void *(*realloc_fn)(void *p, size_t n);
} base_allocator;
/* This copy's allocator (base_malloc, base_calloc, base_realloc). */
const base_allocator *base_alloc_host(void);
void base_alloc_use_host(const base_allocator *a);

/* ---- arena ------------------------------------------------------------- */

typedef struct base_arena base_arena;
base_arena *base_arena_new(void);
/* An arena whose first block holds `first` bytes of allocations (each
 * rounded up to 16): one malloc for a graph whose size is known. */
base_arena *base_arena_new_sized(size_t first);
void *base_arena_alloc(base_arena *a,
                       size_t n); /* zeroed, 16-aligned; NULL on OOM */
char *base_arena_strndup(base_arena *a, const char *s, size_t n);
void base_arena_free(base_arena *a); /* frees everything allocated from a */

/* ---- diagnostics ------------------------------------------------------- */

typedef enum base_status {
  BASE_OK = 0,
  BASE_ERR_SYNTAX,        /* malformed text */
  BASE_ERR_UNKNOWN_OP,    /* no such operator */
  BASE_ERR_UNKNOWN_PARAM, /* operator has no such parameter */
  BASE_ERR_PARAM,         /* missing or invalid parameter value */
  BASE_ERR_ARITY,         /* wrong number of inputs */
  BASE_ERR_SHAPE,     /* shape rule rejected the inputs / annotation differs */
  BASE_ERR_UNDEFINED, /* name used but never defined */
  BASE_ERR_DUPLICATE, /* name defined twice */
  BASE_ERR_CYCLE,     /* dependency cycle */
  BASE_ERR_NO_OUTPUT, /* graph declares no output */
  BASE_ERR_IO,        /* cannot read / write a file */
  BASE_ERR_NOMEM,     /* out of memory */
  BASE_ERR_INTERNAL,  /* a bug: an invariant does not hold */
  /* stopped on request (an interrupt flag) */
  BASE_ERR_INTERRUPTED
} base_status;

/* An error with its position in the user's input (line/col 1-based; 0 when
 * there is no position). src holds the offending source line, if known. */
typedef struct base_diag {
  base_status code;
  char file[256];
  int line, col;
  char msg[512];
  char src[256];
} base_diag;

/* Sets d (if non-NULL) and returns code. */
base_status base_diag_set(base_diag *d, base_status code, int line, int col,
                          const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
/* Prints "file:line:col: error: msg", the source line and a caret. */
void base_diag_print(const base_diag *d, FILE *f);
const char *base_status_name(base_status s);

/* ---- text buffers ------------------------------------------------------ */

/* A growable text buffer: s is NUL-terminated (or NULL while empty); oom
 * set on allocation failure, after which appends do nothing. Zero-init it;
 * free(b.s) when done. */
typedef struct base_buf {
  char *s;
  size_t len, cap;
  int oom;
} base_buf;
void base_buf_put(base_buf *b, const char *s, size_t n);
void base_buf_puts(base_buf *b, const char *s);
void base_buf_printf(base_buf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* ---- a set of 64-bit hashes (u64set.c) -------------------------------- */

typedef struct base_u64set {
  uint64_t *slot; /* cap slots, 0 empty (a hash 0 is stored as 1) */
  int n, cap;
} base_u64set;
/* Adds h: 1 if new, 0 if already there, -1 out of memory (the set as it
 * was). The table starts at first_cap slots (a power of two) and doubles
 * when half full. */
int base_u64set_add(base_u64set *s, uint64_t h, int first_cap);
void base_u64set_clear(base_u64set *s); /* empty, its table kept */
void base_u64set_free(base_u64set *s);  /* empty, its table freed */

/* ---- files ------------------------------------------------------------- */

#define BASE_MAX_INPUT_DEFAULT ((size_t)1 << 30) /* 1 GiB */
#define BASE_PIPE_WAIT_DEFAULT 30                /* seconds */

/* Reads a whole file, device or pipe; malloc'd, NUL-terminated, *len set.
 * NULL + d on error, also for input past the limit (base_set_max_input)
 * and for a pipe or FIFO silent for base_set_pipe_wait seconds. */
char *base_read_file(const char *path, size_t *len, base_diag *d);
/* The input size limit of base_read_file, in bytes (process-wide). */
void base_set_max_input(size_t bytes);
size_t base_max_input(void);
/* How long base_read_file waits for a pipe's data (seconds; <= 0: ever). */
void base_set_pipe_wait(int seconds);
/* Writes len bytes to path atomically: a new or regular file (also behind
 * symlinks) is replaced by rename; a character device or FIFO is written in
 * place; anything else is refused. */
base_status base_write_atomic(const char *path, const char *data, size_t len,
                              base_diag *d);
/* b's text written to path as base_write_atomic writes it; an out-of-memory
 * buffer (b->oom) writes nothing and fails with BASE_ERR_NOMEM. */
base_status base_buf_write(const base_buf *b, const char *path, base_diag *d);
/* Writes several files as one unit (a graph and its weights). Each path's
 * symlinks are followed; every destination must be absent or a regular file,
 * else nothing is written. Each part with data goes to a temporary file
 * beside its destination (fsync'd); then, under an exclusive flock of the
 * first destination's directory (base_lock_dir) and with SIGINT, SIGTERM and
 * SIGHUP held back, the temporaries replace the destinations in the order
 * given, and a part without data (data NULL) removes its destination if it
 * exists. So concurrent units to one place are serialised, an interrupt
 * leaves the old files or the new ones, and only a SIGKILL or power loss
 * between two renames leaves a mix, which the files' contents must let a
 * reader detect. Nothing is changed when the error comes before the first
 * rename (the checks are all done before it). */
#define BASE_UNIT_MAX 4
typedef struct base_file_part {
  const char *path;
  const char *data; /* NULL: remove path */
  size_t len;
} base_file_part;
base_status base_write_unit(const base_file_part *parts, int n, base_diag *d);
/* path with its symlinks followed (the last one too, even when its target
 * does not exist yet): where a write to path lands. */
base_status base_resolve_out(const char *path, char *out, size_t n,
                             base_diag *d);
/* Locks the directory holding path (flock, shared or exclusive; waits):
 * the descriptor to give to base_unlock_dir, or -1 where it cannot lock
 * (then nothing is held and the caller goes on). */
int base_lock_dir(const char *path, int exclusive);
void base_unlock_dir(int fd);
/* For a signal handler: 1 (and the signal kept, raised once they are
 * done) while a unit's renames run, else 0. Async-signal-safe. */
int base_file_defer(int sig);
/* Removes the temporary file of a base_write_atomic in progress, if any.
 * Async-signal-safe: for signal handlers (base_signals_install). */
void base_file_abort(void);

/* ---- signals ----------------------------------------------------------- */

/* SIGINT, SIGTERM and SIGHUP (unless ignored when the process started)
 * remove base_write_atomic's temporary file, then end the process by the
 * same signal (status 128 + signal: 130, 143, 129). Old files stay. */
void base_signals_install(void);

/* Crashes inside a library that cannot report running out of memory (Z3
 * aborts on C++ exceptions it does not catch and crashes on some failed
 * allocations). While a guarded section is open in any thread, SIGSEGV,
 * SIGBUS, SIGFPE and SIGABRT, and exit() called from inside the library, end
 * the process with status 3 and "superopt: error: NAME crashed (SIGNAL);
 * most likely out of memory" (base_file_abort's cleanup first). Sections do
 * nothing until base_crash_guard_enable (the CLI calls it; a process that
 * loads the library keeps its own handlers); the handlers are installed
 * only while a section is open. */
void base_crash_guard_enable(void);
void base_guard_enter(const char *name);
void base_guard_leave(void);

/* ---- protobuf ---------------------------------------------------------- */

struct ProtobufCMessageDescriptor;
/* Refuses (BASE_ERR_SYNTAX + d) a message of type desc in data[0..len) whose
 * submessages nest deeper than max_depth (at most 255), before protobuf-c's
 * recursive unpacking could overflow the stack on it. Iterative; malformed
 * input passes, for protobuf-c to reject. */
base_status base_pb_check_depth(const struct ProtobufCMessageDescriptor *desc,
                                const uint8_t *data, size_t len, int max_depth,
                                base_diag *d);

/* ---- clock and memory -------------------------------------------------- */

/* Seconds on a monotonic clock (for elapsed times and progress). */
double base_now(void);
/* Peak resident set size of this process so far, in MiB. */
double base_peak_rss_mib(void);

#endif
