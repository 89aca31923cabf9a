/* kdwt.h: the launcher of kdwt.cu's tiled depthwise convolution, callable
 * from C (apart from kern.h, which every kernel file includes: a change
 * here recompiles only kdwt.cu and the C sources).
 *
 * Half types (f16, bf16) only, stride 1, square kernels of 3, 5 or 7:
 * the geometry of a cxk_dw (kern.h; var: one of cxk_dwt_variants() tiles,
 * fn: CXK_ID, CXK_RELU or CXK_CLIP), channels a multiple of 8, x and y
 * channels-last and 16-byte aligned, the filter [k, k, c]. */
#ifndef SUPEROPT_CX_KDWT_H
#define SUPEROPT_CX_KDWT_H

#include "kern.h"

#ifdef __cplusplus
extern "C" {
#endif

int cxk_dwt_ok(const cxk_dw *p);
int cxk_dwt_variants(void);
/* bias: [c] added to every output (after the sum), or NULL. */
cudaError_t cxk_dwt(cudaStream_t s, const void *x, const void *w,
                    const void *bias, void *y, const cxk_dw *p);

#ifdef __cplusplus
}
#endif
#endif
