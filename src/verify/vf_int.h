/* vf_int.h: the verifier's private interface: the axiom term language
 * (parsed formulas with sorted variables), the function symbols it shares
 * with the Z3 encoding, and the per-operator axiom arrays.
 */
#ifndef SUPEROPT_VF_INT_H
#define SUPEROPT_VF_INT_H

#include "vf.h"

/* Function symbols of the encoding. The first VF_NOPFN are uninterpreted
 * functions in Z3 (Int parameters first, then tensors); the rest are the
 * logic and Int arithmetic of guards. */
typedef enum vf_fn {
  VF_F_CONV2D,    /* (conv2d sh sw pad groups act x w) */
  VF_F_MATMUL,    /* (matmul act a b), 2-D, no bias */
  VF_F_EWADD,     /* (ewadd a b) */
  VF_F_EWMUL,     /* (ewmul a b) */
  VF_F_SMUL,      /* (smul a s) */
  VF_F_ACT,       /* (act k x): k = VF_ACT_* element-wise function */
  VF_F_CONCAT,    /* (concat axis n x y), n = x.dim[axis] */
  VF_F_SPLIT0,    /* (split0 axis n x): x[.., :n, ..] */
  VF_F_SPLIT1,    /* (split1 axis n x): x[.., n:, ..] */
  VF_F_TRANSPOSE, /* (transpose permcode x) */
  VF_F_AVGPOOL,   /* (avgpool kh kw sh sw pad cip x) */
  VF_F_MAXPOOL,   /* (maxpool kh kw sh sw pad x) */
  VF_F_ENLARGE,   /* (enlarge kh kw w) */
  VF_F_ICONV,     /* (iconv o i kh kw) */
  VF_F_IMM,       /* (imm n) */
  VF_F_ONES,      /* (ones shapecode) */
  VF_F_CPOOL,     /* (cpool c kh kw) */
  VF_F_SH,        /* (sh x): x's shape code (Int); guards only */
  VF_F_CONV2DB,   /* (conv2db sh sw pad groups act x w b): with bias b */
  VF_NOPFN,
  VF_F_EQ = VF_NOPFN,
  VF_F_IMPLIES,
  VF_F_AND,
  VF_F_OR,
  VF_F_NOT,
  VF_F_ADD,
  VF_F_SUB,
  VF_F_MUL,
  VF_F_MOD,
  VF_F_LT,
  VF_F_LE,
  VF_F_GT,
  VF_F_GE,
  VF_NFN
} vf_fn;

/* Codes of the element-wise unary functions of (act k x); 1..4 are the
 * ir_act values of fused activations. */
enum {
  VF_ACT_RELU = 1,
  VF_ACT_SIGMOID,
  VF_ACT_TANH,
  VF_ACT_GELU,
  VF_ACT_ERF,
  VF_ACT_SQRT
};

typedef enum vf_sort { VF_S_UNK, VF_S_INT, VF_S_TENSOR, VF_S_BOOL } vf_sort;

typedef struct vf_fninfo {
  const char *name;
  int nint, nten; /* operator symbols: Int parameters, then tensors */
  vf_sort result;
} vf_fninfo;
const vf_fninfo *vf_fn_info(vf_fn f);

typedef enum vf_tkind { VF_T_NUM, VF_T_VAR, VF_T_APP } vf_tkind;

#define VF_MAX_ARGS 8
#define VF_MAX_TERMS 256
#define VF_MAX_VARS 24

typedef struct vf_term {
  vf_tkind kind;
  int64_t num; /* VF_T_NUM */
  int var;     /* VF_T_VAR: index into vf_form.vars */
  vf_fn fn;    /* VF_T_APP */
  int nargs;
  struct vf_term *args[VF_MAX_ARGS];
  int col; /* 1-based column in the text */
} vf_term;

typedef struct vf_var {
  char name[24];
  vf_sort sort;
} vf_var;

/* A parsed, sort-checked axiom formula. */
typedef struct vf_form {
  vf_term terms[VF_MAX_TERMS];
  int nterms;
  vf_var vars[VF_MAX_VARS];
  int nvars;
  vf_term *guard; /* NULL when unconditional */
  vf_term *lhs, *rhs;
} vf_form;

/* Parses and sort-checks ax->text into f. */
ir_status vf_form_parse(const vf_axiom *ax, vf_form *f, ir_diag *d);

/* Code of a transpose permutation: n + 8 * sum(perm[i] * 8^i). */
int64_t vf_perm_code(const int64_t *perm, int n);

/* Per-operator axiom arrays, each ended by VF_AXIOM_END (name NULL). */
#define VF_AXIOM_END                                                           \
  { NULL, NULL, NULL, NULL }
#define OP(ID, name, inputs, params) extern const vf_axiom vf_axioms_##name[];
#include "../ir/ops.def"
#undef OP

#endif
