# cganalysis workflow: raw dual-point captures -> per-packet tables -> metrics -> figures.
#
# Path grammar:
#   data/raw/<campaign>/_calibration/<key>/calibration.json  one per bottleneck (testbed)
#   data/raw/<campaign>/<run_id>/ingress*.pcap[ng]       captures entering the bottleneck
#   data/raw/<campaign>/<run_id>/egress*.pcap[ng]        captures leaving it (write-once)
#   data/processed/<campaign>/<run_id>/packets.parquet   one row per ingress packet
#   data/processed/<campaign>/<run_id>/flows.parquet     one row per flow
#   data/processed/<campaign>/<run_id>/match.json        match summary (loss, capture drops)
#   results/metrics/<campaign>/<run_id>.json             the papers' metrics of one run
#   results/figures/<campaign>/<run_id>.timeseries.pdf   throughput / delay / loss over time
#   results/tables/<campaign>/<table>.{csv,md,tex,html}  the papers' tables
#   results/figures/<campaign>/<figure>.{pdf,png}        the papers' figures
#   logs/<rule>/<campaign>/<run_id>.log                  every rule's log (a job per run)
#   logs/metrics/<campaign>.log, logs/run_figure/<campaign>/<figure>.log   a campaign's
#                                                        metrics and per-run figures
#   results/published/<dataset>/<table>.{csv,md,tex,html} tables of datasets/<dataset>/
#   results/published/<dataset>/<figure>.{pdf,png}      figures of datasets/<dataset>/
# <campaign>, <run_id> and <dataset> are letters, digits, '.', '_' and '-', never first a
# '-' or '.'; a capture is <point>.pcap[ng] or <point><same letters>.pcap[ng]. Any other
# name found in data/raw stops the workflow, named (cganalysis.rawnames; docs/security.md).
#
# `snakemake --cores 4` builds `all`; `snakemake -n` shows what would run;
# `snakemake --report report.html` the report of every table and figure (results/report/).

from snakemake.utils import min_version

min_version("9.0")


configfile: "configs/config.yaml"


report: "workflow/report/workflow.rst"


# On a cluster executor (profiles/slurm) these stay on the submitting machine: experiments
# and calibrations need the testbed, the report copies and `all` are trivial.
localrules:
    all,
    experiment,
    calibrate,
    report_tma_table,
    report_xu_table,
    report_xu_figure,
    report_run_figure,
    published_check_docs,


include: "workflow/rules/common.smk"
include: "workflow/rules/experiments.smk"
include: "workflow/rules/packets.smk"
include: "workflow/rules/metrics.smk"
include: "workflow/rules/figures.smk"
include: "workflow/rules/report.smk"
include: "workflow/rules/published.smk"


rule all:
    default_target: True
    input:
        EXPERIMENT_PLAN.meta_files(),
        processed_outputs(),
        result_outputs(),
        published_outputs(),
