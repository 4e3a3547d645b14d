# The Snakemake report (`snakemake --report report.html`): every table and figure with its
# caption (workflow/report/*.rst). Snakemake only shows outputs flagged with report(), so
# these rules copy the rendered artefacts into results/report/<campaign>/ with the flag;
# result_outputs() (rules/common.smk) asks for them. Which artefact is in which category is
# the registry's (cganalysis.report.artefacts): the *_REPORT names below. Tables go in as
# their HTML page (the report shows it; a CSV it would only offer as a download), figures
# as PNG; each is labelled with the paper's name for it (Table II, Fig. 3) or its run.
# tests/integration/test_workflow.py opens the report in a browser and visits every entry.


rule report_tma_table:
    input:
        "results/tables/{campaign}/{table}.html",
    output:
        report(
            "results/report/{campaign}/{table}.html",
            caption="../report/tma_table.rst",
            category="TMA 2024",
            subcategory="{campaign}",
            labels=artefact_label,
        ),
    log:
        "logs/report/{campaign}/{table}.log",
    wildcard_constraints:
        table=TMA_TABLES_REPORT,
    conda:
        "../envs/cganalysis.yaml"
    shell:
        "cp {input:q} {output:q} 2> {log:q}"


rule report_xu_table:
    input:
        "results/tables/{campaign}/{table}.html",
    output:
        report(
            "results/report/{campaign}/{table}.html",
            caption="../report/xu_table.rst",
            category="Xu & Claypool 2022",
            subcategory="{campaign}",
            labels=artefact_label,
        ),
    log:
        "logs/report/{campaign}/{table}.log",
    wildcard_constraints:
        table=XU_TABLES_REPORT,
    conda:
        "../envs/cganalysis.yaml"
    shell:
        "cp {input:q} {output:q} 2> {log:q}"


rule report_xu_figure:
    input:
        "results/figures/{campaign}/{figure}.png",
    output:
        report(
            "results/report/{campaign}/{figure}.png",
            caption="../report/xu_figure.rst",
            category="Xu & Claypool 2022",
            subcategory="{campaign}",
            labels=artefact_label,
        ),
    log:
        "logs/report/{campaign}/{figure}.log",
    wildcard_constraints:
        figure=XU_FIGURES_REPORT,
    conda:
        "../envs/cganalysis.yaml"
    shell:
        "cp {input:q} {output:q} 2> {log:q}"


rule report_tma_figure:
    input:
        "results/figures/{campaign}/{figure}.png",
    output:
        report(
            "results/report/{campaign}/{figure}.png",
            caption="../report/tma_figure.rst",
            category="TMA 2024",
            subcategory="{campaign}",
            labels=artefact_label,
        ),
    log:
        "logs/report/{campaign}/{figure}.log",
    wildcard_constraints:
        figure=TMA_FIGURES_REPORT,
    conda:
        "../envs/cganalysis.yaml"
    shell:
        "cp {input:q} {output:q} 2> {log:q}"


# The caption is the time series' (the one per-run figure of the registry so far).
rule report_run_figure:
    input:
        "results/figures/{campaign}/{run_id}.{run_figure}.png",
    output:
        report(
            "results/report/{campaign}/{run_id}.{run_figure}.png",
            caption="../report/timeseries.rst",
            category="Runs",
            subcategory="{campaign}",
            labels={"run": "{run_id}"},
        ),
    log:
        "logs/report/{campaign}/{run_id}.{run_figure}.log",
    wildcard_constraints:
        run_id=r"[A-Za-z0-9][A-Za-z0-9_-]*",  # the grammar's names without a dot
        run_figure=RUN_FIGURE_NAMES,
    conda:
        "../envs/cganalysis.yaml"
    shell:
        "cp {input:q} {output:q} 2> {log:q}"
