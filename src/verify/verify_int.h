/* verify_int.h: the verifier's private interface: the axiom term language
 * (parsed formulas with sorted variables), the function symbols it shares
 * with the Z3 encoding, and the per-operator axiom arrays.
 */
#ifndef SUPEROPT_VF_INT_H
#define SUPEROPT_VF_INT_H

#include "verify.h"

/* Function symbols of the encoding. The first VERIFY_NOPFN are uninterpreted
 * functions in Z3 (Int parameters first, then tensors); the rest are the
 * logic and Int arithmetic of guards. */
typedef enum verify_fn {
  VERIFY_F_CONV2D,    /* (conv2d sh sw pad groups act x w) */
  VERIFY_F_MATMUL,    /* (matmul act a b), 2-D, no bias */
  VERIFY_F_EWADD,     /* (ewadd a b), equal shapes (else badd) */
  VERIFY_F_EWMUL,     /* (ewmul a b), equal shapes (else bmul, smul) */
  VERIFY_F_SMUL,      /* (smul a s) */
  VERIFY_F_ACT,       /* (act k x): k = VERIFY_ACT_* element-wise function */
  VERIFY_F_CONCAT,    /* (concat axis n x y), n = x.dim[axis] */
  VERIFY_F_SPLIT0,    /* (split0 axis n x): x[.., :n, ..] */
  VERIFY_F_SPLIT1,    /* (split1 axis n x): x[.., n:, ..] */
  VERIFY_F_TRANSPOSE, /* (transpose permcode x) */
  VERIFY_F_AVGPOOL,   /* (avgpool kh kw sh sw pad cip x) */
  VERIFY_F_MAXPOOL,   /* (maxpool kh kw sh sw pad x) */
  VERIFY_F_ENLARGE,   /* (enlarge kh kw w) */
  VERIFY_F_ICONV,     /* (iconv o i kh kw) */
  VERIFY_F_IMM,       /* (imm n) */
  VERIFY_F_ONES,      /* (ones shapecode) */
  VERIFY_F_CPOOL,     /* (cpool c kh kw) */
  VERIFY_F_SH,        /* (sh x): x's shape code (Int); guards, and the
                         Int arguments of the batchnorm folds' reshapes */
  VERIFY_F_CONV2DB,   /* (conv2db sh sw pad groups act x w b): with bias b */
  VERIFY_F_MATMULB,   /* (matmulb ax act x w b): x [..,M,K] (rank ax+1 >= 2)
                         times a 2-D w [K,N], plus the bias b [N] */
  VERIFY_F_BN,        /* (bn e x s b m v): batchnorm, e = eps's float bits */
  VERIFY_F_RESHAPE,   /* (reshape c x): x reshaped to the shape of code c */
  VERIFY_F_EWSUB,     /* (ewsub a b), equal shapes (else bsub) */
  VERIFY_F_MATMULR,   /* (matmulr ax act x w): x [..,M,K] (rank ax+1 >= 3)
                         times a 2-D w [K,N], no bias */
  VERIFY_F_BCADD,     /* (bcadd x b): x [..,N] (rank >= 2) plus b [N]
                         broadcast along x's last axis (an ewadd of a bias
                         vector: the ONNX projections' Add) */
  VERIFY_F_EWDIV,     /* (ewdiv a b), equal shapes (else bdiv) */
  VERIFY_F_CVAL,      /* (cval bits c): a rule input constrained to hold
                         the float of those bits everywhere, of the shape
                         of code c (`input k: [] value=0.5`) */
  VERIFY_F_WHERE,     /* (where cond a b) */
  VERIFY_F_EQUAL,     /* (equal a b): bool */
  VERIFY_F_LNOT,  /* (lnot x): a bool tensor negated; the term language's (not
                     ...) is the Bool connective, so its name there is lnot */
  VERIFY_F_SLICE, /* (slice a s e x): x[.., s:e, ..] on axis a alone
                     (0 <= s < e <= x.dim[a], not the whole axis) */
  VERIFY_F_RANKC, /* (rankc c): the rank of the shape of code c (Int) */
  VERIFY_F_DIMC,  /* (dimc k c): dimension k of the shape of code c (Int);
                     both asserted for every tensor's shape code
                     (verify_assert_shapes): guards that relate a
                     reshape's shape to its input's, without the codes'
                     arithmetic */
  VERIFY_F_BADD,  /* (badd a b), (bmul a b), (bsub a b), (bdiv a b): the */
  VERIFY_F_BMUL,  /* element-wise operators on operands of one rank and */
  VERIFY_F_BSUB,  /* different shapes, broadcast (numpy's rules; a lower */
  VERIFY_F_BDIV,  /* rank is reshaped up first, encode.c): no equal-shape
                     axiom (a split, concat or convolution of the sum)
                     holds of them */
  VERIFY_F_BMATMUL, /* (bmatmul act a b): a [..,M,K] times b [..,K,N], both
                       of one rank >= 3 and their leading dimensions equal
                       (the attention's batched products) */
  VERIFY_NOPFN,
  VERIFY_F_EQ = VERIFY_NOPFN,
  VERIFY_F_IMPLIES,
  VERIFY_F_AND,
  VERIFY_F_OR,
  VERIFY_F_NOT,
  VERIFY_F_ADD,
  VERIFY_F_SUB,
  VERIFY_F_MUL,
  VERIFY_F_MOD,
  VERIFY_F_LT,
  VERIFY_F_LE,
  VERIFY_F_GT,
  VERIFY_F_GE,
  VERIFY_F_PERM, /* (perm p i): entry i of the permutation of transpose
                    code p (rank below 8) */
  VERIFY_F_DIM,  /* (dim c i): dimension i of the shape of code c */
  VERIFY_F_RANK, /* (rank c): the rank of the shape of code c (below 8) */
  VERIFY_NFN
} verify_fn;

/* Codes of the element-wise unary functions of (act k x): ew.def's rows
 * from 1 (the term language names them by ID: RELU, NEG...); 1..4 are the
 * ir_act values of fused activations. */
enum {
  VERIFY_ACT_NONE_,
#define EW(ID, ...) VERIFY_ACT_##ID,
#include "../ir/ew.def"
#undef EW
  VERIFY_ACT_END /* one past the last */
};

typedef enum verify_sort {
  VERIFY_S_UNK,
  VERIFY_S_INT,
  VERIFY_S_TENSOR,
  VERIFY_S_BOOL
} verify_sort;

typedef struct verify_fninfo {
  const char *name;
  int nint, nten; /* operator symbols: Int parameters, then tensors */
  verify_sort result;
} verify_fninfo;
const verify_fninfo *verify_fn_info(verify_fn f);

typedef enum verify_tkind {
  VERIFY_T_NUM,
  VERIFY_T_VAR,
  VERIFY_T_APP
} verify_tkind;

#define VERIFY_MAX_ARGS 8
#define VERIFY_MAX_TERMS 256
#define VERIFY_MAX_VARS 24

typedef struct verify_term {
  verify_tkind kind;
  int64_t num;  /* VERIFY_T_NUM */
  int var;      /* VERIFY_T_VAR: index into verify_form.vars */
  verify_fn fn; /* VERIFY_T_APP */
  int nargs;
  struct verify_term *args[VERIFY_MAX_ARGS];
  int col; /* 1-based column in the text */
} verify_term;

typedef struct verify_var {
  char name[24];
  verify_sort sort;
} verify_var;

/* A parsed, sort-checked axiom formula. */
typedef struct verify_form {
  verify_term terms[VERIFY_MAX_TERMS];
  int nterms;
  verify_var vars[VERIFY_MAX_VARS];
  int nvars;
  verify_term *guard; /* NULL when unconditional */
  verify_term *lhs, *rhs;
} verify_form;

/* Whether b [N] is added along the last axis of x [.., N] (rank >= 2):
 * bcadd's operands (encode.c; the axioms' instances, inst.c). */
int verify_bias_vector(const ir_shape *x, const ir_shape *b);

/* Parses and sort-checks ax->text into f. */
base_status verify_form_parse(const verify_axiom *ax, verify_form *f,
                              base_diag *d);

/* Code of a transpose permutation: n + 8 * sum(perm[i] * 8^i) (n <= 8: a
 * code that is a multiple of 8 has n = 8). */
int64_t verify_perm_code(const int64_t *perm, int n);

/* Code of a convolution's padding, the pad argument of conv2d and conv2db:
 * 0 same, 1 valid (IR_PAD_*), explicit pads [t,l,b,r] (each below 256)
 * 2 + t + 256 * (l + 256 * (b + 256 * r)); -1 for other explicit pads (the
 * node is then encoded generically). Zero padding comes before the
 * per-channel arithmetic, so every conv axiom over a variable pad holds for
 * explicit pads too. */
int64_t verify_pad_code(const ir_attrs *a);
/* The inverse on a valid code: sets a's padmode and pads; 0 when c is no
 * padding's code. */
int verify_pad_decode(int64_t c, ir_attrs *a);

/* Per-operator axiom arrays, each ended by VERIFY_AXIOM_END (name NULL). */
#define VERIFY_AXIOM_END                                                       \
  { NULL, NULL, NULL, NULL }
#define OP(ID, name, inputs, params, ...)                                      \
  extern const verify_axiom verify_axioms_##name[];
#include "../ir/ops.def"
#undef OP

#endif
