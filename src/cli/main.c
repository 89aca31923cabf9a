/* main.c: the superopt command-line tool.
 *
 *   superopt <command> [options]
 *
 * Each command is a row of the table below: its name, a one-line summary,
 * its usage text and the function that runs it. Exit codes: 0 ok, 1 usage
 * error, 2 bad input, 3 internal error (see README.md).
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const cli_command commands[] = {
    {"run", "execute a graph and print its outputs' checksums and time",
     "usage: superopt run GRAPH|MODEL.onnx [--device cpu|cuda] [--seed S] "
     "[--threads N] [--iters K] [--warmup W] [--batch N] [--check] "
     "[--fp32-strict] [--profile] [--dump DIR]\n"
     "\n"
     "Runs GRAPH (a .graph file) on seeded random inputs and weights and\n"
     "prints each output's shape and checksums and the run time.\n"
     "\n"
     "  --device D    where to run: cpu (default) or cuda (CUDA builds)\n"
     "  --seed S      seed of the random inputs and weights (default 1)\n"
     "  --threads N   CPU threads (default: all cores)\n"
     "  --iters K     time K runs and report the median (default 1)\n"
     "  --batch N     rescale the batch (dim 0 of the inputs) to N\n"
     "  --dump DIR    write inputs, weights and outputs as DIR/*.npy and\n"
     "                DIR/manifest.tsv (kind, name, file), for checks\n"
     "                against other runtimes (cpu)\n"
     "\n"
     "With --device cuda (docs/cuda.md):\n"
     "  --warmup W    untimed runs before timing (default 10)\n"
     "  --check       compare every output with the CPU reference executor\n"
     "                (relative L2 error <= 1e-3 with TF32, 1e-5 strict)\n"
     "  --fp32-strict no TF32 in convolutions and matmuls\n"
     "  --profile     per-operator time breakdown and the 10 slowest nodes\n"
     "  --poison      debug: fill every released buffer with NaN\n"
     "  --no-fuse     run a relu after conv/matmul/add/... as its own kernel\n"
     "  --legacy-conv legacy cuDNN convolution algorithms only\n",
     cli_run},
    {"check", "parse and shape-check a graph, report its operator counts",
     "usage: superopt check GRAPH...\n"
     "\n"
     "Parses each GRAPH, checks every shape, and prints its operator counts,\n"
     "inputs, weights, parameter count and structural hash.\n",
     cli_check},
    {"print", "print a graph in canonical form",
     "usage: superopt print GRAPH [-o OUT]\n"
     "\n"
     "Parses GRAPH and prints it in canonical .graph form to standard output\n"
     "or, with -o, atomically to OUT.\n",
     cli_print},
    {"import", "import an ONNX model as a .graph",
     "usage: superopt import MODEL.onnx [-o OUT.graph] [--input-shape "
     "NAME=1x3x224x224]...\n"
     "\n"
     "Converts an ONNX model to a .graph (to standard output, or atomically\n"
     "to OUT). Weights without values (graph inputs that only feed parameter\n"
     "slots) become weights with seeded random values when run.\n"
     "\n"
     "  -o, --output OUT      write the graph here\n"
     "  --input-shape N=DIMS  the shape of input N where the model leaves it\n"
     "                        dynamic (repeatable)\n"
     "\n"
     "Supported ONNX operators: see docs/onnx.md.\n",
     cli_import},
    {"export", "export a graph as an ONNX model",
     "usage: superopt export GRAPH -o OUT.onnx\n"
     "\n"
     "Writes GRAPH as an ONNX model (opset 17), atomically. Weights with\n"
     "values become initializers; weights without stay graph inputs.\n",
     cli_export},
};

#define NCOMMANDS (int)(sizeof commands / sizeof *commands)

static void usage(FILE *f) {
  fprintf(f, "usage: superopt <command> [options]\n\ncommands:\n");
  for (int i = 0; i < NCOMMANDS; i++)
    fprintf(f, "  %-8s %s\n", commands[i].name, commands[i].summary);
  fprintf(f,
          "\nRun 'superopt <command> --help' for a command's options.\n"
          "Exit status: 0 ok, 1 usage error, 2 bad input, 3 internal error.\n");
}

const cli_command *cli_find(const char *name) {
  for (int i = 0; i < NCOMMANDS; i++)
    if (strcmp(commands[i].name, name) == 0)
      return &commands[i];
  return NULL;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    usage(stderr);
    return CLI_USAGE;
  }
  if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") ||
      !strcmp(argv[1], "help")) {
    if (argc > 2 && cli_find(argv[2])) {
      fputs(cli_find(argv[2])->usage, stdout);
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
      fputs(c->usage, stdout);
      return CLI_OK;
    }
  return c->run(c, argc - 1, argv + 1);
}
