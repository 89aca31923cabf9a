/* data.c: where the installed data lives (api_data_path), and the
 * api_error helpers every file of src/api/ uses.
 *
 * The data (rules/default.rules, costdb/<device>.tsv) is looked up, in
 * order, in $SUPEROPT_DATA, then relative to the file that holds this code
 * (the shared library, or the program it is linked into): ../share/superopt
 * (an installed prefix: bin/ or lib/ beside share/) and share/superopt (the
 * build tree, where CMake links share/superopt/rules and costdb to the
 * source tree), then
 * the same two relative to the running program (/proc/self/exe), when that
 * differs. No path of the machine that built it is compiled in. */
#define _GNU_SOURCE /* dladdr */
#include <dlfcn.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "api_int.h"

api_code api_fail(api_error *err, api_code code, const char *fmt, ...) {
  if (err) {
    va_list ap;
    va_start(ap, fmt);
    err->code = code;
    vsnprintf(err->message, sizeof err->message, fmt, ap);
    va_end(ap);
  }
  return code;
}

api_code api_fail_diag(api_error *err, const base_diag *d) {
  api_code c = d->code == BASE_ERR_NOMEM || d->code == BASE_ERR_INTERNAL
                   ? API_ERR_INTERNAL
                   : API_ERR_INPUT;
  if (d->file[0] && d->line)
    return api_fail(err, c, "%s:%d:%d: %s", d->file, d->line, d->col, d->msg);
  if (d->file[0])
    return api_fail(err, c, "%s: %s", d->file, d->msg);
  return api_fail(err, c, "%s", d->msg);
}

api_code api_ok(api_error *err) {
  if (err) {
    err->code = API_OK;
    err->message[0] = '\0';
  }
  return API_OK;
}

/* The folder of the file at path (resolved), into dir; 0 if none. */
static int folder_of(const char *path, char *dir, size_t n) {
  char real[PATH_MAX];
  if (!path || !realpath(path, real))
    return 0;
  char *slash = strrchr(real, '/');
  if (!slash)
    return 0;
  *slash = '\0';
  snprintf(dir, n, "%s", real[0] ? real : "/");
  return 1;
}

/* Tries dir/rel: copies it to buf and returns 1 when it exists; else
 * appends it to the list of places tried. */
static int try_path(const char *dir, const char *sub, const char *rel,
                    char *buf, size_t n, char *tried, size_t tn) {
  char p[PATH_MAX + 64];
  struct stat sb;
  snprintf(p, sizeof p, "%s%s/%s", dir, sub, rel);
  if (stat(p, &sb) == 0) {
    if (strlen(p) >= n)
      return 0;
    memcpy(buf, p, strlen(p) + 1);
    return 1;
  }
  size_t len = strlen(tried); /* appended as far as it fits */
  const char *part[2] = {len ? ", " : "", p};
  for (int i = 0; i < 2; i++)
    for (const char *c = part[i]; *c && len + 1 < tn; c++)
      tried[len++] = *c;
  tried[len] = '\0';
  return 0;
}

api_code api_data_path(const char *rel, char *buf, size_t n, api_error *err) {
  static const char *const subs[] = {"/../share/superopt", "/share/superopt"};
  char tried[3072] = "", self[PATH_MAX], exe[PATH_MAX];
  const char *env = getenv("SUPEROPT_DATA");
  if (!rel || !buf || !n)
    return api_fail(err, API_ERR_USAGE, "api_data_path: NULL argument");
  if (env && *env && try_path(env, "", rel, buf, n, tried, sizeof tried))
    return api_ok(err);
  Dl_info info;
  int have_self = dladdr((void *)api_data_path, &info) &&
                  folder_of(info.dli_fname, self, sizeof self);
  int have_exe = folder_of("/proc/self/exe", exe, sizeof exe) &&
                 !(have_self && !strcmp(exe, self));
  for (int k = 0; k < 2; k++)
    if (have_self && try_path(self, subs[k], rel, buf, n, tried, sizeof tried))
      return api_ok(err);
  for (int k = 0; k < 2; k++)
    if (have_exe && try_path(exe, subs[k], rel, buf, n, tried, sizeof tried))
      return api_ok(err);
  return api_fail(err, API_ERR_INPUT,
                  "data file '%s' not found; looked in: %s (set "
                  "SUPEROPT_DATA to the folder holding rules/ and costdb/)",
                  rel, tried[0] ? tried : "(nowhere)");
}
