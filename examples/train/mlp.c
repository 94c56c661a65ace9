/* SPDX-License-Identifier: Apache-2.0 */
/*
 * mlp.c - forward and backward pass of the D-H-C perceptron (see mlp.h).
 */
#include "mlp.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "data.h"

int mlp_init(mlp *m, uint32_t d, uint32_t h, uint32_t c)
{
    memset(m, 0, sizeof *m);
    m->d = d;
    m->h = h;
    m->c = c;
    m->n_params = (size_t)h * d + h + (size_t)c * h + c;
    m->hid = malloc(h * sizeof *m->hid);
    m->dhid = malloc(h * sizeof *m->dhid);
    m->out = malloc(c * sizeof *m->out);
    m->nz = malloc(d * sizeof *m->nz);
    if (!m->hid || !m->dhid || !m->out || !m->nz) {
        mlp_free(m);
        return -1;
    }
    return 0;
}

void mlp_free(mlp *m)
{
    free(m->hid);
    free(m->dhid);
    free(m->out);
    free(m->nz);
    memset(m, 0, sizeof *m);
}

void mlp_init_params(const mlp *m, float *p, uint64_t seed)
{
    uint64_t s = seed;
    float *w1 = p, *b1 = w1 + (size_t)m->d * m->h, *w2 = b1 + m->h, *b2 = w2 + (size_t)m->c * m->h;
    double a1 = sqrt(6.0 / (m->d + m->h)), a2 = sqrt(6.0 / (m->h + m->c));
    for (size_t i = 0; i < (size_t)m->h * m->d; i++)
        w1[i] = (float)((2 * rng_unit(&s) - 1) * a1);
    for (size_t i = 0; i < (size_t)m->c * m->h; i++)
        w2[i] = (float)((2 * rng_unit(&s) - 1) * a2);
    memset(b1, 0, m->h * sizeof *b1);
    memset(b2, 0, m->c * sizeof *b2);
}

/* Forward pass of one image; leaves softmax probabilities in m->out and the
 * non-zero pixel list in m->nz. Returns the number of non-zero pixels. */
static uint32_t forward(mlp *m, const float *p, const float *x)
{
    const float *w1 = p, *b1 = w1 + (size_t)m->h * m->d, *w2 = b1 + m->h,
                *b2 = w2 + (size_t)m->c * m->h;
    uint32_t nnz = 0;
    for (uint32_t k = 0; k < m->d; k++)
        if (x[k] != 0.0f)
            m->nz[nnz++] = k;
    float *restrict hid = m->hid; /* restrict: lets the compiler vectorize */
    memcpy(hid, b1, m->h * sizeof *hid);
    for (uint32_t t = 0; t < nnz; t++) { /* hid += x_k * W1[k][.]: contiguous */
        const float xk = x[m->nz[t]];
        const float *restrict row = w1 + (size_t)m->nz[t] * m->h;
        for (uint32_t j = 0; j < m->h; j++)
            hid[j] += xk * row[j];
    }
    for (uint32_t j = 0; j < m->h; j++)
        m->hid[j] = m->hid[j] > 0.0f ? m->hid[j] : 0.0f;
    float mx = -INFINITY;
    for (uint32_t k = 0; k < m->c; k++) {
        const float *row = w2 + (size_t)k * m->h;
        float a = b2[k];
        for (uint32_t j = 0; j < m->h; j++)
            a += row[j] * m->hid[j];
        m->out[k] = a;
        if (a > mx)
            mx = a;
    }
    float sum = 0.0f;
    for (uint32_t k = 0; k < m->c; k++) {
        m->out[k] = expf(m->out[k] - mx);
        sum += m->out[k];
    }
    for (uint32_t k = 0; k < m->c; k++)
        m->out[k] /= sum;
    return nnz;
}

static uint32_t argmax(const float *v, uint32_t n)
{
    uint32_t best = 0;
    for (uint32_t k = 1; k < n; k++)
        if (v[k] > v[best])
            best = k;
    return best;
}

/* Cross-entropy of probability q, bounded so that q = 0 stays finite. */
static double xent(float q)
{
    return -log(q > 1e-30f ? (double)q : 1e-30);
}

double mlp_grad(mlp *m, const float *p, const float *x, const uint8_t *y, const uint32_t *idx,
                size_t batch, float *g, size_t *correct)
{
    const float *w2 = p + (size_t)m->h * m->d + m->h;
    float *gw1 = g, *gb1 = gw1 + (size_t)m->h * m->d, *gw2 = gb1 + m->h,
          *gb2 = gw2 + (size_t)m->c * m->h;
    const float inv = 1.0f / (float)batch;
    double loss = 0.0;
    size_t ok = 0;
    memset(g, 0, m->n_params * sizeof *g);
    for (size_t i = 0; i < batch; i++) {
        const float *xi = x + (size_t)idx[i] * m->d;
        uint32_t label = y[idx[i]];
        uint32_t nnz = forward(m, p, xi);
        loss += xent(m->out[label]);
        ok += argmax(m->out, m->c) == label;
        /* d loss / d logit = (softmax - onehot) / batch */
        for (uint32_t k = 0; k < m->c; k++)
            m->out[k] = (m->out[k] - (k == label ? 1.0f : 0.0f)) * inv;
        memset(m->dhid, 0, m->h * sizeof *m->dhid);
        for (uint32_t k = 0; k < m->c; k++) {
            const float dk = m->out[k];
            const float *restrict row = w2 + (size_t)k * m->h;
            const float *restrict hid = m->hid;
            float *restrict grow = gw2 + (size_t)k * m->h;
            float *restrict dh = m->dhid;
            gb2[k] += dk;
            for (uint32_t j = 0; j < m->h; j++) {
                grow[j] += dk * hid[j];
                dh[j] += dk * row[j];
            }
        }
        for (uint32_t j = 0; j < m->h; j++) {
            if (m->hid[j] <= 0.0f)
                m->dhid[j] = 0.0f; /* ReLU: no gradient through an inactive unit */
            gb1[j] += m->dhid[j];
        }
        const float *restrict dhid = m->dhid;
        for (uint32_t t = 0; t < nnz; t++) {
            const float xk = xi[m->nz[t]];
            float *restrict grow = gw1 + (size_t)m->nz[t] * m->h;
            for (uint32_t j = 0; j < m->h; j++)
                grow[j] += xk * dhid[j];
        }
    }
    if (correct)
        *correct = ok;
    return loss / (double)batch;
}

double mlp_eval(mlp *m, const float *p, const float *x, const uint8_t *y, const uint32_t *idx,
                size_t n, double *loss)
{
    size_t ok = 0;
    double l = 0.0;
    for (size_t i = 0; i < n; i++) {
        uint32_t label = y[idx[i]];
        forward(m, p, x + (size_t)idx[i] * m->d);
        l += xent(m->out[label]);
        ok += argmax(m->out, m->c) == label;
    }
    if (loss)
        *loss = n ? l / (double)n : 0.0;
    return n ? (double)ok / (double)n : 0.0;
}
