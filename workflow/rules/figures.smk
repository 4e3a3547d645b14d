# Tables and figures of the papers from the metrics of a campaign's runs:
# results/tables/<campaign>/<table>.{csv,md,tex,html} and results/figures/<campaign>/<name>.{pdf,png}.
# campaign_metrics(campaign) (rules/common.smk) lists results/metrics/<campaign>/<run_id>.json
# for every run of the campaign.


# Each run's figures (report/runfigures.py's RUN_FIGURES: the TMA time series), from its series and
# metrics: results/figures/<campaign>/<run_id>.<run_figure>.{pdf,png}. One job per campaign
# and figure, its runs drawn one after another in one process: importing matplotlib and
# polars costs more than drawing a run (1.3 s against 0.85 s here).
for _campaign, _runs in campaign_runs().items():
    for _figure in (f.name for f in runfigures.RUN_FIGURES):

        rule:
            name:
                f"run_figure_{_figure}_{_campaign}"
            input:
                timeseries=[
                    f"results/metrics/{_campaign}/{r}.timeseries.parquet"
                    for r in _runs
                ],
                metrics=[f"results/metrics/{_campaign}/{r}.json" for r in _runs],
                style="configs/plotting.yaml",
            output:
                [
                    f"results/figures/{_campaign}/{r}.{_figure}.{ext}"
                    for r in _runs
                    for ext in ("pdf", "png")
                ],
            log:
                f"logs/run_figure/{_campaign}/{_figure}.log",
            conda:
                "../envs/cganalysis.yaml"
            params:
                figure=_figure,
            script:
                "../scripts/run_figure.py"


# One rule per kind of artefact; which tables and figures exist, and how each is made, is
# the registry's (cganalysis.report.artefacts; TABLE_NAMES and FIGURE_NAMES in common.smk).
rule table:
    input:
        metrics=lambda wc: campaign_metrics(wc.campaign),
        # the published datasets a table reads besides the runs (tma_cells_out's factors)
        others=lambda wc: [
            f"datasets/{d}/SHA256SUMS" for d in artefacts.by_name(wc.table).datasets
        ],
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
        timeseries=lambda wc: campaign_timeseries(wc.campaign, wc.figure),
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
