/* main.c: the superopt command-line tool.
 *
 *   superopt <command> [options]
 *
 * Each command is a cli_command (cli.h) defined beside its code: its name,
 * a one-line summary, its help text, its option table (opts.c: the parser
 * and the option list of its --help) and the function that runs it. Exit codes:
 * 0 ok, 1 usage error, 2 bad input, 3 internal error or out of memory (see
 * README.md); interrupts and limits are policy here (docs/reliability.md):
 * signals end every command the same way, --max-input-size applies to every
 * command, and standard output is checked like any file. $SUPEROPT_FAIL_ALLOC=N
 * makes the Nth allocation fail (base.h; tests).
 */
#include <errno.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../api/superopt.h"
#include "cli.h"

/* The commands, in the order `superopt --help` lists them; each is defined
 * beside its code (cmd_*.c) with its help text and option table. */
static const cli_command *const commands[] = {
    &cli_cmd_run,          &cli_cmd_check,         &cli_cmd_print,
    &cli_cmd_import,       &cli_cmd_export,        &cli_cmd_costdb,
    &cli_cmd_import_rules, &cli_cmd_export_rules,  &cli_cmd_gen_rules,
    &cli_cmd_verify_rules, &cli_cmd_compare_rules, &cli_cmd_optimize,
    &cli_cmd_experiment,   &cli_cmd_mutants,
};

#define NCOMMANDS (int)(sizeof commands / sizeof *commands)

static void usage(FILE *f) {
  fprintf(f, "usage: superopt <command> [options]\n\ncommands:\n");
  for (int i = 0; i < NCOMMANDS; i++)
    fprintf(f, "  %-12s %s\n", commands[i]->name, commands[i]->summary);
  fprintf(f,
          "\nRun 'superopt <command> --help' for a command's options;\n"
          "'superopt --version' for the version, backends and data folder\n"
          "(--version --gpu: also the CUDA libraries and GPUs).\n"
          "Every command takes --max-input-size N (bytes, or with K, M, G;\n"
          "default 1G): the largest input file it reads.\n"
          "Exit status: 0 ok, 1 usage error, 2 bad input, 3 internal error;\n"
          "killed by SIGINT 130, SIGTERM 143 (docs/reliability.md).\n");
}

const cli_command *cli_find(const char *name) {
  for (int i = 0; i < NCOMMANDS; i++)
    if (strcmp(commands[i]->name, name) == 0)
      return commands[i];
  return NULL;
}

/* With $SUPEROPT_FAIL_ALLOC=N (tests/oom.sh), says how many allocations the
 * run made: fewer than N means the injected failure was never reached. */
static void report_allocations(void) {
  fprintf(stderr, "superopt: SUPEROPT_FAIL_ALLOC: %ld allocations\n",
          base_alloc_count());
}

/* Parses a size: a count of bytes, or with a K, M or G suffix (KiB, MiB,
 * GiB); 0 if malformed or zero. */
static size_t parse_size(const char *s) {
  char *end;
  errno = 0;
  unsigned long long v = strtoull(s, &end, 10);
  int shift = *end == 'K' ? 10 : *end == 'M' ? 20 : *end == 'G' ? 30 : 0;
  if (shift)
    end++;
  if (errno || end == s || *end || s[0] == '-' || v == 0 ||
      v > (SIZE_MAX >> shift))
    return 0;
  return (size_t)v << shift;
}

/* Takes the options every command has out of argv (from argv[2] on):
 * --max-input-size N. Returns 0, or -1 after printing a usage error. */
static int global_options(int *argc, char **argv) {
  int j = 2;
  for (int i = 2; i < *argc; i++) {
    const char *v = NULL, *a = argv[i];
    if (!strcmp(a, "--max-input-size")) {
      if (i + 1 == *argc) {
        fprintf(stderr, "superopt: --max-input-size needs a value\n");
        return -1;
      }
      v = argv[++i];
    } else if (!strncmp(a, "--max-input-size=", 17)) {
      v = a + 17;
    } else {
      argv[j++] = argv[i];
      continue;
    }
    size_t n = parse_size(v);
    if (!n) {
      fprintf(stderr,
              "superopt: bad value '%s' for --max-input-size (bytes, or "
              "with K, M, G)\n",
              v);
      return -1;
    }
    base_set_max_input(n);
  }
  argv[j] = NULL;
  *argc = j;
  const char *w = getenv("SUPEROPT_PIPE_WAIT");
  if (w && *w)
    base_set_pipe_wait(atoi(w));
  return 0;
}

/* --version [--gpu]: the build and the data folder; with --gpu, the CUDA
 * executor is loaded to name its libraries, its path and the GPUs (plain
 * --version leaves it unloaded: 0.3 s and 200 MB). */
static int version(int argc, char **argv) {
  int gpu = argc == 3 && !strcmp(argv[2], "--gpu");
  if (argc > 2 && !gpu) {
    fprintf(stderr, "superopt: --version takes only --gpu, not '%s'\n",
            argv[2]);
    return CLI_USAGE;
  }
  char data[4096];
  fputs(gpu ? api_build_info() : api_build_info_brief(), stdout);
  printf("data: %s\n", api_data_path("", data, sizeof data, NULL) == API_OK
                           ? data
                           : "not found (see SUPEROPT_DATA)");
  return CLI_OK;
}

static int dispatch(int argc, char **argv) {
  if (argc < 2) {
    usage(stderr);
    return CLI_USAGE;
  }
  if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "version"))
    return version(argc, argv);
  if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") ||
      !strcmp(argv[1], "help")) {
    if (argc > 2 && cli_find(argv[2])) {
      cli_print_usage(cli_find(argv[2]), stdout);
      return CLI_OK;
    }
    usage(stdout);
    return CLI_OK;
  }
  const cli_command *c = cli_find(argv[1]);
  if (!c) {
    fprintf(stderr, "superopt: unknown command '%s'\n\n", argv[1]);
    usage(stderr);
    return CLI_USAGE;
  }
  for (int i = 2; i < argc; i++)
    if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
      cli_print_usage(c, stdout);
      return CLI_OK;
    }
  if (global_options(&argc, argv))
    return CLI_USAGE;
  return c->run(c, argc - 1, argv + 1);
}

/* Standard output is checked like any file: a write or close that failed
 * (a full disk, /dev/full, a closed pipe's EIO) is an error, not a loss. */
static int finish_stdout(int rc) {
  int bad = ferror(stdout), err = 0;
  if (fflush(stdout) != 0) /* retries what is buffered: errno says why */
    bad = 1, err = errno;
  if (fclose(stdout) != 0 && !err)
    bad = 1, err = errno;
  if (!bad)
    return rc;
  fprintf(stderr, "superopt: error: cannot write standard output%s%s\n",
          err ? ": " : "", err ? strerror(err) : "");
  return rc ? rc : CLI_BAD_INPUT;
}

/* The commands that run the CPU executor let its OpenMP threads sleep when
 * idle (OMP_WAIT_POLICY=passive) unless the variable is set. libgomp's
 * default spins an idle thread for milliseconds after each parallel region;
 * the executor opens about a thousand short regions to check BERT, so the
 * spins were over half of optimize's CPU seconds there (7.0 CPU-s, 3.0
 * passive; docs/notes/benchmarks.md) and took the cores of other processes for
 * no wall-time gain. libgomp reads the variable before main, so the process
 * runs itself again once with it set (if that fails, it goes on as it is).
 * Programs linking libsuperopt set it in their own environment. */
static void omp_passive(int argc, char **argv) {
  static const char *const heavy[] = {"optimize", "run", "experiment",
                                      "mutants"};
  if (argc < 2 || getenv("OMP_WAIT_POLICY"))
    return;
  for (size_t i = 0; i < sizeof heavy / sizeof *heavy; i++)
    if (strcmp(argv[1], heavy[i]) == 0 &&
        setenv("OMP_WAIT_POLICY", "passive", 1) == 0) {
      execv("/proc/self/exe", argv);
      return;
    }
}

int main(int argc, char **argv) {
  omp_passive(argc, argv);
  if (base_alloc_fail_from_env())
    atexit(report_allocations);
  base_signals_install();
  base_crash_guard_enable(); /* Z3's crashes when memory runs out: exit 3 */
  return finish_stdout(dispatch(argc, argv));
}
