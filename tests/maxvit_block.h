/* maxvit_block.h: a MaxViT block at a small size, as graph text, shared by
 * tests/test_lower_chain.c (the lower stage makes its window partition and
 * departition move nodes under $SUPEROPT_MOVE_CL=1) and tests/test_cuda.c
 * (the CUDA executor runs them channels-last): an MBConv's last 1x1
 * convolution and its residual add, the window partition (reshape,
 * transpose, reshape: one kernel), a layer norm and a matmul with a
 * residual in window order, the departition (one kernel) and the next
 * MBConv's 1x1 convolution with its residual, a global pool. */
#ifndef SUPEROPT_TEST_MAXVIT_BLOCK_H
#define SUPEROPT_TEST_MAXVIT_BLOCK_H

static const char maxvit_block_text[] =
    "input x: [2,8,14,14]\nweight wa: [8,8,1,1]\nweight ba: [8]\n"
    "weight g: [8]\nweight e: [8]\nweight wm: [8,8]\n"
    "weight wc: [8,8,1,1]\nweight bc: [8]\n"
    "c = conv2d(x, wa, ba)\nr = ewadd(c, x)\n"
    "p1 = reshape(r) shape=[2,8,2,7,2,7]\n"
    "p2 = transpose(p1) perm=[0,2,4,3,5,1]\n"
    "p3 = reshape(p2) shape=[2,4,49,8]\n"
    "l = layernorm(p3, g, e) axis=3 eps=1e-5\nm = matmul(l, wm)\n"
    "s = ewadd(p3, m)\nd1 = reshape(s) shape=[2,2,2,7,7,8]\n"
    "d2 = transpose(d1) perm=[0,5,1,3,2,4]\n"
    "d3 = reshape(d2) shape=[2,8,14,14]\n"
    "y0 = conv2d(d3, wc, bc)\nz = ewadd(y0, d3)\ny = global_avgpool(z)\n"
    "output y\n";

#endif
