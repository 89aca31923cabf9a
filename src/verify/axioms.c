/* axioms.c: the operator axioms, one array per operator of ops.def
 * (verify_axioms_<name>, possibly empty), gathered into one table by expanding
 * ops.def: an operator added without its array is a compile error.
 *
 * Every axiom is true under OUR semantics (docs/graph-format.md), for all
 * shapes that make both sides well-typed; parameter conditions are Int
 * guards. Each carries a concrete instance that tests/test_verify.c runs on
 * the CPU executor. Notation: docs/verify.md. Integer arguments in order:
 *   (conv2d sh sw pad groups act x w)   (matmul act a b)   (act k x)
 *   (conv2db sh sw pad groups act x w b): conv2d with bias b
 *   (matmulb ax act x w b): x (rank ax+1) times 2-D w, plus bias b
 *   (matmulr ax act x w): x (rank ax+1 >= 3) times 2-D w, no bias
 *   (concat axis n x y) n = x.dim[axis] (split0/split1 axis n x)
 *   (transpose permcode x), T10 = [1,0], 1035 = [1,0,2]
 *   (avgpool kh kw sh sw pad cip x)
 *   (maxpool kh kw sh sw pad x)         (enlarge kh kw w)
 *   (iconv o i kh kw) (imm n) (ones shapecode) (cpool c kh kw)
 */
#include "verify_int.h"

/* rows_sink's text for the 2-D product (P X W) (below) */
#define ROWS_SINK(P, W)                                                        \
  "(=> (and (= (rankc (sh x)) 4) (= (rankc r) 2) (= (rankc c) 3)"              \
  " (= (dimc 0 c) (dimc 2 (sh x))) (= (dimc 1 c) (dimc 0 (sh x)))"             \
  " (= (dimc 0 r) (* (dimc 0 (sh x)) (dimc 2 (sh x)))))"                       \
  " (= (transpose 1035 (reshape c (" P " (reshape r"                           \
  " (transpose 12820 x)) " W ")))"                                             \
  " (reshape (sh (transpose 1035 (reshape c (" P " (reshape r"                 \
  " (transpose 12820 x)) " W "))))"                                            \
  " (" P " (reshape r (transpose 12932 x)) " W "))))"
#define X4 "x=[1,2,5,5]"
#define W4 "w=[3,2,3,3]"
#define CONVP "sh=1 sw=1 p=0 g=1"

const verify_axiom verify_axioms_conv2d[] = {
    {"conv_act", "conv2d",
     "(=> (not (= a NONE)) (= (conv2d sh sw p g a x w)"
     " (act a (conv2d sh sw p g NONE x w))))",
     CONVP " a=1 " X4 " " W4},
    {"conv_bias_act", "conv2d",
     "(=> (not (= a NONE)) (= (conv2db sh sw p g a x w b)"
     " (act a (conv2db sh sw p g NONE x w b))))",
     "sh=2 sw=1 p=1 g=1 a=3 x=[1,2,6,6] " W4 " b=[3]"},
    {"conv_ewadd_x", "conv2d",
     "(= (conv2d sh sw p g NONE (ewadd x y) w)"
     " (ewadd (conv2d sh sw p g NONE x w) (conv2d sh sw p g NONE y w)))",
     "sh=2 sw=1 p=1 g=1 x=[1,2,6,6] y=[1,2,6,6] " W4},
    {"conv_ewadd_w", "conv2d",
     "(= (conv2d sh sw p g NONE x (ewadd w v))"
     " (ewadd (conv2d sh sw p g NONE x w) (conv2d sh sw p g NONE x v)))",
     "sh=1 sw=1 p=0 g=2 x=[1,4,5,5] w=[4,2,3,3] v=[4,2,3,3]"},
    {"conv_smul_x", "conv2d",
     "(= (conv2d sh sw p g NONE (smul x s) w)"
     " (smul (conv2d sh sw p g NONE x w) s))",
     CONVP " s=[] " X4 " " W4},
    {"conv_smul_w", "conv2d",
     "(= (conv2d sh sw p g NONE x (smul w s))"
     " (smul (conv2d sh sw p g NONE x w) s))",
     "sh=2 sw=2 p=1 g=1 s=[] x=[1,2,7,7] " W4},
    {"conv_concat_w", "conv2d",
     "(=> (= g 1) (= (conv2d sh sw p g a x (concat 0 n w v))"
     " (concat 1 n (conv2d sh sw p g a x w) (conv2d sh sw p g a x v))))",
     CONVP " a=1 n=3 " X4 " " W4 " v=[1,2,3,3]"},
    {"conv_bias_concat_w", "conv2d",
     "(=> (= g 1) (= (conv2db sh sw p g a x (concat 0 n w v) (concat 0 n b c))"
     " (concat 1 n (conv2db sh sw p g a x w b) (conv2db sh sw p g a x v c))))",
     CONVP " a=1 n=3 " X4 " " W4 " v=[1,2,3,3] b=[3] c=[1]"},
    {"conv_bias_ewadd_w", "conv2d",
     "(= (conv2db sh sw p g NONE x (ewadd w v) (ewadd b c))"
     " (ewadd (conv2db sh sw p g NONE x w b) (conv2db sh sw p g NONE x v c)))",
     "sh=2 sw=1 p=1 g=2 x=[1,4,6,6] w=[4,2,3,3] v=[4,2,3,3] b=[4] c=[4]"},
    {"conv_bias_concat_c", "conv2d",
     "(=> (= g 1) (= (conv2db sh sw p g NONE (concat 1 n x y) (concat 1 n w v)"
     " (ewadd b c))"
     " (ewadd (conv2db sh sw p g NONE x w b) (conv2db sh sw p g NONE y v c))))",
     "sh=2 sw=2 p=0 g=1 n=2 x=[1,2,7,7] y=[1,1,7,7] w=[3,2,3,3] v=[3,1,3,3] "
     "b=[3] c=[3]"},
    {"conv_concat_c", "conv2d",
     "(=> (= g 1) (= (conv2d sh sw p g NONE (concat 1 n x y) (concat 1 n w v))"
     " (ewadd (conv2d sh sw p g NONE x w) (conv2d sh sw p g NONE y v))))",
     CONVP " n=2 " X4 " y=[1,1,5,5] " W4 " v=[3,1,3,3]"},
    {"conv_concat_n", "conv2d",
     "(= (conv2d sh sw p g a (concat 0 n x y) w)"
     " (concat 0 n (conv2d sh sw p g a x w) (conv2d sh sw p g a y w)))",
     "sh=1 sw=2 p=0 g=1 a=2 n=1 " X4 " y=[2,2,5,5] " W4},
    VERIFY_AXIOM_END};

const verify_axiom verify_axioms_matmul[] = {
    /* the batched product (the attention's, bmatmul) takes a scale of
     * either operand out (the twelfth tier's q and k scales) */
    {"bmatmul_smul_l", "matmul",
     "(= (bmatmul NONE (smul x s) y) (smul (bmatmul NONE x y) s))",
     "x=[2,3,4,5] y=[2,3,5,6] s=[]"},
    {"bmatmul_smul_r", "matmul",
     "(= (bmatmul NONE x (smul y s)) (smul (bmatmul NONE x y) s))",
     "x=[2,3,4,5] y=[2,3,5,6] s=[]"},
    {"matmul_assoc", "matmul",
     "(= (matmul NONE (matmul NONE x y) z) (matmul NONE x (matmul NONE y z)))",
     "x=[2,3] y=[3,4] z=[4,2]"},
    {"matmul_ewadd_r", "matmul",
     "(= (matmul NONE x (ewadd y z))"
     " (ewadd (matmul NONE x y) (matmul NONE x z)))",
     "x=[2,3] y=[3,4] z=[3,4]"},
    {"matmul_ewadd_l", "matmul",
     "(= (matmul NONE (ewadd x y) z)"
     " (ewadd (matmul NONE x z) (matmul NONE y z)))",
     "x=[2,3] y=[2,3] z=[3,4]"},
    {"matmul_smul_l", "matmul",
     "(= (matmul NONE (smul x s) y) (smul (matmul NONE x y) s))",
     "x=[2,3] y=[3,4] s=[]"},
    {"matmul_smul_r", "matmul",
     "(= (matmul NONE x (smul y s)) (smul (matmul NONE x y) s))",
     "x=[2,3] y=[3,4] s=[]"},
    {"matmul_act", "matmul",
     "(=> (not (= a NONE)) (= (matmul a x y) (act a (matmul NONE x y))))",
     "a=1 x=[2,3] y=[3,4]"},
    {"matmul_concat_r", "matmul",
     "(= (matmul a x (concat 1 n y z))"
     " (concat 1 n (matmul a x y) (matmul a x z)))",
     "a=1 n=2 x=[2,3] y=[3,2] z=[3,1]"},
    {"matmul_concat_l", "matmul",
     "(= (matmul a (concat 0 n x y) z)"
     " (concat 0 n (matmul a x z) (matmul a y z)))",
     "a=3 n=2 x=[2,3] y=[1,3] z=[3,2]"},
    {"matmul_concat_inner", "matmul",
     "(= (matmul NONE (concat 1 n x y) (concat 0 n z w))"
     " (ewadd (matmul NONE x z) (matmul NONE y w)))",
     "n=3 x=[2,3] y=[2,1] z=[3,4] w=[1,4]"},
    {"matmul_bias_act", "matmul",
     "(=> (not (= a NONE)) (= (matmulb r a x w b)"
     " (act a (matmulb r NONE x w b))))",
     "r=2 a=4 x=[2,3,5] w=[5,4] b=[4]"},
    {"matmul_bias_concat_w", "matmul",
     "(= (matmulb r a x (concat 1 n w v) (concat 0 n b c))"
     " (concat r n (matmulb r a x w b) (matmulb r a x v c)))",
     "r=2 a=1 n=3 x=[2,4,5] w=[5,3] v=[5,2] b=[3] c=[2]"},
    {"matmulr_act", "matmul",
     "(=> (not (= a NONE)) (= (matmulr r a x w) (act a (matmulr r NONE x w))))",
     "r=2 a=2 x=[2,3,5] w=[5,4]"},
    {"matmulr_concat_w", "matmul",
     "(= (matmulr r a x (concat 1 n w v))"
     " (concat r n (matmulr r a x w) (matmulr r a x v)))",
     "r=2 a=1 n=3 x=[2,4,5] w=[5,3] v=[5,2]"},
    /* a bias added by its own ewadd (bcadd) is the product's bias. The
       arithmetic on the right ((+ 0 1), (+ r 0)) keeps it from being a
       pattern (prove.c): instantiated from bcadd terms only, not from
       every biased matmul, which proved laws of the earlier tiers' runs
       they did not prove (their files stay as they were) */
    {"matmul_bias_add", "matmul",
     "(= (bcadd (matmul NONE x w) b) (matmulb (+ 0 1) NONE x w b))",
     "x=[2,3] w=[3,4] b=[4]"},
    {"matmulr_bias_add", "matmul",
     "(= (bcadd (matmulr r NONE x w) b) (matmulb (+ r 0) NONE x w b))",
     "r=2 x=[2,3,5] w=[5,4] b=[4]"},
    {"matmul_zero_bias", "matmul",
     "(= (matmulb 1 a x w (ewsub (ones c) (ones c))) (matmul a x w))",
     "a=0 x=[2,3] w=[3,4] c=[4]"},
    {"matmulr_zero_bias", "matmul",
     "(=> (> r 1) (= (matmulb r a x w (ewsub (ones c) (ones c)))"
     " (matmulr r a x w)))",
     "r=2 a=1 x=[2,3,5] w=[5,4] c=[4]"},
    {"matmulr_ewadd_w", "matmul",
     "(= (matmulr r NONE x (ewadd w v))"
     " (ewadd (matmulr r NONE x w) (matmulr r NONE x v)))",
     "r=3 x=[2,2,3,5] w=[5,4] v=[5,4]"},
    VERIFY_AXIOM_END};

const verify_axiom verify_axioms_ewadd[] = {
    {"ewadd_comm", "ewadd", "(= (ewadd x y) (ewadd y x))", "x=[2,3] y=[2,3]"},
    {"badd_comm", "ewadd", "(= (badd x y) (badd y x))", "x=[2,3] y=[1,3]"},
    {"ewadd_assoc", "ewadd", "(= (ewadd (ewadd x y) z) (ewadd x (ewadd y z)))",
     "x=[2,3] y=[2,3] z=[2,3]"},
    {"ewadd_concat", "ewadd",
     "(= (ewadd (concat a n x y) (concat a n z w))"
     " (concat a n (ewadd x z) (ewadd y w)))",
     "a=0 n=2 x=[2,3] y=[1,3] z=[2,3] w=[1,3]"},
    VERIFY_AXIOM_END};

/* ewadd and ewmul are of equal shapes; their broadcasts (badd, bmul: one
 * rank, different shapes, encode.c's enc_ew2) have the laws that hold
 * under broadcasting only: commutativity here, the head transpose's below. */
const verify_axiom verify_axioms_ewmul[] = {
    {"ewmul_comm", "ewmul", "(= (ewmul x y) (ewmul y x))", "x=[2,3] y=[2,3]"},
    {"bmul_comm", "ewmul", "(= (bmul x y) (bmul y x))", "x=[2,3] y=[1,3]"},
    {"ewmul_assoc", "ewmul", "(= (ewmul (ewmul x y) z) (ewmul x (ewmul y z)))",
     "x=[2,3] y=[2,3] z=[2,3]"},
    {"ewmul_dist", "ewmul",
     "(= (ewmul (ewadd x y) z) (ewadd (ewmul x z) (ewmul y z)))",
     "x=[2,3] y=[2,3] z=[2,3]"},
    {"ewmul_concat", "ewmul",
     "(= (ewmul (concat a n x y) (concat a n z w))"
     " (concat a n (ewmul x z) (ewmul y w)))",
     "a=1 n=3 x=[2,3] y=[2,1] z=[2,3] w=[2,1]"},
    VERIFY_AXIOM_END};

const verify_axiom verify_axioms_ewsub[] = {VERIFY_AXIOM_END};
/* The exact (erf) GELU written out, as the ONNX exports of nn.GELU do:
 * gelu(x) = x (erf(x / sqrt 2) + 1) 0.5, the constants rule inputs bound
 * by value (cval: 1068827891 is sqrtf(2.0f), the executors' divisor,
 * 1065353216 is 1, 1056964608 is 0.5; code 0 is the shape []). A scalar
 * divisor and addend broadcast: each is reshaped to x's rank (r, the code
 * of [1,..,1]) and the operators are bdiv and badd; an ewmul by a scalar
 * is smul (encode.c's enc_ew2); both sides are patterns. */
const verify_axiom verify_axioms_ewdiv[] = {
    {"gelu_erf", "ewdiv",
     "(= (smul (ewmul x (badd (act ERF (bdiv x (reshape r (cval 1068827891 "
     "0)))) (reshape r (cval 1065353216 0)))) (cval 1056964608 0)) (act "
     "GELU x))",
     "x=[2,3] r=[1,1]"},
    VERIFY_AXIOM_END};

const verify_axiom verify_axioms_smul[] = {
    /* two scales are one, their product (both scalars of one shape: the
     * twelfth tier's q and k scales moved into the attention's s) */
    {"smul_smul", "smul",
     "(=> (= (sh s) (sh t)) (= (smul (smul x s) t) (smul x (ewmul s t))))",
     "x=[2,3] s=[] t=[]"},
    {"smul_comm", "smul", "(= (smul (smul x s) t) (smul (smul x t) s))",
     "x=[2,3] s=[] t=[]"},
    {"smul_ewadd", "smul",
     "(= (smul (ewadd x y) s) (ewadd (smul x s) (smul y s)))",
     "x=[2,3] y=[2,3] s=[]"},
    {"smul_ewmul", "smul", "(= (smul (ewmul x y) s) (ewmul x (smul y s)))",
     "x=[2,3] y=[2,3] s=[]"},
    {"smul_concat", "smul",
     "(= (smul (concat a n x y) s) (concat a n (smul x s) (smul y s)))",
     "a=1 n=3 x=[2,3] y=[2,2] s=[]"},
    VERIFY_AXIOM_END};

/* (act k x) stands for every element-wise unary operator (ew.def): these
 * hold for each, listed with the first row's operator (relu). */
static const verify_axiom act_axioms[] = {
    {"act_transpose", "relu",
     "(= (transpose T10 (act k x)) (act k (transpose T10 x)))", "k=1 x=[2,3]"},
    {"act_transpose102", "relu",
     "(= (transpose 1035 (act k x)) (act k (transpose 1035 x)))",
     "k=4 x=[2,3,4]"},
    {"act_concat", "relu",
     "(= (act k (concat a n x y)) (concat a n (act k x) (act k y)))",
     "k=1 a=1 n=3 x=[2,3] y=[2,2]"},
    {"act_split0", "relu", "(= (act k (split0 a n x)) (split0 a n (act k x)))",
     "k=2 a=0 n=1 x=[3,2]"},
    {"act_split1", "relu", "(= (act k (split1 a n x)) (split1 a n (act k x)))",
     "k=3 a=1 n=1 x=[3,2]"},
    {"relu_idem", "relu", "(= (act RELU (act RELU x)) (act RELU x))",
     "x=[2,3]"},
    VERIFY_AXIOM_END};

/* Each ew.def operator's own axioms: none beyond act_axioms (otherwise an
 * uninterpreted function). */
#define EW(ID, name, ...)                                                      \
  const verify_axiom verify_axioms_##name[] = {VERIFY_AXIOM_END};
#include "../ir/ew.def"
#undef EW
const verify_axiom verify_axioms_clip[] = {VERIFY_AXIOM_END};

const verify_axiom verify_axioms_concat[] = {
    {"concat_assoc_l", "concat",
     "(= (concat a n x (concat a m y z)) (concat a (+ n m) (concat a n x y) "
     "z))",
     "a=0 n=2 m=1 x=[2,3] y=[1,3] z=[2,3]"},
    {"concat_assoc_r", "concat",
     "(= (concat a k (concat a n x y) z) (concat a n x (concat a (- k n) y "
     "z)))",
     "a=1 n=3 k=4 x=[2,3] y=[2,1] z=[2,2]"},
    {"concat_block", "concat",
     "(=> (not (= a b)) (= (concat a n (concat b m x y) (concat b m z w))"
     " (concat b m (concat a n x z) (concat a n y w))))",
     "a=0 b=1 n=2 m=3 x=[2,3] y=[2,1] z=[1,3] w=[1,1]"},
    {"concat_split", "concat",
     "(= (concat a n (split0 a n x) (split1 a n x)) x)", "a=0 n=1 x=[3,2]"},
    VERIFY_AXIOM_END};

const verify_axiom verify_axioms_split[] = {
    {"split0_concat", "split", "(= (split0 a n (concat a n x y)) x)",
     "a=1 n=3 x=[2,3] y=[2,2]"},
    {"split1_concat", "split", "(= (split1 a n (concat a n x y)) y)",
     "a=0 n=2 x=[2,3] y=[1,3]"},
    /* nested splits: a split of a split's part is a split of the whole
     * (a three-part split is encoded as split1's split, encode.c) */
    {"split0_split0", "split",
     "(=> (< n m) (= (split0 a n (split0 a m x)) (split0 a n x)))",
     "a=1 n=1 m=3 x=[2,4]"},
    {"split1_split0", "split",
     "(=> (< n m) (= (split1 a n (split0 a m x))"
     " (split0 a (- m n) (split1 a n x))))",
     "a=0 n=1 m=3 x=[4,2]"},
    {"split1_split1", "split",
     "(= (split1 a k (split1 a n x)) (split1 a (+ n k) x))",
     "a=1 n=1 k=2 x=[2,4]"},
    {"split0_ewadd", "split",
     "(= (split0 a n (ewadd x y)) (ewadd (split0 a n x) (split0 a n y)))",
     "a=1 n=1 x=[2,3] y=[2,3]"},
    {"split1_ewadd", "split",
     "(= (split1 a n (ewadd x y)) (ewadd (split1 a n x) (split1 a n y)))",
     "a=0 n=1 x=[3,2] y=[3,2]"},
    {"split0_ewmul", "split",
     "(= (split0 a n (ewmul x y)) (ewmul (split0 a n x) (split0 a n y)))",
     "a=0 n=2 x=[3,2] y=[3,2]"},
    {"split1_ewmul", "split",
     "(= (split1 a n (ewmul x y)) (ewmul (split1 a n x) (split1 a n y)))",
     "a=1 n=2 x=[2,3] y=[2,3]"},
    {"split0_smul", "split",
     "(= (split0 a n (smul x s)) (smul (split0 a n x) s))",
     "a=1 n=2 x=[2,3] s=[]"},
    {"split1_smul", "split",
     "(= (split1 a n (smul x s)) (smul (split1 a n x) s))",
     "a=0 n=1 x=[3,2] s=[]"},
    {"split0_transpose", "split",
     "(=> (or (= a 0) (= a 1)) (= (split0 a n (transpose T10 x))"
     " (transpose T10 (split0 (- 1 a) n x))))",
     "a=0 n=1 x=[2,3]"},
    {"split1_transpose", "split",
     "(=> (or (= a 0) (= a 1)) (= (split1 a n (transpose T10 x))"
     " (transpose T10 (split1 (- 1 a) n x))))",
     "a=1 n=1 x=[2,3]"},
    {"split0_matmul_r", "split",
     "(= (split0 1 n (matmul a x y)) (matmul a x (split0 1 n y)))",
     "a=3 n=1 x=[2,3] y=[3,4]"},
    {"split1_matmul_r", "split",
     "(= (split1 1 n (matmul a x y)) (matmul a x (split1 1 n y)))",
     "a=0 n=3 x=[2,3] y=[3,4]"},
    {"split0_matmul_l", "split",
     "(= (split0 0 n (matmul a x y)) (matmul a (split0 0 n x) y))",
     "a=2 n=2 x=[3,3] y=[3,4]"},
    {"split1_matmul_l", "split",
     "(= (split1 0 n (matmul a x y)) (matmul a (split1 0 n x) y))",
     "a=0 n=1 x=[3,3] y=[3,4]"},
    {"split0_conv_w", "split",
     "(=> (= g 1) (= (split0 1 n (conv2d sh sw p g a x w))"
     " (conv2d sh sw p g a x (split0 0 n w))))",
     "sh=1 sw=1 p=0 g=1 a=1 n=2 x=[1,2,5,5] w=[3,2,3,3]"},
    {"split1_conv_w", "split",
     "(=> (= g 1) (= (split1 1 n (conv2d sh sw p g a x w))"
     " (conv2d sh sw p g a x (split1 0 n w))))",
     "sh=2 sw=2 p=1 g=1 a=0 n=1 x=[1,2,7,7] w=[3,2,3,3]"},
    {"split0_conv_n", "split",
     "(= (split0 0 n (conv2d sh sw p g a x w)) (conv2d sh sw p g a (split0 0 n "
     "x) w))",
     "sh=1 sw=1 p=0 g=2 a=1 n=1 x=[3,4,5,5] w=[2,2,3,3]"},
    {"split1_conv_n", "split",
     "(= (split1 0 n (conv2d sh sw p g a x w)) (conv2d sh sw p g a (split1 0 n "
     "x) w))",
     "sh=1 sw=1 p=0 g=1 a=0 n=2 x=[3,2,5,5] w=[2,2,3,3]"},
    VERIFY_AXIOM_END};

const verify_axiom verify_axioms_transpose[] = {
    {"transpose_inv", "transpose", "(= (transpose T10 (transpose T10 x)) x)",
     "x=[2,3]"},
    {"transpose_ewadd", "transpose",
     "(= (transpose T10 (ewadd x y))"
     " (ewadd (transpose T10 x) (transpose T10 y)))",
     "x=[2,3] y=[2,3]"},
    {"transpose_ewmul", "transpose",
     "(= (transpose T10 (ewmul x y))"
     " (ewmul (transpose T10 x) (transpose T10 y)))",
     "x=[2,3] y=[2,3]"},
    {"transpose_smul", "transpose",
     "(= (transpose T10 (smul x s)) (smul (transpose T10 x) s))",
     "x=[2,3] s=[]"},
    {"transpose_matmul", "transpose",
     "(= (transpose T10 (matmul a x y))"
     " (matmul a (transpose T10 y) (transpose T10 x)))",
     "a=1 x=[2,3] y=[3,4]"},
    {"transpose_concat", "transpose",
     "(=> (or (= a 0) (= a 1)) (= (transpose T10 (concat a n x y))"
     " (concat (- 1 a) n (transpose T10 x) (transpose T10 y))))",
     "a=0 n=2 x=[2,3] y=[1,3]"},
    {"concat_transpose", "transpose",
     "(=> (or (= a 0) (= a 1)) (= (concat a n (transpose T10 x)"
     " (transpose T10 y)) (transpose T10 (concat (- 1 a) n x y))))",
     "a=1 n=3 x=[3,2] y=[1,2]"},
    /* The seventh tier's rank-3 transpose of the two leading axes, perm
     * [1,0,2] (code 1035): an involution that commutes with the
     * element-wise operators and, keeping the last axis, with a product
     * over that axis by a 2-D weight (each row mapped alone), biased or
     * not. The code names rank 3, so none of these meets a rule of the
     * earlier tiers (no rank-3 transposes there). */
    {"transpose102_inv", "transpose",
     "(= (transpose 1035 (transpose 1035 x)) x)", "x=[2,3,4]"},
    {"transpose102_ewadd", "transpose",
     "(= (transpose 1035 (ewadd x y))"
     " (ewadd (transpose 1035 x) (transpose 1035 y)))",
     "x=[2,3,4] y=[2,3,4]"},
    {"transpose102_ewmul", "transpose",
     "(= (transpose 1035 (ewmul x y))"
     " (ewmul (transpose 1035 x) (transpose 1035 y)))",
     "x=[2,3,4] y=[2,3,4]"},
    {"transpose102_smul", "transpose",
     "(= (transpose 1035 (smul x s)) (smul (transpose 1035 x) s))",
     "x=[2,3,4] s=[]"},
    {"transpose102_bcadd", "transpose",
     "(= (transpose 1035 (bcadd x b)) (bcadd (transpose 1035 x) b))",
     "x=[2,3,4] b=[4]"},
    {"transpose102_matmulr", "transpose",
     "(= (transpose 1035 (matmulr 2 a x w)) (matmulr 2 a (transpose 1035 x)"
     " w))",
     "a=1 x=[2,3,4] w=[4,5]"},
    {"transpose102_matmulb", "transpose",
     "(= (transpose 1035 (matmulb 2 a x w b))"
     " (matmulb 2 a (transpose 1035 x) w b))",
     "a=4 x=[2,3,4] w=[4,5] b=[5]"},
    /* The head transpose of rank 4, perm [0,2,1,3] (code 12932): an
     * involution that commutes with the element-wise operators, their
     * broadcasts (badd, bmul: Llama's rotary cos and sin, [1,1,S,D])
     * included, whose operands' axes it permutes alike. For the eleventh tier's
     * rotary embedding computed before the head transpose (docs/generation.md).
     */
    {"transpose0213_inv", "transpose",
     "(= (transpose 12932 (transpose 12932 x)) x)", "x=[2,3,4,5]"},
    {"transpose0213_ewadd", "transpose",
     "(= (transpose 12932 (ewadd x y))"
     " (ewadd (transpose 12932 x) (transpose 12932 y)))",
     "x=[2,3,4,5] y=[2,3,4,5]"},
    {"transpose0213_ewmul", "transpose",
     "(= (transpose 12932 (ewmul x y))"
     " (ewmul (transpose 12932 x) (transpose 12932 y)))",
     "x=[2,3,4,5] y=[2,3,4,5]"},
    {"transpose0213_badd", "transpose",
     "(= (transpose 12932 (badd x y))"
     " (badd (transpose 12932 x) (transpose 12932 y)))",
     "x=[2,3,4,5] y=[1,3,1,5]"},
    {"transpose0213_bmul", "transpose",
     "(= (transpose 12932 (bmul x y))"
     " (bmul (transpose 12932 x) (transpose 12932 y)))",
     "x=[2,3,4,5] y=[1,3,1,5]"},
    /* The twelfth tier's attention in the projections' rows
     * (docs/generation.md): k's [0,2,3,1] (code 5764) is [0,2,1,3] then
     * [0,1,3,2] (code 9796; Llama's k, transposed for the product after
     * the head transpose). */
    {"transpose0231_of_0213", "transpose",
     "(= (transpose 9796 (transpose 12932 x)) (transpose 5764 x))",
     "x=[2,3,4,5]"},
    /* The thirteenth tier's (MaxViT's heads at rank 5, [1, windows, heads,
     * tokens, dim]): k's [0,1,3,4,2] (code 83525) is [0,1,3,2,4] (140869)
     * then [0,1,2,4,3] (115781); and a scalar scale passes any transpose
     * (MaxViT scales k between the two; T10's is transpose_smul, whose
     * proofs of the default enumeration keep naming it). */
    {"transpose01342_of_01324", "transpose",
     "(= (transpose 115781 (transpose 140869 x)) (transpose 83525 x))",
     "x=[1,2,3,4,5]"},
    {"transpose_smul_any", "transpose",
     "(=> (not (= p T10)) (= (transpose p (smul x s))"
     " (smul (transpose p x) s)))",
     "p=115781 x=[1,2,3,4,5] s=[]"},
    /* The rows of a 2-D product made in the order the transpose after it
     * wants (torch's MultiheadAttention out_proj: SDPA's x [B,H,S,D]
     * transposed [2,0,1,3] to [S,B,H,D], reshaped to r = [S B, H D] rows,
     * multiplied by w, reshaped to c = [S,B,N], transposed [1,0,2] to
     * [B,S,N]; code 12820 is perm [2,0,1,3], 12932 [0,2,1,3]): row s B + b
     * is x[b, :, s, :], and the product maps each row alone, so
     * transposing x [0,2,1,3] instead (row b S + s is the same x[b, :, s,
     * :]), the same reshape and product, and a reshape to the left side's
     * shape [B,S,N] give the same tensor. The guard reads the shapes
     * through rankc and dimc (asserted for every tensor's code); the right
     * side's reshape is to (sh) of the left side, so that the left side
     * alone, naming every variable, is the pattern. ROWS_SINK(P, W): the
     * axiom for the product (P X W), W its weight (and bias). */
    {"rows_sink", "transpose", ROWS_SINK("matmul a", "w"),
     "a=0 x=[2,3,4,5] w=[15,6] r=[8,15] c=[4,2,6]"},
    /* rows_sink with the product's bias (the export's Gemm of out_proj
     * with its bias, a 2-D matmulb): a bias vector is added to each row
     * alone too, so the rows' order moves through it the same way */
    {"rows_sink_b", "transpose", ROWS_SINK("matmulb 1 a", "w b"),
     "a=0 x=[2,3,4,5] w=[15,6] b=[6] r=[8,15] c=[4,2,6]"},
    VERIFY_AXIOM_END};

/* The twelfth tier's (docs/generation.md). */
const verify_axiom verify_axioms_reshape[] = {
    /* a reshape back to x's own shape undoes the one before it (Llama's
     * rotary sums [B,S,H,D] read by the rows as [B,S,H*D]) */
    {"reshape_reshape", "reshape",
     "(=> (= c (sh x)) (= (reshape c (reshape d x)) x))",
     "c=[2,3,4] d=[2,12] x=[2,3,4]"},
    VERIFY_AXIOM_END};

const verify_axiom verify_axioms_avgpool[] = {
    {"avgpool_ewadd", "avgpool",
     "(= (avgpool kh kw sh sw p c (ewadd x y))"
     " (ewadd (avgpool kh kw sh sw p c x) (avgpool kh kw sh sw p c y)))",
     "kh=3 kw=3 sh=1 sw=1 p=0 c=1 " X4 " y=[1,2,5,5]"},
    {"avgpool_smul", "avgpool",
     "(= (avgpool kh kw sh sw p c (smul x s)) (smul (avgpool kh kw sh sw p c x)"
     " s))",
     "kh=3 kw=2 sh=2 sw=1 p=0 c=0 " X4 " s=[]"},
    {"avgpool_concat", "avgpool",
     "(=> (or (= a 0) (= a 1)) (= (avgpool kh kw sh sw p c (concat a n x y))"
     " (concat a n (avgpool kh kw sh sw p c x) (avgpool kh kw sh sw p c y))))",
     "kh=3 kw=3 sh=1 sw=1 p=0 c=1 a=1 n=2 " X4 " y=[1,1,5,5]"},
    VERIFY_AXIOM_END};

const verify_axiom verify_axioms_maxpool[] = {
    {"maxpool_concat", "maxpool",
     "(=> (or (= a 0) (= a 1)) (= (maxpool kh kw sh sw p (concat a n x y))"
     " (concat a n (maxpool kh kw sh sw p x) (maxpool kh kw sh sw p y))))",
     "kh=3 kw=3 sh=2 sw=2 p=0 a=0 n=1 " X4 " y=[2,2,5,5]"},
    {"maxpool_act", "maxpool",
     "(=> (or (= k RELU) (= k SIGMOID) (= k TANH) (= k ERF))"
     " (= (act k (maxpool kh kw sh sw p x)) (maxpool kh kw sh sw p (act k "
     "x))))",
     "k=1 kh=3 kw=3 sh=1 sw=1 p=0 " X4},
    VERIFY_AXIOM_END};

const verify_axiom verify_axioms_global_avgpool[] = {VERIFY_AXIOM_END};

const verify_axiom verify_axioms_enlarge[] = {
    {"conv_enlarge", "enlarge",
     "(= (conv2d 1 1 SAME g a x (enlarge kh kw w)) (conv2d 1 1 SAME g a x w))",
     "g=1 a=1 kh=3 kw=3 " X4 " w=[3,2,1,3]"},
    {"conv_bias_enlarge", "enlarge",
     "(= (conv2db 1 1 SAME g a x (enlarge kh kw w) b)"
     " (conv2db 1 1 SAME g a x w b))",
     "g=1 a=1 kh=3 kw=3 " X4 " w=[3,2,1,1] b=[3]"},
    {"enlarge_concat", "enlarge",
     "(=> (or (= a 0) (= a 1)) (= (concat a n (enlarge kh kw w)"
     " (enlarge kh kw v)) (enlarge kh kw (concat a n w v))))",
     "a=0 n=2 kh=3 kw=3 w=[2,2,1,3] v=[1,2,1,3]"},
    {"enlarge_ewadd", "enlarge",
     "(= (ewadd (enlarge kh kw w) (enlarge kh kw v))"
     " (enlarge kh kw (ewadd w v)))",
     "kh=3 kw=5 w=[2,2,1,3] v=[2,2,1,3]"},
    {"enlarge_smul", "enlarge",
     "(= (smul (enlarge kh kw w) s) (enlarge kh kw (smul w s)))",
     "kh=3 kw=3 w=[2,2,3,1] s=[]"},
    VERIFY_AXIOM_END};

/* Batchnorm folded into the convolution before it, in the IR form the
 * extended generation set builds (src/enumerate/gops.c, build_bn): with
 * f = s / sqrt(v + eps), the filter w f (per output channel: a batchnorm
 * of w's transpose with zero mean and bias, transposed back) and the bias
 * c f + b - m f (a batchnorm of the bias c, or of zeros [1,O], reshaped).
 * (sh s) is the code of [O]; R, the code of [1,O], is 10 + M ((sh s) - 1)
 * (M: encode.c's modulus); 13324 is the code of perm [1,0,2,3]. */
#define BN_R "(+ 10 (* 68719476737 (- (sh s) 1)))"
#define BN_W                                                                   \
  "(transpose 13324 (bn e (transpose 13324 w) s (ewsub m m) (ewsub m m) v))"
#define BN_INST " e=925353388 x=[1,2,6,6] w=[3,2,3,3] s=[3] b=[3] m=[3] v=[3]"
/* Batchnorm folded into the 1x1 convolution after it (MBConv's pre-norm:
 * MaxViT), pads zero (SAME resolves to none at 1x1, VALID, explicit
 * [0,0,0,0] of code 2), one group: every tap reads bn(x) = x f + z,
 * f = s / sqrt(v + eps), z = b - m f, so the filter is w f per input
 * channel (a batchnorm of w, channel axis 1, with zero mean and bias) and
 * the bias w z: the product of w as [O,C] ((dimc k (sh w)): the shape of
 * w; 68719476737 encode.c's modulus) and z as [C,1] (a batchnorm of zeros
 * [1,C], R as above, transposed), reshaped to [O]. */
#define PRE_GUARD                                                              \
  "(and (= g 1) (= (dimc 2 (sh w)) 1) (= (dimc 3 (sh w)) 1)"                   \
  " (or (= p 0) (= p 1) (= p 2)))"
#define PRE_W "(bn e w s (ewsub m m) (ewsub m m) v)"
#define PRE_Z                                                                  \
  "(reshape (+ 1 (* 8 (dimc 0 (sh w))))"                                       \
  " (matmul NONE (reshape (+ 2 (* 8 (+ (dimc 0 (sh w))"                        \
  " (* 68719476737 (dimc 1 (sh w)))))) w)"                                     \
  " (transpose T10 (bn e (ewsub (reshape " BN_R " m) (reshape " BN_R           \
  " m)) s b m v))))"
#define PRE_INST                                                               \
  " g=1 e=981668463 x=[1,4,5,5] w=[3,4,1,1] s=[4] b=[4] m=[4] v=[4]"
const verify_axiom verify_axioms_batchnorm[] = {
    {"bn_fold_conv", "batchnorm",
     "(= (bn e (conv2d sh sw p g NONE x w) s b m v)"
     " (conv2db sh sw p g NONE x " BN_W
     " (reshape (sh s) (bn e (ewsub (reshape " BN_R " m) (reshape " BN_R
     " m)) s b m v))))",
     "sh=2 sw=1 p=1 g=1" BN_INST},
    {"bn_fold_convb", "batchnorm",
     "(= (bn e (conv2db sh sw p g NONE x w c) s b m v)"
     " (conv2db sh sw p g NONE x " BN_W " (reshape (sh s) (bn e (reshape " BN_R
     " c) s b m v))))",
     "sh=1 sw=1 p=0 g=1 c=[3]" BN_INST},
    {"bn_fold_pre", "batchnorm",
     "(=> " PRE_GUARD " (= (conv2d sh sw p g NONE (bn e x s b m v) w)"
     " (conv2db sh sw p g NONE x " PRE_W " " PRE_Z ")))",
     "sh=2 sw=1 p=0" PRE_INST},
    {"bn_fold_preb", "batchnorm",
     "(=> " PRE_GUARD " (= (conv2db sh sw p g NONE (bn e x s b m v) w c)"
     " (conv2db sh sw p g NONE x " PRE_W " (ewadd c " PRE_Z "))))",
     "sh=1 sw=1 p=2 c=[3]" PRE_INST},
    VERIFY_AXIOM_END};
const verify_axiom verify_axioms_reduce_mean[] = {VERIFY_AXIOM_END};
const verify_axiom verify_axioms_softmax[] = {VERIFY_AXIOM_END};
const verify_axiom verify_axioms_layernorm[] = {VERIFY_AXIOM_END};
/* made by the fusion pass only (after the search): no rule uses it */
const verify_axiom verify_axioms_attention[] = {VERIFY_AXIOM_END};
const verify_axiom verify_axioms_pad[] = {VERIFY_AXIOM_END};
/* Slices (a per-axis symbol, docs/verify.md) and the moves of Llama's
 * rotate_half through the head transpose (docs/notes/results.md,
 * 2026-11-30): slices, element-wise functions and concats move through a
 * transpose of rank 4 to 7 (rank 2 has the T10 axioms; code 12932 is
 * [0,2,1,3]); the two halves of an axis are a split's parts. The right
 * sides that compute an axis ((perm p a)) or write (+ n 0) fire from the
 * left side only: from a slice or a concat of transposes, never from a
 * split or a transpose of the enumerated rules, whose proofs are as
 * before. */
const verify_axiom verify_axioms_slice[] = {
    {"slice_transpose", "slice",
     "(=> (not (= (mod p 8) 0)) (= (slice a s e (transpose p x))"
     " (transpose p (slice (perm p a) s e x))))",
     "p=12932 a=1 s=1 e=3 x=[2,4,3,5]"},
    {"act_transpose_n", "slice",
     "(=> (>= (mod p 8) 4)"
     " (= (transpose p (act k x)) (act k (transpose p x))))",
     "p=12932 k=7 x=[2,4,3,5]"},
    {"concat_transpose_n", "slice",
     "(=> (>= (mod p 8) 4) (= (concat a n (transpose p x) (transpose p y))"
     " (transpose p (concat (perm p a) n x y))))",
     "p=12932 a=1 n=4 x=[2,3,4,2] y=[2,3,1,2]"},
    {"slice_split0", "slice",
     "(=> (< 0 n) (= (slice a 0 n x) (split0 a (+ n 0) x)))",
     "a=1 n=2 x=[3,5,2]"},
    {"slice_split1", "slice",
     "(=> (= e (dim (sh x) a)) (= (slice a n e x) (split1 a n x)))",
     "a=2 n=1 e=4 x=[2,3,4]"},
    /* a slice inside the axis is a split's part of its rest (the middle
     * part of a split into three: the twelfth tier's packed q, k and v,
     * read by the row layout's slices) */
    {"slice_mid", "slice",
     "(=> (and (< 0 s) (< e (dim (sh x) a)))"
     " (= (slice a s e x) (split0 a (- e s) (split1 a s x))))",
     "a=2 s=1 e=3 x=[2,3,5]"},

    /* rotate_half of a head-split projection, v = reshape(x w) to c =
     * [B,S,H,2n] (the last axis N = H 2n split, x [B,S,K]), is the
     * projection by w with each head's columns rotated: w as r = [K,H,2n],
     * halves swapped, the upper negated, back to [K,N] (a column
     * permutation with signs; pass_fold_rotate_half's weight). Fires from
     * the rotated weight's side (r is bound there). */
    {"matmulr_rotate_half", "matmul",
     "(=> (and (and (= (rank c) 4) (= (rank r) 3) (= (rank (sh x)) 3)"
     " (= (rank (sh w)) 2)) (and (= (dim c 0) (dim (sh x) 0))"
     " (= (dim c 1) (dim (sh x) 1)) (= (dim c 3) (* 2 n))"
     " (= (* (dim c 2) (dim c 3)) (dim (sh w) 1))) (and"
     " (= (dim r 0) (dim (sh w) 0)) (= (dim r 1) (dim c 2))"
     " (= (dim r 2) (dim c 3))))"
     " (= (concat 3 n (act NEG (split1 3 n (reshape c (matmulr 2 NONE x w))))"
     " (split0 3 n (reshape c (matmulr 2 NONE x w))))"
     " (reshape c (matmulr 2 NONE x (reshape (sh w) (concat 2 n"
     " (act NEG (split1 2 n (reshape r w))) (split0 2 n (reshape r w))))))))",
     "n=2 c=[2,3,5,4] r=[6,5,4] x=[2,3,6] w=[6,20]"},
    VERIFY_AXIOM_END};
/* int64 / bool operators: no laws (rules stay float-only, ir.h ir_dtype) */
const verify_axiom verify_axioms_gather[] = {VERIFY_AXIOM_END};
const verify_axiom verify_axioms_where[] = {VERIFY_AXIOM_END};
const verify_axiom verify_axioms_equal[] = {VERIFY_AXIOM_END};
const verify_axiom verify_axioms_not[] = {VERIFY_AXIOM_END};
const verify_axiom verify_axioms_cast[] = {VERIFY_AXIOM_END};

const verify_axiom verify_axioms_const_iconv[] = {
    {"conv_iconv", "const_iconv",
     "(=> (= (* g i) o) (= (conv2d 1 1 SAME g NONE x (iconv o i kh kw)) x))",
     "g=2 o=4 i=2 kh=3 kw=3 x=[1,4,5,5]"},
    /* the identity kernel average-pooled (same padding, dividing by the
     * window) is 1/(kh*kw) everywhere: conv with it is that average pool */
    {"conv_pooled_iconv", "const_iconv",
     "(=> (= (* g i) o) (= (conv2d 1 1 SAME g NONE x"
     " (avgpool kh kw 1 1 SAME 1 (iconv o i kh kw)))"
     " (avgpool kh kw 1 1 SAME 1 x)))",
     "g=1 o=3 i=3 kh=3 kw=3 x=[2,3,5,5]"},
    VERIFY_AXIOM_END};

const verify_axiom verify_axioms_const_imm[] = {
    {"matmul_imm_r", "const_imm", "(= (matmul NONE x (imm n)) x)",
     "n=3 x=[2,3]"},
    {"matmul_imm_l", "const_imm", "(= (matmul NONE (imm n) x) x)",
     "n=3 x=[3,2]"},
    VERIFY_AXIOM_END};

const verify_axiom verify_axioms_const_ones[] = {
    {"ewmul_ones", "const_ones", "(=> (= (sh x) c) (= (ewmul x (ones c)) x))",
     "x=[2,3] c=[2,3]"},
    VERIFY_AXIOM_END};

/* conv with const_pool is an unnormalised sum pool, while avgpool divides
 * by the window size: no axiom relates them (TASO's does, for its summing
 * pool). */
const verify_axiom verify_axioms_const_pool[] = {VERIFY_AXIOM_END};
/* fused nodes are not verified: the encoder refuses them (encode.c) */
const verify_axiom verify_axioms_fused[] = {VERIFY_AXIOM_END};
/* made by the lower stage only (after the search): no rule uses them */
const verify_axiom verify_axioms_se[] = {VERIFY_AXIOM_END};
const verify_axiom verify_axioms_concat_shuffle[] = {VERIFY_AXIOM_END};
const verify_axiom verify_axioms_move[] = {VERIFY_AXIOM_END};

static const verify_axiom *const per_op[IR_NOPS] = {
#define OP(ID, name, inputs, params, ...) [IR_OP_##ID] = verify_axioms_##name,
#include "../ir/ops.def"
#undef OP
};

/* List k of the table in order, k <= IR_NOPS: act_axioms before the
 * first ew.def operator's, then ops.def order. NULL past the end. */
static const verify_axiom *list_at(int k) {
  int first = ir_ew_op(0);
  if (k == first)
    return act_axioms;
  k -= k > first;
  return k < IR_NOPS ? per_op[k] : NULL;
}

/* The table flattened (small: a linear walk). */
static int count_all(void) {
  int n = 0;
  for (int k = 0; list_at(k); k++)
    for (const verify_axiom *a = list_at(k); a->name; a++)
      n++;
  return n;
}

int verify_naxioms(void) { return count_all(); }

const verify_axiom *verify_axiom_at(int i) {
  if (i < 0)
    return NULL;
  for (int k = 0; list_at(k); k++)
    for (const verify_axiom *a = list_at(k); a->name; a++)
      if (i-- == 0)
        return a;
  return NULL;
}
