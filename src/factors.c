/*
** factors.c -- factor analysis of position consistency and preference fairness (METHODS §5):
** which of the mean question, candidate-answer, baseline-answer and prompt lengths, the answer
** quality gap δq, the judge, the candidate and the task explain PC (or PF) across the
** (judge, candidate, task) groups of the audit. A bidirectional stepwise linear regression
** chooses the variables by AIC.
**
** The engine (arb__stepwise_fit) works on plain arrays so it can be tested on synthetic data:
**   - AIC = 2k − 2 ln L with the Gaussian log-likelihood at the MLE σ̂² = RSS/n, so
**     AIC = 2k + n·(ln(2π σ̂²) + 1); k = independent coefficients (intercept included) + 1 for
**     the error variance (§5: "k includes the error variance").
**   - A categorical variable is dummy coded against its first level present (the caller
**     passes levels in sorted order) and enters or leaves as one block.
**   - Start from the intercept-only model; each step tries adding every absent variable and
**     removing every present one and takes the single change that lowers AIC most; it stops
**     when no change lowers AIC (by more than a rounding margin).
**   - A variable that cannot vary (a categorical with one level present, a numeric with one
**     value) is never a candidate, and the result says so.
**   - Rank deficiency is handled the way R's lm() does it: the columns of a model are checked
**     in order (intercept, then variables in their given order) against the span of the
**     columns kept so far (Gram–Schmidt on centred columns, relative tolerance 1e-7); a
**     column inside that span is "aliased", gets no coefficient, and does not count in k.
**     The least-squares fit itself is GSL's (gsl_multifit_linear_tsvd on the kept columns,
**     the truncated-SVD form of gsl_multifit_linear, which also reports the rank).
**   - Departure from the letter of the formula: a perfect fit (RSS = 0) has ln L = +∞ and AIC
**     = −∞, which makes every comparison between perfect fits meaningless (R's step() warns
**     and carries on with −∞). We floor σ̂² at (1e-9·max|y|)² (1e-18 when y is all zeros), far
**     below any real residual variance and far above rounding noise, so among models that
**     fit perfectly the one with fewer coefficients wins by 2 per coefficient.
** Standard errors use σ̂² = RSS/(n − k + 1) (the unbiased estimate), t = estimate / SE and
** two-sided p-values from Student's t with n − k + 1 residual degrees of freedom; all three
** are undefined (NAN) when no residual degree of freedom is left.
**
** Judge families (METHODS §5: judges of one family may favour their family's answers): when
** the store knows any family, two more candidates follow the others -- judge_family
** (categorical; "(none)" for a judge without one) and same_family (1 when the judge's family
** is the candidate's, 0 otherwise, unknown included). Without families the variables and the
** output are exactly those of before.
**
** Not here: computing PC, PF, δq and the lengths (audit.c); other model families.
*/
#include "internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_cdf.h>
#include <gsl/gsl_matrix.h>
#include <gsl/gsl_multifit.h>
#include <gsl/gsl_vector.h>

#define SW_ALIAS_TOL 1e-7   /* relative residual norm below which a column is aliased */
#define SW_FLOOR_REL 1e-9   /* σ̂ floor relative to max|y| (see the file comment) */
#define SW_MAX_STEPS 10000  /* AIC strictly decreases, so this is only a safety net */

/* ---- the stepwise engine ------------------------------------------------------------------ */

/* A column of the design: the intercept (var SIZE_MAX), a numeric variable, or the dummy of
** one level of a categorical variable. */
typedef struct sw_col {
    size_t var;
    size_t level;
} sw_col;

typedef struct sw_ctx {
    const double *y;
    size_t n;
    const arb__factor_var *vars;
    size_t n_vars;
    size_t **present;   /* per categorical variable: the levels that occur, ascending */
    size_t *n_present;
    double *mean;       /* per numeric variable: its mean (for the alias check) */
    size_t max_cols;    /* columns of the model with every usable variable, intercept too */
    double sigma2_floor;
    /* scratch, reused by every fit; after fit() they describe the last model fitted */
    sw_col *cols;       /* max_cols: columns of the model */
    int *kept;          /* max_cols: 1 when the column is not aliased */
    size_t n_cols, n_kept;
    double *basis;      /* max_cols x n: orthonormal basis of the kept check columns */
    double *vec;        /* n: the column being checked */
    double *design;     /* n x max_cols row-major: the kept raw columns */
    double *coef;       /* max_cols: coefficients of the kept columns */
    double *cov;        /* max_cols x max_cols */
    size_t gsl_rank;
    double rss;
    gsl_multifit_linear_workspace *ws;
} sw_ctx;

/* Raw value of column c at observation i. */
static double col_value(const sw_ctx *ctx, const sw_col *c, size_t i)
{
    if (c->var == SIZE_MAX) return 1.0;
    const arb__factor_var *v = &ctx->vars[c->var];
    if (v->x) return v->x[i];
    return v->level[i] == c->level ? 1.0 : 0.0;
}

/* Lists the columns of model `in` into ctx->cols: intercept, then each variable in order
** (numeric: itself; categorical: every present level but the first, the reference). */
static void model_columns(sw_ctx *ctx, const int *in)
{
    size_t m = 0;
    ctx->cols[m++] = (sw_col){SIZE_MAX, 0};
    for (size_t v = 0; v < ctx->n_vars; v++) {
        if (!in[v]) continue;
        if (ctx->vars[v].x) {
            ctx->cols[m++] = (sw_col){v, 0};
        } else {
            for (size_t l = 1; l < ctx->n_present[v]; l++)
                ctx->cols[m++] = (sw_col){v, ctx->present[v][l]};
        }
    }
    ctx->n_cols = m;
}

/* Decides which columns are aliased (see the file comment). Numeric columns are checked
** centred: the intercept is always kept first, so centring does not change the span, and it
** keeps a large offset from hiding a small variation. */
static void alias_check(sw_ctx *ctx)
{
    size_t n = ctx->n;
    ctx->n_kept = 0;
    for (size_t j = 0; j < ctx->n_cols; j++) {
        const sw_col *c = &ctx->cols[j];
        int numeric = c->var != SIZE_MAX && ctx->vars[c->var].x;
        double norm0 = 0.0;
        for (size_t i = 0; i < n; i++) {
            double x = col_value(ctx, c, i) - (numeric ? ctx->mean[c->var] : 0.0);
            ctx->vec[i] = x;
            norm0 += x * x;
        }
        norm0 = sqrt(norm0);
        /* modified Gram–Schmidt, twice for accuracy */
        for (int pass = 0; pass < 2 && norm0 > 0.0; pass++) {
            for (size_t q = 0; q < ctx->n_kept; q++) {
                const double *b = &ctx->basis[q * n];
                double dot = 0.0;
                for (size_t i = 0; i < n; i++) dot += b[i] * ctx->vec[i];
                for (size_t i = 0; i < n; i++) ctx->vec[i] -= dot * b[i];
            }
        }
        double norm = 0.0;
        for (size_t i = 0; i < n; i++) norm += ctx->vec[i] * ctx->vec[i];
        norm = sqrt(norm);
        if (norm0 == 0.0 || norm <= SW_ALIAS_TOL * norm0 || ctx->n_kept >= n) {
            ctx->kept[j] = 0;
            continue;
        }
        double *b = &ctx->basis[ctx->n_kept * n];
        for (size_t i = 0; i < n; i++) b[i] = ctx->vec[i] / norm;
        ctx->kept[j] = 1;
        ctx->n_kept++;
    }
}

/* AIC = 2k + n (ln(2π σ̂²) + 1), σ̂² = max(RSS/n, floor). */
static double gaussian_aic(double rss, size_t n, size_t k, double floor)
{
    double s2 = rss / (double)n;
    if (!(s2 > floor)) s2 = floor;
    return 2.0 * (double)k + (double)n * (log(2.0 * M_PI * s2) + 1.0);
}

/* Fits model `in` and returns its AIC in *aic; ctx's scratch then describes the fit.
** Returns ARB_OK, or ARB_INVALID when GSL refuses (it should not). */
static arb_status fit(sw_ctx *ctx, const int *in, double *aic)
{
    size_t n = ctx->n;
    model_columns(ctx, in);
    alias_check(ctx);
    size_t p = ctx->n_kept;
    for (size_t i = 0; i < n; i++) {
        size_t at = 0;
        for (size_t j = 0; j < ctx->n_cols; j++)
            if (ctx->kept[j]) ctx->design[i * p + at++] = col_value(ctx, &ctx->cols[j], i);
    }
    gsl_matrix_view X = gsl_matrix_view_array(ctx->design, n, p);
    gsl_vector_const_view Y = gsl_vector_const_view_array(ctx->y, n);
    gsl_vector_view C = gsl_vector_view_array(ctx->coef, p);
    gsl_matrix_view COV = gsl_matrix_view_array(ctx->cov, p, p);
    double chisq = 0.0;
    size_t rank = 0;
    if (gsl_multifit_linear_tsvd(&X.matrix, &Y.vector, GSL_DBL_EPSILON, &C.vector,
                                 &COV.matrix, &chisq, &rank, ctx->ws) != 0)
        return ARB_INVALID;
    ctx->gsl_rank = rank;
    /* the residual sum of squares from the residuals themselves */
    double rss = 0.0;
    for (size_t i = 0; i < n; i++) {
        double r = ctx->y[i];
        for (size_t j = 0; j < p; j++) r -= ctx->design[i * p + j] * ctx->coef[j];
        rss += r * r;
    }
    ctx->rss = rss;
    *aic = gaussian_aic(rss, n, p + 1, ctx->sigma2_floor);
    return ARB_OK;
}

/* Frees everything arb__stepwise_fit put in r and zeroes it. Accepts NULL. */
void arb__stepwise_result_free(arb__stepwise_result *r)
{
    if (!r) return;
    free(r->unusable);
    free(r->in_model);
    free(r->delta_aic);
    free(r->reference);
    free(r->steps);
    free(r->coefs);
    memset(r, 0, sizeof *r);
}

static void ctx_free(sw_ctx *ctx)
{
    if (ctx->present)
        for (size_t v = 0; v < ctx->n_vars; v++) free(ctx->present[v]);
    free(ctx->present);
    free(ctx->n_present);
    free(ctx->mean);
    free(ctx->cols);
    free(ctx->kept);
    free(ctx->basis);
    free(ctx->vec);
    free(ctx->design);
    free(ctx->coef);
    free(ctx->cov);
    if (ctx->ws) gsl_multifit_linear_free(ctx->ws);
}

/* Checks the input and finds what each variable can contribute. Returns ARB_OK, ARB_INVALID
** (non-finite value, level out of range, a variable both or neither numeric and categorical)
** or ARB_NOMEM. */
static arb_status ctx_init(sw_ctx *ctx, arb__stepwise_result *out)
{
    size_t n = ctx->n, nv = ctx->n_vars;
    ctx->present = calloc(nv ? nv : 1, sizeof *ctx->present);
    ctx->n_present = calloc(nv ? nv : 1, sizeof *ctx->n_present);
    ctx->mean = calloc(nv ? nv : 1, sizeof *ctx->mean);
    if (!ctx->present || !ctx->n_present || !ctx->mean) return ARB_NOMEM;

    double ymax = 0.0;
    for (size_t i = 0; i < n; i++) {
        if (!isfinite(ctx->y[i])) return ARB_INVALID;
        if (fabs(ctx->y[i]) > ymax) ymax = fabs(ctx->y[i]);
    }
    double s = SW_FLOOR_REL * (ymax > 0.0 ? ymax : 1.0);
    ctx->sigma2_floor = s * s;

    ctx->max_cols = 1;
    for (size_t v = 0; v < nv; v++) {
        const arb__factor_var *var = &ctx->vars[v];
        out->reference[v] = SIZE_MAX;
        if ((var->x == NULL) == (var->level == NULL)) return ARB_INVALID;
        if (var->x) {
            double sum = 0.0;
            int varies = 0;
            for (size_t i = 0; i < n; i++) {
                if (!isfinite(var->x[i])) return ARB_INVALID;
                sum += var->x[i];
                if (var->x[i] != var->x[0]) varies = 1;
            }
            ctx->mean[v] = sum / (double)n;
            if (!varies) out->unusable[v] = ARB__FACTOR_NO_VARIATION;
            else ctx->max_cols++;
            continue;
        }
        if (var->n_levels == 0) return ARB_INVALID;
        char *seen = calloc(var->n_levels, 1);
        if (!seen) return ARB_NOMEM;
        size_t count = 0;
        for (size_t i = 0; i < n; i++) {
            if (var->level[i] >= var->n_levels) {
                free(seen);
                return ARB_INVALID;
            }
            if (!seen[var->level[i]]) {
                seen[var->level[i]] = 1;
                count++;
            }
        }
        ctx->present[v] = malloc(count * sizeof **ctx->present);
        if (!ctx->present[v]) {
            free(seen);
            return ARB_NOMEM;
        }
        for (size_t l = 0; l < var->n_levels; l++)
            if (seen[l]) ctx->present[v][ctx->n_present[v]++] = l;
        free(seen);
        out->reference[v] = ctx->present[v][0];
        if (count < 2) out->unusable[v] = ARB__FACTOR_ONE_LEVEL;
        else ctx->max_cols += count - 1;
    }

    size_t mc = ctx->max_cols;
    size_t pmax = mc < n ? mc : n;
    ctx->cols = calloc(mc, sizeof *ctx->cols);
    ctx->kept = calloc(mc, sizeof *ctx->kept);
    ctx->basis = calloc(pmax * n, sizeof *ctx->basis);
    ctx->vec = calloc(n, sizeof *ctx->vec);
    ctx->design = calloc(pmax * n, sizeof *ctx->design);
    ctx->coef = calloc(pmax, sizeof *ctx->coef);
    ctx->cov = calloc(pmax * pmax, sizeof *ctx->cov);
    if (!ctx->cols || !ctx->kept || !ctx->basis || !ctx->vec || !ctx->design || !ctx->coef ||
        !ctx->cov)
        return ARB_NOMEM;
    ctx->ws = gsl_multifit_linear_alloc(n, pmax);
    return ctx->ws ? ARB_OK : ARB_NOMEM;
}

/* Appends a step to out. 0 ok, -1 out of memory. */
static int add_step(arb__stepwise_result *out, size_t *cap, int add, size_t var, double aic)
{
    if (out->n_steps == *cap) {
        size_t c = *cap ? *cap * 2 : 8;
        arb__stepwise_step *s = realloc(out->steps, c * sizeof *s);
        if (!s) return -1;
        out->steps = s;
        *cap = c;
    }
    out->steps[out->n_steps++] = (arb__stepwise_step){add, var, aic};
    return 0;
}

/* Runs the bidirectional stepwise regression of y[0..n) on vars[0..n_vars) (all borrowed) and
** fills *out, which the caller frees with arb__stepwise_result_free (also after a failure).
** Returns ARB_OK; ARB_INVALID when n is 0 or the input is malformed (a non-finite value, a
** level index out of range); ARB_NOMEM. */
arb_status arb__stepwise_fit(const double *y, size_t n, const arb__factor_var *vars,
                             size_t n_vars, arb__stepwise_result *out)
{
    if (!out) return ARB_INVALID;
    memset(out, 0, sizeof *out);
    if (!y || n == 0 || (n_vars && !vars)) return ARB_INVALID;

    arb_status st;
    sw_ctx ctx;
    memset(&ctx, 0, sizeof ctx);
    ctx.y = y;
    ctx.n = n;
    ctx.vars = vars;
    ctx.n_vars = n_vars;
    size_t nv1 = n_vars ? n_vars : 1;
    int *trial = calloc(nv1, sizeof *trial);
    out->n = n;
    out->n_vars = n_vars;
    out->unusable = calloc(nv1, sizeof *out->unusable);
    out->in_model = calloc(nv1, sizeof *out->in_model);
    out->delta_aic = calloc(nv1, sizeof *out->delta_aic);
    out->reference = calloc(nv1, sizeof *out->reference);
    if (!trial || !out->unusable || !out->in_model || !out->delta_aic || !out->reference) {
        st = ARB_NOMEM;
        goto done;
    }
    if ((st = ctx_init(&ctx, out)) != ARB_OK) goto done;

    /* §5: start from the intercept-only model */
    double current;
    if ((st = fit(&ctx, out->in_model, &current)) != ARB_OK) goto done;
    out->aic_null = current;
    size_t cap_steps = 0;
    while (out->n_steps < SW_MAX_STEPS) {
        size_t best_var = SIZE_MAX;
        double best = current;
        for (size_t v = 0; v < n_vars; v++) {
            if (out->unusable[v]) continue;
            memcpy(trial, out->in_model, n_vars * sizeof *trial);
            trial[v] = !trial[v];
            double a;
            if ((st = fit(&ctx, trial, &a)) != ARB_OK) goto done;
            if (a < best) {
                best = a;
                best_var = v;
            }
        }
        /* "lowers": by more than rounding, so two equivalent models cannot alternate */
        if (best_var == SIZE_MAX || !(best < current - 1e-9 * (1.0 + fabs(current)))) break;
        out->in_model[best_var] = !out->in_model[best_var];
        current = best;
        if (add_step(out, &cap_steps, out->in_model[best_var], best_var, best)) {
            st = ARB_NOMEM;
            goto done;
        }
    }

    /* ΔAIC on removal of each variable of the final model */
    for (size_t v = 0; v < n_vars; v++) {
        out->delta_aic[v] = NAN;
        if (!out->in_model[v]) continue;
        memcpy(trial, out->in_model, n_vars * sizeof *trial);
        trial[v] = 0;
        double a;
        if ((st = fit(&ctx, trial, &a)) != ARB_OK) goto done;
        out->delta_aic[v] = a - current;
    }

    /* the final model once more, to read its coefficients from the scratch */
    if ((st = fit(&ctx, out->in_model, &out->aic)) != ARB_OK) goto done;
    out->rss = ctx.rss;
    out->rank = ctx.n_kept;
    out->df_residual = n - ctx.n_kept;
    double ymean = 0.0, tss = 0.0;
    for (size_t i = 0; i < n; i++) ymean += y[i];
    ymean /= (double)n;
    for (size_t i = 0; i < n; i++) tss += (y[i] - ymean) * (y[i] - ymean);
    out->tss = tss;
    /* a constant y (up to rounding) has nothing to explain */
    out->r_squared = tss > (double)n * ctx.sigma2_floor ? 1.0 - ctx.rss / tss : NAN;

    out->coefs = calloc(ctx.n_cols, sizeof *out->coefs);
    if (!out->coefs) {
        st = ARB_NOMEM;
        goto done;
    }
    out->n_coefs = ctx.n_cols;
    size_t p = ctx.n_kept, at = 0;
    double df = (double)out->df_residual;
    /* GSL scales cov by chisq/(n − rank); we want RSS/(n − p) with our own p */
    double s2_ours = out->df_residual > 0 ? ctx.rss / df : NAN;
    double s2_gsl = ctx.gsl_rank < n ? ctx.rss / (double)(n - ctx.gsl_rank) : NAN;
    for (size_t j = 0; j < ctx.n_cols; j++) {
        arb__stepwise_coef *c = &out->coefs[j];
        c->var = ctx.cols[j].var;
        c->level = ctx.cols[j].level;
        c->aliased = !ctx.kept[j];
        c->estimate = c->std_error = c->t = c->p_value = NAN;
        if (c->aliased) continue;
        c->estimate = ctx.coef[at];
        double var_gsl = ctx.cov[at * p + at];
        at++;
        if (!(out->df_residual > 0)) continue;
        double se;
        if (ctx.gsl_rank == p) se = sqrt(var_gsl); /* same scaling as ours */
        else if (s2_gsl > 0.0) se = sqrt(var_gsl / s2_gsl * s2_ours);
        else continue;
        c->std_error = se;
        if (!(se > 0.0) || !isfinite(se)) continue;
        c->t = c->estimate / se;
        c->p_value = 2.0 * gsl_cdf_tdist_Q(fabs(c->t), df);
    }

done:
    free(trial);
    ctx_free(&ctx);
    return st;
}

/* ---- the factor analysis over audit groups ------------------------------------------------ */

/* The variables: the four lengths indexed like arb_audit_metrics.length, then the gap, then
** the categoricals. */
enum { FV_QUESTION = ARB_LEN_QUESTION, FV_CANDIDATE_LEN = ARB_LEN_CANDIDATE,
       FV_BASELINE_LEN = ARB_LEN_BASELINE, FV_PROMPT_LEN = ARB_LEN_PROMPT,
       FV_GAP = ARB_LEN__COUNT, FV_JUDGE, FV_CANDIDATE, FV_TASK, FV_JUDGE_FAMILY,
       FV_SAME_FAMILY, FV__COUNT };
#define FV_NUMERIC (FV_GAP + 1)      /* the first five are numeric */
#define FV_N_CATEGORICAL 4           /* judge, candidate, task, judge_family */
#define FV_WITHOUT_FAMILIES FV_JUDGE_FAMILY /* the variables when no family is known */

static const char *const fv_names[FV__COUNT] = {
    "question_length", "candidate_length", "baseline_length", "prompt_length",
    "quality_gap",     "judge",            "candidate",       "task",
    "judge_family",    "same_family"};

/* Numeric variables: the lengths, the gap and same_family (0/1). */
static int fv_numeric(size_t v) { return v < FV_NUMERIC || v == FV_SAME_FAMILY; }

struct arb_factors {
    char target[4];            /* "pc" or "pf" */
    size_t n_groups;           /* groups offered */
    size_t n_used;
    size_t n_target_undefined; /* dropped: target NAN */
    size_t n_predictor_undefined; /* dropped: a numeric predictor NAN */
    int all_undefined[FV__COUNT]; /* numeric predictor NAN in every group: left out */
    char *message;             /* NULL, or why there is no regression */
    char **levels[FV__COUNT];  /* categorical: sorted distinct names (owned) */
    size_t n_levels[FV__COUNT];
    int fitted;
    int n_vars;                /* FV__COUNT with families, else FV_WITHOUT_FAMILIES */
    arb__stepwise_result fit;
};

/* Frees the analysis. Accepts NULL. */
void arb_factors_destroy(arb_factors *f)
{
    if (!f) return;
    free(f->message);
    for (int v = 0; v < FV__COUNT; v++) {
        for (size_t l = 0; l < f->n_levels[v]; l++) free(f->levels[v][l]);
        free(f->levels[v]);
    }
    arb__stepwise_result_free(&f->fit);
    free(f);
}

/* Numeric predictor v (FV_QUESTION .. FV_GAP) of a group. */
static double group_numeric(const arb__factor_group *g, int v)
{
    return v == FV_GAP ? g->quality_gap : g->length[v]; /* FV_* lengths follow ARB_LEN_* */
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The index of name among sorted levels (present by construction). */
static size_t level_of(char **levels, size_t n, const char *name)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(levels[mid], name);
        if (c == 0) return mid;
        if (c < 0) lo = mid + 1;
        else hi = mid;
    }
    return 0;
}

/* Collects the sorted distinct names of one categorical into f (copies). 0 ok, -1 no memory. */
static int build_levels(arb_factors *f, int v, const char **names, size_t n)
{
    const char **sorted = malloc((n ? n : 1) * sizeof *sorted);
    if (!sorted) return -1;
    memcpy(sorted, names, n * sizeof *sorted);
    qsort(sorted, n, sizeof *sorted, cmp_str);
    f->levels[v] = calloc(n ? n : 1, sizeof *f->levels[v]);
    if (!f->levels[v]) {
        free(sorted);
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        if (i > 0 && strcmp(sorted[i], sorted[i - 1]) == 0) continue;
        char *copy = arb__strdup(sorted[i]);
        if (!copy) {
            free(sorted);
            return -1;
        }
        f->levels[v][f->n_levels[v]++] = copy;
    }
    free(sorted);
    return 0;
}

/* Builds the factor analysis of groups[0..n) (borrowed) predicting target ("pc" or "pf").
** Groups whose target or a numeric predictor is undefined are dropped and counted; with fewer
** than 3 groups left the result carries a message instead of a model. *out is owned by the
** caller (arb_factors_destroy). Returns ARB_OK, ARB_INVALID (bad target) or ARB_NOMEM. */
arb_status arb__factors_from_groups(const arb__factor_group *groups, size_t n,
                                    const char *target, arb_factors **out)
{
    if (!out) return ARB_INVALID;
    *out = NULL;
    if (!target || (strcmp(target, "pc") != 0 && strcmp(target, "pf") != 0) || (n && !groups))
        return ARB_INVALID;
    int is_pf = strcmp(target, "pf") == 0;
    arb_status st = ARB_NOMEM;
    arb_factors *f = calloc(1, sizeof *f);
    double *y = malloc((n ? n : 1) * sizeof *y);
    double *x = malloc((n ? n : 1) * FV_NUMERIC * sizeof *x);
    size_t *lv = malloc((n ? n : 1) * FV_N_CATEGORICAL * sizeof *lv);
    const char **names = malloc((n ? n : 1) * FV_N_CATEGORICAL * sizeof *names);
    double *same = malloc((n ? n : 1) * sizeof *same);
    if (!f || !y || !x || !lv || !names || !same) goto done;
    memcpy(f->target, target, 3);
    f->n_groups = n;
    f->n_vars = FV_WITHOUT_FAMILIES;
    for (size_t i = 0; i < n; i++)
        if (groups[i].judge_family || groups[i].candidate_family) f->n_vars = FV__COUNT;

    /* a numeric predictor undefined in every group with a defined target (e.g. prompt
    ** lengths of judgments imported without their calls) is left out, not allowed to empty
    ** the data; otherwise a group with an undefined predictor is dropped (complete cases) */
    int defined_somewhere[FV_NUMERIC] = {0};
    for (size_t i = 0; i < n; i++) {
        const arb__factor_group *g = &groups[i];
        if (!isfinite(is_pf ? g->pf : g->pc)) continue;
        for (int v = 0; v < FV_NUMERIC; v++)
            if (isfinite(group_numeric(g, v))) defined_somewhere[v] = 1;
    }
    for (int v = 0; v < FV_NUMERIC; v++) f->all_undefined[v] = !defined_somewhere[v];

    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        const arb__factor_group *g = &groups[i];
        double t = is_pf ? g->pf : g->pc;
        if (!isfinite(t)) {
            f->n_target_undefined++;
            continue;
        }
        int ok = 1;
        for (int v = 0; v < FV_NUMERIC; v++)
            if (!f->all_undefined[v] && !isfinite(group_numeric(g, v))) ok = 0;
        if (!ok) {
            f->n_predictor_undefined++;
            continue;
        }
        y[m] = t;
        /* a variable undefined everywhere gets a constant column: never a candidate */
        for (int v = 0; v < FV_NUMERIC; v++)
            x[(size_t)v * n + m] = f->all_undefined[v] ? 0.0 : group_numeric(g, v);
        names[0 * n + m] = g->judge ? g->judge : "";
        names[1 * n + m] = g->candidate ? g->candidate : "";
        names[2 * n + m] = g->task ? g->task : "";
        names[3 * n + m] = g->judge_family ? g->judge_family : "";
        same[m] = g->judge_family && g->candidate_family &&
                  strcmp(g->judge_family, g->candidate_family) == 0;
        m++;
    }
    f->n_used = m;
    int n_cat = f->n_vars == FV__COUNT ? FV_N_CATEGORICAL : 3;
    for (int c = 0; c < n_cat; c++)
        if (build_levels(f, FV_JUDGE + c, &names[(size_t)c * n], m)) goto done;

    if (m < 3) {
        f->message = arb__sprintf("too few groups (%zu) for a regression", m);
        if (!f->message) goto done;
        st = ARB_OK;
        goto done;
    }
    for (int c = 0; c < n_cat; c++)
        for (size_t i = 0; i < m; i++)
            lv[(size_t)c * n + i] =
                level_of(f->levels[FV_JUDGE + c], f->n_levels[FV_JUDGE + c], names[(size_t)c * n + i]);

    arb__factor_var vars[FV__COUNT];
    memset(vars, 0, sizeof vars);
    for (int v = 0; v < f->n_vars; v++) {
        vars[v].name = fv_names[v];
        if (v == FV_SAME_FAMILY) {
            vars[v].x = same;
        } else if (v < FV_NUMERIC) {
            vars[v].x = &x[(size_t)v * n];
        } else {
            vars[v].level = &lv[(size_t)(v - FV_JUDGE) * n];
            vars[v].n_levels = f->n_levels[v];
            vars[v].level_names = (const char *const *)f->levels[v];
        }
    }
    st = arb__stepwise_fit(y, m, vars, (size_t)f->n_vars, &f->fit);
    if (st == ARB_OK) f->fitted = 1;

done:
    free(y);
    free(x);
    free(lv);
    free(names);
    free(same);
    if (st != ARB_OK) {
        arb_factors_destroy(f);
        return st;
    }
    *out = f;
    return ARB_OK;
}

static arb_status check_target(arb_store *store, const char *target)
{
    if (strcmp(target, "pc") != 0 && strcmp(target, "pf") != 0)
        return arb__store_fail(store, ARB_INVALID,
                               "factors: target must be \"pc\" or \"pf\", got \"%s\"", target);
    return ARB_OK;
}

/* The groups of an audit by judge, candidate and task, regressed (internal.h). */
arb_status arb__factors_from_audit(arb_store *store, const arb_audit *audit, const char *target,
                                   arb_factors **out)
{
    if (!out) return ARB_INVALID;
    *out = NULL;
    if (!store || !audit) return ARB_INVALID;
    if (!target) target = "pc";
    arb_status st = check_target(store, target);
    if (st) return st;
    const unsigned by = ARB_BY_JUDGE | ARB_BY_CANDIDATE | ARB_BY_TASK;
    if ((audit->params.by | ARB_BY_JUDGE) != by)
        return arb__store_fail(store, ARB_INVALID,
                               "factors: the audit must be grouped by judge, candidate and task");

    arb__families *fam = NULL; /* judge and contestant families (§5), from the store */
    if ((st = arb__families_load(store, &fam)) != ARB_OK) return st;
    size_t n = arb_audit_count(audit);
    arb__factor_group *groups = calloc(n ? n : 1, sizeof *groups);
    if (!groups) {
        arb__families_free(fam);
        return arb__store_fail(store, ARB_NOMEM, "factors: out of memory");
    }
    for (size_t i = 0; i < n; i++) {
        const arb_audit_row *r = arb_audit_row_at(audit, i);
        arb__factor_group *g = &groups[i];
        g->judge = r->judge;
        g->candidate = r->candidate;
        g->task = r->task;
        g->pc = r->m.value[ARB_M_PC];
        g->pf = r->m.value[ARB_M_PF];
        g->quality_gap = r->m.value[ARB_M_QUALITY_GAP];
        for (int l = 0; l < ARB_LEN__COUNT; l++) g->length[l] = r->m.length[l].mean;
        g->judge_family = arb__families_of(fam, "judge", r->judge);
        g->candidate_family = arb__families_of(fam, "model", r->candidate);
    }
    st = arb__factors_from_groups(groups, n, target, out);
    free(groups);
    arb__families_free(fam);
    if (st == ARB_NOMEM) return arb__store_fail(store, ARB_NOMEM, "factors: out of memory");
    if (st != ARB_OK)
        return arb__store_fail(store, st, "factors: the regression failed (%s)",
                               arb_strerror(st));
    return ARB_OK;
}

/* Runs the audit grouped by (judge, candidate, task) and the stepwise regression of PC or PF
** on its groups. params NULL = target "pc". *out is owned by the caller (arb_factors_destroy);
** on failure it is NULL and arb_store_errmsg(store) says why (ARB_INVALID for a bad target). */
arb_status arb_factors_compute(arb_store *store, const arb_factors_params *params,
                               arb_factors **out)
{
    if (!out) return ARB_INVALID;
    *out = NULL;
    if (!store) return ARB_INVALID;
    const char *target = params && params->target ? params->target : "pc";
    arb_status st = check_target(store, target);
    if (st) return st;

    arb_audit_params ap = arb_audit_default_params();
    ap.by = ARB_BY_JUDGE | ARB_BY_CANDIDATE | ARB_BY_TASK;
    ap.multi_agent = 0; /* only the rows are regressed */
    arb__audit_input *in = NULL;
    arb_audit *audit = NULL;
    st = arb__audit_input_load(store, &ap, &in);
    if (!st) st = arb__audit_rows(store, in, &ap, &audit);
    arb__audit_input_free(in);
    if (!st) st = arb__factors_from_audit(store, audit, target, out); /* each sets the message */
    arb_audit_destroy(audit);
    return st;
}

/* ---- text --------------------------------------------------------------------------------- */

static const char *target_title(const arb_factors *f)
{
    return strcmp(f->target, "pf") == 0 ? "preference fairness (PF)"
                                        : "position consistency (PC)";
}

/* Why variable v was not a candidate. */
static const char *unusable_reason(const arb_factors *f, int v)
{
    if (v < FV_NUMERIC && f->all_undefined[v]) return "undefined in every group";
    return f->fit.unusable[v] == ARB__FACTOR_ONE_LEVEL ? "one level" : "no variation";
}

/* Appends a level name for a terminal: "(none)" for the empty task. */
static int put_level(arb__buf *b, const char *name)
{
    return *name ? arb__buf_put_safe(b, name) : arb__buf_puts(b, "(none)");
}

/* Appends the term of coefficient c: "(intercept)", "quality_gap", "judge = gpt". */
static int put_term(arb__buf *b, const arb_factors *f, const arb__stepwise_coef *c)
{
    if (c->var == SIZE_MAX) return arb__buf_puts(b, "(intercept)");
    if (arb__buf_puts(b, fv_names[c->var])) return -1;
    if (fv_numeric(c->var)) return 0;
    return arb__buf_puts(b, " = ") || put_level(b, f->levels[c->var][c->level]);
}

/* Appends x right-aligned in width with prec digits, %f (style 'f') or %g, or "n/a". */
static int put_num(arb__buf *b, double x, int width, int prec, char style)
{
    if (!isfinite(x)) return arb__buf_printf(b, "%*s", width, "n/a");
    if (style == 'g') return arb__buf_printf(b, "%*.*g", width, prec, x);
    return arb__buf_printf(b, "%*.*f", width, prec, x);
}

static int put_text(arb__buf *b, const arb_factors *f)
{
    const arb__stepwise_result *r = &f->fit;
    if (arb__buf_printf(b, "Factor analysis of %s per (judge, candidate, task) group "
                           "(METHODS \xc2\xa7" "5)\n",
                        target_title(f)) ||
        arb__buf_printf(b, "groups: %zu used of %zu (%zu with %s undefined, %zu with an "
                           "undefined length or quality gap)\n",
                        f->n_used, f->n_groups, f->n_target_undefined,
                        strcmp(f->target, "pf") == 0 ? "PF" : "PC", f->n_predictor_undefined))
        return -1;
    if (f->n_vars == FV__COUNT &&
        arb__buf_puts(b, "judge families known: judge_family (categorical, (none) for a judge "
                         "without one) and\nsame_family (1 when the judge's family is the "
                         "candidate's, else 0) are candidates too\n"))
        return -1;
    if (f->message) return arb__buf_printf(b, "%s\n", f->message);

    int any = 0;
    for (int v = 0; v < f->n_vars; v++) {
        if (!r->unusable[v]) continue;
        if (arb__buf_puts(b, any ? ", " : "not used: ") ||
            arb__buf_printf(b, "%s (%s)", fv_names[v], unusable_reason(f, v)))
            return -1;
        any = 1;
    }
    if (any && arb__buf_puts(b, "\n")) return -1;

    if (arb__buf_printf(b, "\nbidirectional stepwise regression by AIC = 2k - 2 ln L (Gaussian; k "
                           "counts the coefficients and the variance)\n"
                           "  start  intercept only          AIC %10.3f\n",
                        r->aic_null))
        return -1;
    for (size_t s = 0; s < r->n_steps; s++) {
        const arb__stepwise_step *st = &r->steps[s];
        if (arb__buf_printf(b, "  %5zu  %-6s %-16s  AIC %10.3f\n", s + 1,
                            st->add ? "add" : "remove", fv_names[st->var], st->aic))
            return -1;
    }
    if (r->n_steps == 0 && arb__buf_puts(b, "  no variable lowers the AIC\n")) return -1;

    if (arb__buf_printf(b, "\nfinal model: AIC %.3f, R^2 ", r->aic) ||
        put_num(b, r->r_squared, 0, 3, 'f') ||
        arb__buf_printf(b, ", %zu groups, %zu coefficients, residual df %zu\n", r->n, r->rank,
                        r->df_residual))
        return -1;
    if (arb__buf_puts(b, "  variable            AIC without it - AIC with it (> 0: it helps)\n"))
        return -1;
    any = 0;
    for (int v = 0; v < f->n_vars; v++) {
        if (!r->in_model[v]) continue;
        any = 1;
        if (arb__buf_printf(b, "  %-18s  %+10.3f", fv_names[v], r->delta_aic[v])) return -1;
        if (!fv_numeric((size_t)v) && (arb__buf_puts(b, "   (reference: ") ||
                              put_level(b, f->levels[v][r->reference[v]]) ||
                              arb__buf_puts(b, ")")))
            return -1;
        if (arb__buf_puts(b, "\n")) return -1;
    }
    if (!any && arb__buf_puts(b, "  (none: the intercept-only model)\n")) return -1;

    if (arb__buf_puts(b, "\n    estimate   std.error     t value    p value  term\n")) return -1;
    for (size_t j = 0; j < r->n_coefs; j++) {
        const arb__stepwise_coef *c = &r->coefs[j];
        if (c->aliased) {
            if (arb__buf_printf(b, "  %10s  %10s  %10s  %9s  ", "aliased", "", "", "")) return -1;
        } else if (arb__buf_puts(b, "  ") || put_num(b, c->estimate, 10, 4, 'g') ||
                   arb__buf_puts(b, "  ") || put_num(b, c->std_error, 10, 4, 'g') ||
                   arb__buf_puts(b, "  ") || put_num(b, c->t, 10, 4, 'g') ||
                   arb__buf_puts(b, "  ") || put_num(b, c->p_value, 9, 3, 'g') ||
                   arb__buf_puts(b, "  ")) {
            return -1;
        }
        if (put_term(b, f, c) || arb__buf_puts(b, "\n")) return -1;
    }
    return 0;
}

/* Renders the analysis as text: groups used, variables not used and why, the step trace, the
** final model with ΔAIC on removal and its coefficients. Returns a string owned by the caller
** (arb_free), or NULL when out of memory or f is NULL. */
char *arb_factors_to_text(const arb_factors *f)
{
    if (!f) return NULL;
    arb__buf b;
    arb__buf_init(&b, 0);
    if (put_text(&b, f)) {
        arb__buf_free(&b);
        return NULL;
    }
    return arb__buf_steal(&b);
}

/* ---- JSON --------------------------------------------------------------------------------- */

/* Appends v (stolen; NULL after an allocation failure) to a. Nonzero on failure. */
static int jappend(json_t *a, json_t *v) { return !v || json_array_append_new(a, v); }

static json_t *json_model(const arb_factors *f)
{
    const arb__stepwise_result *r = &f->fit;
    json_t *o = json_object(), *vars = json_array(), *coefs = json_array();
    if (!o || !vars || !coefs) goto fail;
    for (int v = 0; v < f->n_vars; v++) {
        if (!r->in_model[v]) continue;
        json_t *e = json_object();
        int numeric = fv_numeric((size_t)v);
        if (jappend(vars, e) || arb__json_set(e, "variable", json_string(fv_names[v])) ||
            arb__json_set(e, "kind", json_string(numeric ? "numeric" : "categorical")) ||
            arb__json_set(e, "reference", numeric ? json_null()
                                                : arb__json_name(f->levels[v][r->reference[v]])) ||
            arb__json_set(e, "delta_aic", arb__json_metric(r->delta_aic[v])))
            goto fail;
    }
    for (size_t j = 0; j < r->n_coefs; j++) {
        const arb__stepwise_coef *c = &r->coefs[j];
        json_t *e = json_object();
        int is_cat = c->var != SIZE_MAX && !fv_numeric(c->var);
        if (jappend(coefs, e) ||
            arb__json_set(e, "variable", json_string(c->var == SIZE_MAX ? "(intercept)" : fv_names[c->var])) ||
            arb__json_set(e, "level", is_cat ? arb__json_name(f->levels[c->var][c->level]) : json_null()) ||
            arb__json_set(e, "aliased", json_boolean(c->aliased)) || arb__json_set(e, "estimate", arb__json_metric(c->estimate)) ||
            arb__json_set(e, "std_error", arb__json_metric(c->std_error)) || arb__json_set(e, "t", arb__json_metric(c->t)) ||
            arb__json_set(e, "p_value", arb__json_metric(c->p_value)))
            goto fail;
    }
    int bad = arb__json_set(o, "variables", vars);
    bad |= arb__json_set(o, "coefficients", coefs);
    vars = coefs = NULL;
    if (bad || arb__json_set(o, "aic", arb__json_metric(r->aic)) || arb__json_set(o, "r_squared", arb__json_metric(r->r_squared)) ||
        arb__json_set(o, "k", json_integer((json_int_t)r->rank + 1)) ||
        arb__json_set(o, "df_residual", json_integer((json_int_t)r->df_residual)))
        goto fail;
    return o;
fail:
    json_decref(vars);
    json_decref(coefs);
    json_decref(o);
    return NULL;
}

/* Renders the analysis as pretty-printed JSON (keys in README; undefined numbers null). Returns
** a string owned by the caller (arb_free), or NULL when out of memory or f is NULL. */
char *arb_factors_to_json(const arb_factors *f)
{
    if (!f) return NULL;
    char *text = NULL;
    const arb__stepwise_result *r = &f->fit;
    json_t *root = json_object(), *not_used = json_array(), *steps = json_array();
    if (!root || !not_used || !steps) goto done;
    if (f->fitted) {
        for (int v = 0; v < f->n_vars; v++) {
            if (!r->unusable[v]) continue;
            json_t *e = json_object();
            if (jappend(not_used, e) || arb__json_set(e, "variable", json_string(fv_names[v])) ||
                arb__json_set(e, "reason", json_string(unusable_reason(f, v))))
                goto done;
        }
        for (size_t s = 0; s < r->n_steps; s++) {
            json_t *e = json_object();
            if (jappend(steps, e) || arb__json_set(e, "step", json_integer((json_int_t)s + 1)) ||
                arb__json_set(e, "action", json_string(r->steps[s].add ? "add" : "remove")) ||
                arb__json_set(e, "variable", json_string(fv_names[r->steps[s].var])) ||
                arb__json_set(e, "aic", arb__json_metric(r->steps[s].aic)))
                goto done;
        }
    }
    if (arb__json_set(root, "arbiter_version", json_string(ARB_VERSION)) ||
        arb__json_set(root, "target", json_string(f->target)) ||
        arb__json_set(root, "n_groups", json_integer((json_int_t)f->n_groups)) ||
        arb__json_set(root, "n_used", json_integer((json_int_t)f->n_used)) ||
        arb__json_set(root, "n_target_undefined", json_integer((json_int_t)f->n_target_undefined)) ||
        arb__json_set(root, "n_predictor_undefined", json_integer((json_int_t)f->n_predictor_undefined)) ||
        arb__json_set(root, "message", f->message ? json_string(f->message) : json_null()))
        goto done;
    int bad = arb__json_set(root, "not_used", not_used);
    not_used = NULL;
    if (bad || arb__json_set(root, "aic_intercept_only", f->fitted ? arb__json_metric(r->aic_null) : json_null()))
        goto done;
    /* only with families, so that the output without them is what it always was */
    if (f->n_vars == FV__COUNT &&
        arb__json_set(root, "family_variables",
                      arb__json_names(&fv_names[FV_JUDGE_FAMILY], FV__COUNT - FV_JUDGE_FAMILY)))
        goto done;
    bad = arb__json_set(root, "steps", steps);
    steps = NULL;
    if (bad || arb__json_set(root, "model", f->fitted ? json_model(f) : json_null())) goto done;
    text = json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(15));
done:
    json_decref(not_used);
    json_decref(steps);
    json_decref(root);
    return text;
}
