/* SPDX-License-Identifier: Apache-2.0 */
/*
 * mlp.h - the model of the training example: a multilayer perceptron
 * D-H-C (784-100-10 on MNIST), ReLU hidden layer, softmax cross-entropy,
 * trained with plain minibatch SGD.
 *
 * The parameters are one flat float vector, the layout the SSP store holds:
 *     W1[D][H]  b1[H]  W2[C][H]  b2[C]
 * (W1 pixel-major). Inputs are mostly zeros (digit backgrounds), so the
 * first layer only visits each image's non-zero pixels, forward and
 * backward, each one a contiguous row of H weights.
 */
#ifndef TRAIN_MLP_H
#define TRAIN_MLP_H

#include <stddef.h>
#include <stdint.h>

typedef struct mlp {
    uint32_t d, h, c;
    size_t n_params;
    /* scratch for one image: hidden activations, hidden gradient, logits,
     * non-zero input indices */
    float *hid, *dhid, *out;
    uint32_t *nz;
} mlp;

int mlp_init(mlp *m, uint32_t d, uint32_t h, uint32_t c);
void mlp_free(mlp *m);

/* Seeded Glorot-uniform weights, zero biases: the same on every rank. */
void mlp_init_params(const mlp *m, float *params, uint64_t seed);

/* Gradient of the mean cross-entropy over the batch (images x + idx[i]*d,
 * labels y[idx[i]]) at params, written to grad (zeroed first). Returns the
 * mean loss; *correct gets the number of images classified right. */
double mlp_grad(mlp *m, const float *params, const float *x, const uint8_t *y,
                const uint32_t *idx, size_t batch, float *grad, size_t *correct);

/* Accuracy and mean loss over the images idx[0..n). */
double mlp_eval(mlp *m, const float *params, const float *x, const uint8_t *y,
                const uint32_t *idx, size_t n, double *loss);

#endif /* TRAIN_MLP_H */
