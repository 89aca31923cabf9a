/* test_base.c: the base module's policies (docs/reliability.md): the input
 * size limit, a signal in the middle of an atomic write (the temporary file
 * removed, the old file kept, death by the signal), and the protobuf
 * nesting bound. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/base.h"

static char dir[] = "/tmp/superopt_base_XXXXXX";

static void setup(void) { cr_assert(mkdtemp(dir)); }
static void teardown(void) {
  char cmd[64];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  cr_assert_eq(system(cmd), 0);
}

TestSuite(base, .init = setup, .fini = teardown);

static void put(const char *path, const char *text) {
  base_diag d;
  cr_assert_eq(base_write_atomic(path, text, strlen(text), &d), BASE_OK, "%s",
               d.msg);
}

/* Whether dir holds a file whose name contains ".tmp.". */
static int has_tmp(void) {
  DIR *dp = opendir(dir);
  struct dirent *e;
  int found = 0;
  while (dp && (e = readdir(dp)))
    found |= strstr(e->d_name, ".tmp.") != NULL;
  if (dp)
    closedir(dp);
  return found;
}

Test(base, input_limit) {
  char path[128];
  snprintf(path, sizeof path, "%s/ten", dir);
  put(path, "0123456789");
  size_t len;
  base_diag d;
  size_t old = base_max_input();
  base_set_max_input(10);
  char *s = base_read_file(path, &len, &d);
  cr_assert(s && len == 10);
  free(s);
  base_set_max_input(9);
  cr_assert_null(base_read_file(path, &len, &d));
  cr_assert(strstr(d.msg, "larger than the input limit of 9 bytes"), "%s",
            d.msg);
  base_set_max_input(5000); /* a device: read up to the limit, no further */
  cr_assert_null(base_read_file("/dev/zero", &len, &d));
  cr_assert(strstr(d.msg, "'/dev/zero' is larger than the input limit"));
  base_set_max_input(old);
}

/* SIGTERM while a 64 MiB file is being written over an old one: the
 * process dies by SIGTERM, the old file stays, no temporary file is left. */
Test(base, signal_mid_write_keeps_old_file) {
  char path[128];
  snprintf(path, sizeof path, "%s/out", dir);
  put(path, "old\n");
  pid_t pid = fork();
  cr_assert(pid >= 0);
  if (pid == 0) {
    base_signals_install();
    size_t n = (size_t)64 << 20;
    char *big = malloc(n);
    if (!big)
      _exit(3);
    memset(big, 'x', n);
    for (;;) /* until the signal comes */
      base_write_atomic(path, big, n, NULL);
  }
  struct timespec half_ms = {0, 500000};
  for (int i = 0; i < 20000 && !has_tmp(); i++)
    nanosleep(&half_ms, NULL);
  kill(pid, SIGTERM);
  int ws;
  cr_assert_eq(waitpid(pid, &ws, 0), pid);
  cr_assert(WIFSIGNALED(ws) && WTERMSIG(ws) == SIGTERM, "status %x", ws);
  cr_assert(!has_tmp(), "temporary file left behind");
  size_t len;
  base_diag d;
  char *s = base_read_file(path, &len, &d);
  cr_assert(s);
  /* the old file, or (had a whole write won the race) the new one */
  cr_assert(!strcmp(s, "old\n") || len == (size_t)64 << 20);
  free(s);
}

Test(base, write_through_links_and_devices) {
  char target[128], link[128];
  snprintf(target, sizeof target, "%s/target", dir);
  snprintf(link, sizeof link, "%s/link", dir);
  put(target, "old\n");
  cr_assert_eq(symlink("target", link), 0);
  put(link, "new\n");
  size_t len;
  base_diag d;
  char *s = base_read_file(target, &len, &d);
  cr_assert_str_eq(s, "new\n");
  free(s);
  char buf[8];
  cr_assert_gt(readlink(link, buf, sizeof buf), 0, "the link was replaced");
  put("/dev/null", "into the void\n");
  cr_assert_neq(base_write_atomic(dir, "x", 1, &d), BASE_OK);
  cr_assert(strstr(d.msg, "it is a directory"), "%s", d.msg);
}

/* A host allocator for base_alloc_use_host: counts, and fails when told. */
static int host_calls, host_fail;
static void *host_malloc(size_t n) {
  host_calls++;
  return host_fail ? NULL : malloc(n);
}
static void *host_calloc(size_t n, size_t size) {
  host_calls++;
  return host_fail ? NULL : calloc(n, size);
}
static void *host_realloc(void *p, size_t n) {
  host_calls++;
  return host_fail ? NULL : realloc(p, n);
}

/* What the GPU executor's copy of libsuperopt does (gpu_attach_host): its
 * allocations go to the host's allocator, failures included; handing a
 * copy its own allocator is no loop. */
Test(base, allocator_handed_to_a_copy) {
  static const base_allocator h = {host_malloc, host_calloc, host_realloc};
  base_alloc_use_host(&h);
  void *p = base_malloc(8), *q = base_calloc(2, 4);
  p = base_realloc(p, 16);
  char *s = base_strdup("abc");
  cr_expect_eq(host_calls, 4);
  host_fail = 1;
  cr_expect_null(base_malloc(8), "the host's failure is this copy's");
  host_fail = 0;
  base_alloc_use_host(base_alloc_host()); /* back to its own */
  free(base_malloc(8));
  cr_expect_eq(host_calls, 5);
  free(p), free(q), free(s);
}

/* base_buf_write: the buffer's text, atomically; a buffer that ran out of
 * memory fails with BASE_ERR_NOMEM and leaves the old file as it was. */
Test(base, buf_write_refuses_an_oom_buffer) {
  char path[128];
  snprintf(path, sizeof path, "%s/b.txt", dir);
  base_buf b = {0};
  base_buf_printf(&b, "one %d\n", 1);
  base_diag d;
  cr_assert_eq(base_buf_write(&b, path, &d), BASE_OK, "%s", d.msg);
  b.oom = 1;
  cr_assert_eq(base_buf_write(&b, path, &d), BASE_ERR_NOMEM);
  cr_assert(strstr(d.msg, "out of memory"), "%s", d.msg);
  size_t len;
  char *t = base_read_file(path, &len, &d);
  cr_assert_str_eq(t, "one 1\n");
  cr_assert(!has_tmp());
  free(t);
  free(b.s);
}

/* base_u64set: a hash 0 is the hash 1 (0 marks an empty slot), the table
 * grows past half full keeping every member, clear keeps the table, and
 * out of memory while growing leaves the set as it was. */
Test(base, u64set_members_growth_and_oom) {
  base_u64set s = {0};
  cr_assert_eq(base_u64set_add(&s, 0, 4), 1);
  cr_assert_eq(base_u64set_add(&s, 1, 4), 0, "0 and 1 are one member");
  for (uint64_t h = 2; h < 100; h++)
    cr_assert_eq(base_u64set_add(&s, h * 0x9e3779b97f4a7c15ULL, 4), 1);
  cr_assert_eq(s.n, 99);
  cr_assert_leq(2 * s.n, s.cap);
  for (uint64_t h = 2; h < 100; h++)
    cr_assert_eq(base_u64set_add(&s, h * 0x9e3779b97f4a7c15ULL, 4), 0);
  while (2 * (s.n + 1) <= s.cap) /* fill to the next growth */
    cr_assert_eq(base_u64set_add(&s, (uint64_t)(s.n + 1000), 4), 1);
  int n = s.n, cap = s.cap;
  base_alloc_fail_at(1);
  cr_assert_eq(base_u64set_add(&s, 7777777, 4), -1);
  base_alloc_fail_at(0);
  cr_assert_eq(s.n, n);
  cr_assert_eq(s.cap, cap);
  cr_assert_eq(base_u64set_add(&s, 1, 4), 0, "members kept");
  cap = s.cap; /* that add grew the table (growth comes before the probe) */
  base_u64set_clear(&s);
  cr_assert_eq(s.n, 0);
  cr_assert_eq(s.cap, cap);
  cr_assert_eq(base_u64set_add(&s, 1, 4), 1);
  base_u64set_free(&s);
  cr_assert_null(s.slot);
}
