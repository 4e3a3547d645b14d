# Metrics of a campaign's runs: data/processed/<campaign>/<run_id>/packets.parquet and each
# run's metadata -> results/metrics/<campaign>/<run_id>.json (+ the per-bin series for
# figures). Definitions: docs/metrics.md.
#
# One job per campaign, its runs one after another in one process: starting Python and
# importing polars cost about a second, more than a run's metrics, and a job per run paid
# it for every run (docs/performance.md). A run whose metrics fail fails its campaign's
# job, by name (the campaign's tables need every run's metrics anyway); a run added or
# analysed again redoes its campaign's job (under a second a run). Two runs at a time, in
# threads, while two of its biggest run fit in half the memory available
# (cganalysis.metrics.io.metrics_of_runs).


for _campaign, _runs in campaign_runs().items():

    rule:
        name:
            f"metrics_{_campaign}"
        input:
            packets=[f"data/processed/{_campaign}/{r}/packets.parquet" for r in _runs],
            meta=[ancient(f"data/raw/{_campaign}/{r}/meta.json") for r in _runs],
        output:
            metrics=[f"results/metrics/{_campaign}/{r}.json" for r in _runs],
            timeseries=[
                f"results/metrics/{_campaign}/{r}.timeseries.parquet" for r in _runs
            ],
        log:
            f"logs/metrics/{_campaign}.log",
        conda:
            "../envs/cganalysis.yaml"
        threads: min(2, len(_runs))  # a campaign of one run leaves the other core free
        script:
            "../scripts/metrics.py"
