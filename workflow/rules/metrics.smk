# Metrics of one run: data/processed/<campaign>/<run_id>/packets.parquet and the run's
# metadata -> results/metrics/<campaign>/<run_id>.json (+ the per-bin series for figures).
# Definitions: docs/metrics.md.


rule metrics:
    input:
        packets="data/processed/{campaign}/{run_id}/packets.parquet",
        meta=ancient("data/raw/{campaign}/{run_id}/meta.json"),
    output:
        metrics="results/metrics/{campaign}/{run_id}.json",
        timeseries="results/metrics/{campaign}/{run_id}.timeseries.parquet",
    log:
        "logs/metrics/{campaign}/{run_id}.log",
    wildcard_constraints:
        run_id=r"[^/.]+",
    conda:
        "../envs/cganalysis.yaml"
    script:
        "../scripts/metrics.py"
