/*
** test_bias_recovery.c -- simulated judges with a known injected bias, judged over real HTTP by
** the in-process simulator on the demo benchmark, must be measured by the audit within stated
** tolerances: position bias and preference fairness (METHODS §3, §5) in sign and size, and
** repetition stability of 1 for a deterministic judge and below 1 for a sampling one.
*/
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "testutil.h"

typedef struct fixture {
    char dir[64];
    arb_store *store;
    arb_dataset *ds;
    arb_sim_server *srv;
    arb_sim_judge judges[3];
    char url[64];
} fixture;

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    const char *src = getenv("ARB_SOURCE_DIR");
    char items[512], answers[512], db[128];
    snprintf(items, sizeof items, "%s/demo/items.jsonl", src ? src : ".");
    snprintf(answers, sizeof answers, "%s/demo/answers.jsonl", src ? src : ".");
    assert_int_equal(arb_test_make_dir("bias", f->dir, sizeof f->dir), 0);
    snprintf(db, sizeof db, "%s/b.db", f->dir);
    f->ds = arb_dataset_create();
    if (arb_dataset_load(f->ds, items, answers) != ARB_OK)
        fail_msg("demo data: %s", arb_dataset_errmsg(f->ds));
    const char *specs[] = {"fair:skill=4,bias=0,tie=0.3", "primacy:skill=4,bias=0.9,tie=0.3",
                           "recency:skill=4,bias=-0.9,tie=0.3"};
    for (int i = 0; i < 3; i++) assert_int_equal(arb_sim_judge_parse(specs[i], &f->judges[i], NULL), ARB_OK);
    for (int i = 0; i < 3; i++) f->judges[i].latency_ms = 0;
    arb_sim_params sp = arb_sim_default_params();
    sp.seed = 11;
    sp.judges = f->judges;
    sp.n_judges = 3;
    sp.answers_oracle = f->ds;
    assert_int_equal(arb_sim_server_start(&sp, &f->srv, NULL), ARB_OK);
    snprintf(f->url, sizeof f->url, "http://127.0.0.1:%d/v1", arb_sim_server_port(f->srv));
    assert_int_equal(arb_store_open(db, &f->store), ARB_OK);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    arb_store_close(f->store);
    arb_sim_server_stop(f->srv);
    arb_dataset_destroy(f->ds);
    arb_test_remove_dir(f->dir);
    free(f);
    return 0;
}

static void judge_all(fixture *f, const char *model, const char *name, double temperature, int reps)
{
    static const char *const candidates[] = {"atlas-large", "cedar-small", "drift-tiny"};
    for (int k = 0; k < 3; k++) {
        arb_sbs_params p = arb_sbs_default_params();
        p.candidate = candidates[k];
        p.baseline = "birch-medium";
        p.judge.base_url = f->url;
        p.judge.model = model;
        p.judge.name = name;
        p.judge.sampling.temperature = temperature;
        p.reps = reps;
        p.progress = 0;
        p.client.jobs = 8;
        arb_run_stats st;
        if (arb_sbs_run(f->store, f->ds, &p, &st) != ARB_OK)
            fail_msg("sbs: %s", arb_store_errmsg(f->store));
    }
}

static const arb_audit_row *row_of(const arb_audit *a, const char *judge)
{
    for (size_t i = 0; i < arb_audit_count(a); i++)
        if (!strcmp(arb_audit_row_at(a, i)->judge, judge)) return arb_audit_row_at(a, i);
    fail_msg("no row for %s", judge);
    return NULL;
}

/* Tolerances (120 pairs per judge; the sampling spread of PBias@AB and PF there is about 0.07):
** an unbiased judge has |PBias@AB| < 0.2 and |PF| < 0.2; bias ±0.9 gives |PBias@AB| > 0.25 and
** |PF| > 0.25 with the injected sign (PF negative for primacy). The biased judges are also less position-consistent than the fair one. */
static void injected_bias_is_measured(void **state)
{
    fixture *f = *state;
    judge_all(f, "fair", "fair", 0, 1);
    judge_all(f, "primacy", "primacy", 0, 1);
    judge_all(f, "recency", "recency", 0, 1);
    arb_audit_params p = arb_audit_default_params();
    p.by = ARB_BY_JUDGE;
    arb_audit *a = NULL;
    assert_int_equal(arb_audit_compute(f->store, &p, &a), ARB_OK);
    const arb_audit_row *fair = row_of(a, "fair"), *pri = row_of(a, "primacy"),
                        *rec = row_of(a, "recency");
    double fb = fair->m.value[ARB_M_PBIAS_AB], fpf = fair->m.value[ARB_M_PF];
    double pb = pri->m.value[ARB_M_PBIAS_AB], ppf = pri->m.value[ARB_M_PF];
    double rb = rec->m.value[ARB_M_PBIAS_AB], rpf = rec->m.value[ARB_M_PF];
    print_message("fair PBias %+.3f PF %+.3f PC %.3f | primacy %+.3f %+.3f %.3f | recency %+.3f %+.3f %.3f\n",
                  fb, fpf, fair->m.value[ARB_M_PC], pb, ppf, pri->m.value[ARB_M_PC], rb, rpf,
                  rec->m.value[ARB_M_PC]);
    assert_true(fabs(fb) < 0.2);
    assert_true(fabs(fpf) < 0.2);
    assert_true(pb > 0.25);
    assert_true(ppf < -0.25);
    assert_true(rb < -0.25);
    assert_true(rpf > 0.25);
    assert_true(pri->m.pcn > pri->m.rcn);
    assert_true(rec->m.rcn > rec->m.pcn);
    assert_true(fair->m.value[ARB_M_PC] > pri->m.value[ARB_M_PC]);
    assert_true(fair->m.value[ARB_M_PC] > rec->m.value[ARB_M_PC]);
    arb_audit_destroy(a);
}

/* Three repetitions: at temperature 0 the simulator answers a prompt the same way each time
** (RS exactly 1); at temperature 1 its replies vary, so 1/5 <= RS < 1. */
static void repetition_stability_is_measured(void **state)
{
    fixture *f = *state;
    judge_all(f, "fair", "fair-t0", 0, 3);
    judge_all(f, "fair", "fair-t1", 1.0, 3);
    arb_audit_params p = arb_audit_default_params();
    p.by = ARB_BY_JUDGE;
    arb_audit *a = NULL;
    assert_int_equal(arb_audit_compute(f->store, &p, &a), ARB_OK);
    const arb_audit_row *t0 = row_of(a, "fair-t0"), *t1 = row_of(a, "fair-t1");
    assert_int_equal(t0->m.n_rep_queries, 240); /* 40 items x 3 candidates x 2 orders */
    assert_true(t0->m.value[ARB_M_RS] == 1.0);
    double rs = t1->m.value[ARB_M_RS];
    print_message("RS at temperature 1: %.3f\n", rs);
    assert_true(rs >= 0.2 && rs < 1.0);
    arb_audit_destroy(a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(injected_bias_is_measured, setup, teardown),
        cmocka_unit_test_setup_teardown(repetition_stability_is_measured, setup, teardown),
    };
    if (getenv("ARB_TEST")) cmocka_set_test_filter(getenv("ARB_TEST"));
    return cmocka_run_group_tests(tests, NULL, NULL);
}
