# Tables and figures of the papers from the metrics of a campaign's runs:
# results/tables/<campaign>/<table>.{csv,md,tex,html} and results/figures/<campaign>/<name>.{pdf,png}.
# campaign_metrics(campaign) (rules/common.smk) lists results/metrics/<campaign>/<run_id>.json
# for every run of the campaign.


# Each run's figures (the registry's RUN_FIGURES: the TMA time series), from its series and
# metrics: results/figures/<campaign>/<run_id>.<run_figure>.{pdf,png}.
rule run_figure:
    input:
        timeseries="results/metrics/{campaign}/{run_id}.timeseries.parquet",
        metrics="results/metrics/{campaign}/{run_id}.json",
        style="configs/plotting.yaml",
    output:
        multiext("results/figures/{campaign}/{run_id}.{run_figure}", ".pdf", ".png"),
    log:
        "logs/run_figure/{campaign}/{run_id}.{run_figure}.log",
    wildcard_constraints:
        run_id=r"[^/.]+",
        run_figure=RUN_FIGURE_NAMES,
    conda:
        "../envs/cganalysis.yaml"
    script:
        "../scripts/run_figure.py"


# One rule per kind of artefact; which tables and figures exist, and how each is made, is
# the registry's (cganalysis.report.artefacts; TABLE_NAMES and FIGURE_NAMES in common.smk).
rule table:
    input:
        metrics=lambda wc: campaign_metrics(wc.campaign),
        style="configs/plotting.yaml",
    output:
        multiext("results/tables/{campaign}/{table}", ".csv", ".md", ".tex", ".html"),
    log:
        "logs/table/{campaign}/{table}.log",
    wildcard_constraints:
        table=TABLE_NAMES,
    conda:
        "../envs/cganalysis.yaml"
    params:
        artefact=lambda wc: wc.table,
    script:
        "../scripts/artefact.py"


rule figure:
    input:
        metrics=lambda wc: campaign_metrics(wc.campaign),
        style="configs/plotting.yaml",
    output:
        multiext("results/figures/{campaign}/{figure}", ".pdf", ".png"),
    log:
        "logs/figure/{campaign}/{figure}.log",
    wildcard_constraints:
        figure=FIGURE_NAMES,
    conda:
        "../envs/cganalysis.yaml"
    params:
        artefact=lambda wc: wc.figure,
    script:
        "../scripts/artefact.py"
