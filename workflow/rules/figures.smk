# Tables and figures of the papers from the metrics of a campaign's runs:
# results/tables/<campaign>/<table>.{csv,md,tex} and results/figures/<campaign>/<name>.{pdf,png}.
# campaign_metrics(campaign) (rules/common.smk) lists results/metrics/<campaign>/<run_id>.json
# for every run of the campaign.


rule timeseries_figure:
    input:
        timeseries="results/metrics/{campaign}/{run_id}.timeseries.parquet",
        metrics="results/metrics/{campaign}/{run_id}.json",
        style="configs/plotting.yaml",
    output:
        multiext("results/figures/{campaign}/{run_id}.timeseries", ".pdf", ".png"),
    log:
        "logs/timeseries_figure/{campaign}/{run_id}.log",
    wildcard_constraints:
        run_id=r"[^/.]+",
    conda:
        "../envs/cganalysis.yaml"
    script:
        "../scripts/timeseries_figure.py"


rule tma_table2:
    input:
        metrics=lambda wc: campaign_metrics(wc.campaign),
        style="configs/plotting.yaml",
    output:
        multiext("results/tables/{campaign}/tma_table2", ".csv", ".md", ".tex"),
    log:
        "logs/tma_table2/{campaign}.log",
    conda:
        "../envs/cganalysis.yaml"
    script:
        "../scripts/tma_table2.py"


rule tma_table1:
    input:
        metrics=lambda wc: campaign_metrics(wc.campaign),
        style="configs/plotting.yaml",
    output:
        multiext("results/tables/{campaign}/tma_table1", ".csv", ".md", ".tex"),
    log:
        "logs/tma_table1/{campaign}.log",
    conda:
        "../envs/cganalysis.yaml"
    script:
        "../scripts/tma_table1.py"


rule xu_tables:
    input:
        metrics=lambda wc: campaign_metrics(wc.campaign),
        style="configs/plotting.yaml",
    output:
        expand(
            "results/tables/{{campaign}}/xu_table{n}.{ext}",
            n=(2, 3, 4, 5),
            ext=("csv", "md", "tex"),
        ),
    log:
        "logs/xu_tables/{campaign}.log",
    conda:
        "../envs/cganalysis.yaml"
    script:
        "../scripts/xu_tables.py"


rule xu_figures:
    input:
        metrics=lambda wc: campaign_metrics(wc.campaign),
        style="configs/plotting.yaml",
    output:
        fairness=multiext("results/figures/{campaign}/xu_fig3_fairness", ".pdf", ".png"),
        adaptation=multiext(
            "results/figures/{campaign}/xu_fig4_adaptation", ".pdf", ".png"
        ),
        adaptiveness=multiext(
            "results/figures/{campaign}/xu_fig5_adaptiveness", ".pdf", ".png"
        ),
    log:
        "logs/xu_figures/{campaign}.log",
    conda:
        "../envs/cganalysis.yaml"
    script:
        "../scripts/xu_figures.py"
