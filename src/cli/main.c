/* main.c: the superopt command-line tool.
 *
 *   superopt <command> [options]
 *
 * Each command is a row of the table below: its name, a one-line summary,
 * its usage text and the function that runs it. Exit codes: 0 ok, 1 usage
 * error, 2 bad input, 3 internal error or out of memory (see README.md);
 * interrupts and limits are policy here (docs/reliability.md): signals end
 * every command the same way, --max-input-size applies to every command,
 * and standard output is checked like any file. $SUPEROPT_FAIL_ALLOC=N
 * makes the Nth allocation fail (base.h; tests).
 */
#include <errno.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../api/superopt.h"
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
     "  --no-fuse     no executor folds: a relu, clip, residual or bias add\n"
     "                after conv/matmul/add/... runs as its own kernel\n"
     "  --legacy-conv legacy cuDNN convolution algorithms only\n"
     "  --nchw        keep every tensor NCHW (default: convolution chains\n"
     "                run channels-last, NHWC)\n"
     "  --fast-gelu   a matmul's gelu in cuBLASLt's epilogue: its tanh\n"
     "                approximation (at most 4.7e-4 from the exact gelu)\n",
     cli_run},
    {"check", "parse and shape-check a graph, report its operator counts",
     "usage: superopt check GRAPH...\n"
     "\n"
     "Parses each GRAPH, checks every shape, and prints its operator counts,\n"
     "inputs, weights, parameter count and structural hash.\n",
     cli_check},
    {"print", "print a graph in canonical form",
     "usage: superopt print GRAPH [-o OUT] [--drop-weights]\n"
     "\n"
     "Parses GRAPH and prints it in canonical .graph form to standard output\n"
     "or, with -o, atomically to OUT (weight values to OUT's .safetensors\n"
     "sidecar). A graph with weight values is not printed to standard output\n"
     "(they would be lost) unless --drop-weights.\n",
     cli_print},
    {"import", "import an ONNX model as a .graph",
     "usage: superopt import MODEL.onnx [-o OUT.graph] [--input-shape "
     "NAME=1x3x224x224]...\n"
     "       [--drop-weights]\n"
     "\n"
     "Converts an ONNX model to a .graph (to standard output, or atomically\n"
     "to OUT) and its initializers' values to OUT's sidecar (OUT.graph ->\n"
     "OUT.safetensors, docs/graph-format.md). Weights without values (graph\n"
     "inputs that only feed parameter slots) become weights with seeded\n"
     "random values when run.\n"
     "\n"
     "  -o, --output OUT      write the graph here\n"
     "  --drop-weights        leave the weights' values out (else a model\n"
     "                        with values is not written to standard output)\n"
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
    {"costdb",
     "inspect, import, export, fit the cost database; estimate a graph",
     "usage: superopt costdb stats [--db PATH] [--device D]\n"
     "       superopt costdb import TABLE.tsv... [--db PATH]\n"
     "       superopt costdb export [--db PATH] [--device D] [-o OUT.tsv]\n"
     "       superopt costdb estimate GRAPH [--device D] [--db PATH]\n"
     "       superopt costdb measure GRAPH... [--device D] [--db PATH]\n"
     "                                [--batch N] [--tables DIR | "
     "--no-tables]\n"
     "       superopt costdb measure --signatures FILE... [--device D] "
     "[--db PATH]\n"
     "       superopt costdb fit [--device D] [--db PATH]\n"
     "\n"
     "Operator costs per device (docs/costdb.md). stats: rows per device\n"
     "(from checked-in tables vs measured locally) and an integrity check.\n"
     "import: TSV tables, all in one transaction (a bad line imports\n"
     "nothing). export: rows sorted by device and signature, to standard\n"
     "output or atomically to OUT. estimate: each operator's roofline\n"
     "estimate and measured cost, and the graph's total. measure (CUDA\n"
     "builds, on a GPU): times each distinct operator of the graphs alone\n"
     "(warm-up 5, median of 20) under the GPU's name (h100, h200) or D;\n"
     "with --signatures, the signatures listed (optimize\n"
     "--emit-signatures). fit: the per-operator cost model fitted on D's\n"
     "measured rows, its parameters and its error on rows held out of the\n"
     "fit (5-fold), next to the single scale factor it replaced.\n"
     "\n"
     "  --db PATH     the database (default $SUPEROPT_COSTDB, else\n"
     "                $XDG_CACHE_HOME/superopt/costdb.sqlite, else\n"
     "                ~/.cache/superopt/costdb.sqlite)\n"
     "  --device D    h100 (default), h200, h100-tf32, h200-tf32, cpu\n"
     "  --tables DIR  checked-in tables DIR/<device>.tsv imported on first\n"
     "                use (default: the data folder's costdb/, see\n"
     "                --version)\n"
     "  --no-tables   import no tables\n"
     "  --batch N     measure: the graphs rebatched to N first\n"
     "  -o OUT        export to OUT\n",
     cli_costdb},
    {"import-rules", "import TASO's rules (text or .pb) as a rule file",
     "usage: superopt import-rules FILE -o OUT.rules [--format "
     "taso-text|taso-pb]\n"
     "\n"
     "Reads TASO's substitutions (taso_rules.txt: one 'LHS == RHS' a line;\n"
     "graph_subst.pb: GraphSubst.RuleCollection) and writes them, unverified,\n"
     "as a rule file, atomically. The format comes from the extension (.txt,\n"
     ".pb) unless given. Prints the counts, unsupported rules by reason, to\n"
     "stderr. See docs/interop.md.\n",
     cli_import_rules},
    {"export-rules", "export proven rules as TASO .pb, Tensat text or JSON",
     "usage: superopt export-rules RULES --format "
     "taso-pb|tensat|tensat-multi|json -o OUT "
     "[--all]\n"
     "\n"
     "Writes the proven rules of RULES (every rule with --all) atomically to\n"
     "OUT as TASO's GraphSubst.RuleCollection, Tensat's rewrite text, or\n"
     "JSON. Rules the format cannot express are skipped and counted on\n"
     "stderr. See docs/interop.md.\n",
     cli_export_rules},
    {"gen-rules", "discover and prove graph substitutions (a .rules file)",
     "usage: superopt gen-rules [--max-ops N] [--ops LIST] [-o OUT.rules]\n"
     "       [--threads T] [--z3-timeout MS] [--keep-unproven] [--pairs P]\n"
     "       [--checkpoint DIR]\n"
     "\n"
     "Enumerates every graph of 1..N operators over the generation operator\n"
     "set and TASO's input pool, fingerprints them, pairs equal ones, prunes\n"
     "redundant pairs and proves the rest with Z3; writes the proven rules\n"
     "atomically, in a stable order (docs/rules-format.md). Progress and a\n"
     "summary table (counts, time, peak memory per stage) go to stderr.\n"
     "\n"
     "  --max-ops N      largest graph, in operators (1..4; 5 with --ops,\n"
     "                   or over MPI where the ranks' memory holds it;\n"
     "                   default 3)\n"
     "  --ops LIST       comma-separated operators to use (default: all of\n"
     "                   docs/generation.md)\n"
     "  -o, --output F   the rule file (default generated.rules)\n"
     "  --threads T      threads (default: all cores; under mpirun, per\n"
     "                   rank: the node's cores shared among its ranks)\n"
     "  --z3-timeout MS  per proof (default 10000)\n"
     "  --keep-unproven  also write unproven rules, marked unproven\n"
     "  --pairs P        spanning (default): only pairs that smaller rules do\n"
     "                   not imply, a minimum spanning forest of each bucket;\n"
     "                   smallest: each graph of a bucket with its smallest\n"
     "                   member; all: every pair of a bucket\n"
     "  --no-normal-form also enumerate graphs with a non-normal intermediate\n"
     "                   value (docs/generation.md; far slower)\n"
     "  --checkpoint DIR save each finished enumeration branch in DIR; a\n"
     "                   rerun with the same arguments (any rank count)\n"
     "                   loads them instead and writes the same file\n"
     "\n"
     "Under `mpirun -np N` (MPI builds) the work is spread over N processes\n"
     "and the same file is written by rank 0; a per-rank table of time and\n"
     "memory follows the summary (docs/generation.md).\n",
     cli_gen_rules},
    {"verify-rules", "re-prove every rule of a .rules file with Z3",
     "usage: superopt verify-rules RULES [-o OUT.rules] [--threads T]\n"
     "       [--z3-timeout MS]\n"
     "\n"
     "Proves each rule of RULES from the operator axioms (docs/verify.md);\n"
     "lists the rules not proven with the reason. Exit 0 when all are\n"
     "proven, 2 otherwise. -o writes the rules with their new status and\n"
     "the axioms each proof used.\n",
     cli_verify_rules},
    {"compare-rules", "how much of a reference rule set a library covers",
     "usage: superopt compare-rules REFERENCE.rules LIBRARY.rules\n"
     "       [--max-ops N] [--depth D] [--list]\n"
     "\n"
     "Counts the reference rules with both sides <= N operators (default 4)\n"
     "that LIBRARY contains up to renaming of inputs, swapping sides and\n"
     "commutative argument order, those LIBRARY's proven rules derive by at\n"
     "most D rewrites (default 4; 0: do not try), and those redundant by the\n"
     "prune rules. --list names the missing ones.\n",
     cli_compare_rules},
    {"optimize", "rewrite a graph into a cheaper equivalent with proven rules",
     "usage: superopt optimize MODEL.graph|MODEL.onnx [--rules F] "
     "[-o OUT.graph|OUT.onnx]\n"
     "       [--alpha A] [--budget B] [--patience P] [--max-depth D]\n"
     "       [--time-limit S] [--device D] [--batch N] [--no-check]\n"
     "       [--allow-unproven] [--region-size N] [--no-merge] [--no-fuse]\n"
     "       [--no-mutants] [--proven-only] [--passes rules|hand] "
     "[--no-rules]\n"
     "       [--measure] [--emit-signatures F]\n"
     "\n"
     "Folds batchnorms into convolutions, fuses activations, merges sibling\n"
     "convolutions/matmuls where cheaper, then runs a\n"
     "cost-based backtracking search (TASO) with the rules, region by\n"
     "region, groups element-wise chains into fused nodes where cheaper\n"
     "(one kernel each, docs/search.md), applies the partially equivalent\n"
     "mutants that pay (with their corrections; docs/mutants.md), and\n"
     "checks the result against the original on the CPU executor (max\n"
     "relative error 1e-4) before writing it atomically.\n"
     "\n"
     "  --rules F          rule file (default: rules/default.rules of the\n"
     "                     data folder, see --version); every rule must be\n"
     "                     proven\n"
     "  --allow-unproven   also use unproven and unverified rules (the\n"
     "                     end-to-end check still guards the result)\n"
     "  -o, --output OUT   write the optimized graph (.onnx: ONNX; .graph:\n"
     "                     weight values to OUT.safetensors beside it)\n"
     "  --drop-weights     write a .graph without its weights' values\n"
     "  --alpha A          expand graphs costing <= A x the best (1.05)\n"
     "  --budget B         expansions per region (1000)\n"
     "  --patience P       stop a region after P expansions that found no\n"
     "                     cheaper graph (100; 0: never)\n"
     "  --max-depth D      rewrites from the input (default: unlimited)\n"
     "  --time-limit S     stop searching after S seconds (default: none)\n"
     "  --batch N          optimize for batch size N: the model is rebatched\n"
     "                     first (costs for those shapes; output at N)\n"
     "  --device D         the device costs are for: h100 (default), h200,\n"
     "                     h100-tf32, h200-tf32, cpu (docs/costdb.md)\n"
     "  --db PATH          the cost database (default as in 'costdb')\n"
     "  --measure          time every operator without a measurement on the\n"
     "                     GPU as the search proposes it, and store it in\n"
     "                     the database (CUDA builds, on a GPU; costs for\n"
     "                     that GPU unless --device; exit 2 without one)\n"
     "  --emit-signatures F  write the signatures costed without a\n"
     "                     measurement to F, for 'costdb measure\n"
     "                     --signatures F' on a GPU machine\n"
     "  --region-size N    operators per search region (48)\n"
     "  --no-merge         do not merge sibling convolutions/matmuls by hand\n"
     "  --passes rules|hand  rules (default): activation fusion and sibling\n"
     "                     merging as the proven rules of rules/passes.rules,\n"
     "                     applied by the search (by hand only where no such\n"
     "                     rule matches); hand: the hand-written passes\n"
     "  --no-rules         no rules file: the search has only the pass rules\n"
     "  --no-mutants       apply no mutants\n"
     "  --proven-only      only proven rewrites: no mutants (verified by the\n"
     "                     box argument, not proven), no unproven rules\n"
     "  --no-fuse          no fused nodes (element-wise operators stay\n"
     "                     separate; ONNX output is never fused)\n"
     "  --no-check         skip the end-to-end check\n",
     cli_optimize},
    {"experiment", "run an experiment grid (search) and plot it",
     "usage: superopt experiment search MODEL --depth 0,1,2,4,8 "
     "--alpha 1.0,1.05,1.2\n"
     "       --budget 100,1000 [-o DIR] [--rules F] [--allow-unproven]\n"
     "       [--time-limit S] [--region-size N]\n"
     "\n"
     "Optimizes MODEL once per combination of the listed depths, alphas\n"
     "and budgets (no end-to-end check; progress on standard error) and\n"
     "writes DIR/results.csv (model, depth, alpha, budget, cost,\n"
     "expansions, time, rules applied, the original's cost, device),\n"
     "DIR/plot.gp and, when gnuplot is installed, DIR/cost_vs_depth.png\n"
     "and DIR/cost_vs_time.png (titled with model and device, the\n"
     "original's cost as a baseline). DIR defaults to experiment-search.\n",
     cli_experiment},
    {"mutants", "list a model's partially equivalent mutants and their boxes",
     "usage: superopt mutants MODEL [--class "
     "conv|concat-w|split-h|dilated|batch-w]...\n"
     "       [--seed S] [--batch N] [--limit K] [--dump DIR] [--no-check]\n"
     "\n"
     "Lists the mutants of MODEL's convolutions (docs/mutants.md): for each,\n"
     "the grid of boxes of every output, the boxes where the mutant differs\n"
     "from the original (box analysis in arithmetic modulo 2^31-1, seed S),\n"
     "the corrected fraction, the error bound, and a float check of mutant +\n"
     "correction against the original on the CPU. MODEL is not changed.\n"
     "\n"
     "  --class C   only class C (repeatable; conv = every class)\n"
     "  --seed S    seed of the random residues and floats (default 1)\n"
     "  --batch N   rescale the batch (dim 0 of the inputs) to N\n"
     "  --limit K   analyse only the first K mutants\n"
     "  --dump DIR  write DIR/mNNN.{f,g,corrected}.graph\n"
     "  --no-check  skip the float check\n",
     cli_mutants},
};

#define NCOMMANDS (int)(sizeof commands / sizeof *commands)

static void usage(FILE *f) {
  fprintf(f, "usage: superopt <command> [options]\n\ncommands:\n");
  for (int i = 0; i < NCOMMANDS; i++)
    fprintf(f, "  %-12s %s\n", commands[i].name, commands[i].summary);
  fprintf(f,
          "\nRun 'superopt <command> --help' for a command's options;\n"
          "'superopt --version' for the version, backends and data folder.\n"
          "Every command takes --max-input-size N (bytes, or with K, M, G;\n"
          "default 1G): the largest input file it reads.\n"
          "Exit status: 0 ok, 1 usage error, 2 bad input, 3 internal error;\n"
          "killed by SIGINT 130, SIGTERM 143 (docs/reliability.md).\n");
}

const cli_command *cli_find(const char *name) {
  for (int i = 0; i < NCOMMANDS; i++)
    if (strcmp(commands[i].name, name) == 0)
      return &commands[i];
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

static int dispatch(int argc, char **argv) {
  if (argc < 2) {
    usage(stderr);
    return CLI_USAGE;
  }
  if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "version")) {
    char data[4096];
    fputs(api_build_info(), stdout);
    printf("data: %s\n", api_data_path("", data, sizeof data, NULL) == API_OK
                             ? data
                             : "not found (see SUPEROPT_DATA)");
    return CLI_OK;
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

int main(int argc, char **argv) {
  if (base_alloc_fail_from_env())
    atexit(report_allocations);
  base_signals_install();
  return finish_stdout(dispatch(argc, argv));
}
