# Published datasets (datasets/<campaign>-<YYYY-MM-DD>/, docs/datasets.md), rendered
# without their raw runs: the tables and figures their campaign asks for (`artefacts:`) into
# results/published/<dataset>/<table>.{csv,md,tex,html} and <figure>.{pdf,png}, and the check of the numbers
# README.md and docs/results.md print from them (cganalysis dataset check-docs) into
# results/published/printed-numbers.txt. `published:` names the datasets (`all`: every
# folder of datasets/ with a datasheet); profiles/published renders them and runs nothing
# else. The helpers (published_names, published_outputs, ...) are in rules/common.smk.


rule published_table:
    input:
        metrics=lambda wc: published_metrics(wc.dataset),
        checksums="datasets/{dataset}/SHA256SUMS",
        # the published datasets a table reads besides its own (tma_cells_out's factors)
        others=lambda wc: [
            f"datasets/{d}/SHA256SUMS" for d in artefacts.by_name(wc.table).datasets
        ],
        style="configs/plotting.yaml",
    output:
        multiext("results/published/{dataset}/{table}", ".csv", ".md", ".tex", ".html"),
    log:
        "logs/published_table/{dataset}/{table}.log",
    wildcard_constraints:
        table=TABLE_NAMES,
    conda:
        "../envs/cganalysis.yaml"
    params:
        artefact=lambda wc: wc.table,
    script:
        "../scripts/artefact.py"


rule published_figure:
    input:
        metrics=lambda wc: published_metrics(wc.dataset),
        timeseries=lambda wc: published_timeseries(wc.dataset, wc.figure),
        checksums="datasets/{dataset}/SHA256SUMS",
        style="configs/plotting.yaml",
    output:
        multiext("results/published/{dataset}/{figure}", ".pdf", ".png"),
    log:
        "logs/published_figure/{dataset}/{figure}.log",
    wildcard_constraints:
        figure=FIGURE_NAMES,
    conda:
        "../envs/cganalysis.yaml"
    params:
        artefact=lambda wc: wc.figure,
    script:
        "../scripts/artefact.py"


rule published_check_docs:
    input:
        checksums=[f"datasets/{n}/SHA256SUMS" for n in published_names()],
        docs=["README.md", "docs/results.md"],
    output:
        "results/published/printed-numbers.txt",
    log:
        "logs/published_check_docs.log",
    conda:
        "../envs/cganalysis.yaml"
    shell:
        "cganalysis dataset check-docs -o {output:q} > {log:q} 2>&1"
