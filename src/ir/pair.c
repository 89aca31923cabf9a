/* pair.c: a .graph file and its safetensors sidecar, written and read as
 * one unit (docs/reliability.md, "A graph and its weights").
 *
 * Writing: the sidecar (which records the hash of the graph's canonical
 * text, weights.c) and the graph go through base_write_unit: both checked
 * before anything is written, both written to temporaries, then renamed
 * sidecar first, graph second, under a directory lock with interrupts held
 * back. A SIGKILL between the renames leaves the old graph with the new
 * sidecar, whose hash the reader refuses; the other order could leave the
 * new graph with an old sidecar that has no hash, which would load. When
 * there are no values, the graph is renamed first and a stale sidecar
 * removed second: a kill between leaves the new graph with the old sidecar,
 * refused by its hash (or, for an old sidecar without one, loaded as before
 * this change).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ir_int.h"

#define PATH_CAP 4096

/* Device or FIFO destinations: the graph only; values are refused. */
static base_status save_special(const char *path, const char *text, int nw,
                                base_diag *d) {
  if (nw)
    return base_diag_set(
        d, BASE_ERR_IO, 0, 0,
        "cannot write '%s': it is a device or pipe, and the graph's %d "
        "weight%s with values need a sidecar file beside a regular file; "
        "write to a file, or drop the values (--drop-weights); nothing was "
        "written",
        path, nw, nw == 1 ? "" : "s");
  return base_write_atomic(path, text, strlen(text), d);
}

/* /dev/... and /proc/...: /dev/stdout may lead to a regular file (stdout
 * redirected), but no sidecar is ever made in, or beside, those. */
static int system_path(const char *path) {
  return !strncmp(path, "/dev/", 5) || !strncmp(path, "/proc/", 6);
}

base_status ir_save(const ir_graph *g, const char *path, int with_weights,
                    base_diag *d) {
  int nw = with_weights ? ir_weights_count(g) : 0;
  char *text = ir_print(g), *side_bytes = NULL, real[PATH_CAP],
       side[PATH_CAP + 16];
  size_t side_len = 0;
  struct stat sb;
  base_status st =
      text ? BASE_OK : base_diag_set(d, BASE_ERR_NOMEM, 0, 0, "out of memory");
  if (!st && ((stat(path, &sb) == 0 &&
               (S_ISCHR(sb.st_mode) || S_ISFIFO(sb.st_mode))) ||
              system_path(path))) {
    st = save_special(path, text, nw, d);
    free(text);
    return st;
  }
  if (!st)
    st = base_resolve_out(path, real, sizeof real, d);
  if (!st && nw)
    st = ir_weights_encode(g, &side_bytes, &side_len, d);
  if (!st) {
    ir_weights_path(real, side, sizeof side);
    base_file_part graph = {real, text, strlen(text)};
    base_file_part sc = {side, side_bytes, side_len};
    base_file_part parts[2];
    parts[0] = nw ? sc : graph;
    parts[1] = nw ? graph : sc;
    st = base_write_unit(parts, 2, d);
  }
  free(side_bytes);
  free(text);
  return st;
}

/* The sidecar of path: beside the file its symlinks lead to, else (an
 * older layout) beside path itself; "" when neither exists. */
static void find_sidecar(const char *path, char *side, size_t n) {
  char real[PATH_CAP];
  base_diag ignore;
  if (!base_resolve_out(path, real, sizeof real, &ignore)) {
    ir_weights_path(real, side, n);
    if (ir_weights_exists(side))
      return;
  }
  ir_weights_path(path, side, n);
  if (!ir_weights_exists(side))
    side[0] = '\0';
}

ir_graph *ir_load(const char *path, base_diag *d) {
  char side[PATH_CAP + 16], real[PATH_CAP];
  base_diag ignore;
  /* not between a writer's renames: the lock of the real file's directory */
  int lock = base_lock_dir(
      base_resolve_out(path, real, sizeof real, &ignore) ? path : real, 0);
  size_t len;
  char *text = base_read_file(path, &len, d);
  ir_graph *g = text ? ir_parse(text, len, path, d) : NULL;
  if (g) {
    find_sidecar(path, side, sizeof side);
    if (side[0] && ir_weights_read_for(g, side, text, len, d)) {
      ir_graph_free(g);
      g = NULL;
    }
  }
  free(text);
  base_unlock_dir(lock);
  return g;
}
