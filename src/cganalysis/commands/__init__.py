"""One module per ``cganalysis`` subcommand (see :mod:`cganalysis.cli`)."""

#: Subcommands, in the order ``--help`` lists them, with their one-line help.
COMMANDS: dict[str, str] = {
    "packets": "match ingress and egress captures into a per-packet delay/loss/ECN table",
    "inspect": "describe one capture: link type, packets, duration, flows and rates",
    "metrics": "queuing delay, bitrate, loss, utilisation, fairness and response of one run",
    "tables": "TMA 2024 Tables I-II and Xu & Claypool Tables 2-6 from metrics files",
    "figures": "TMA 2024 Figs. 4, 6-11, a run's time series, Xu & Claypool Figs. 3-5 (PDF, PNG)",
    "testbed": "probe the host, check or render a run's bottleneck, calibrate, clean up",
    "experiment": (
        "run one experiment (testbed, bottleneck, captures, traffic) into a run directory"
    ),
    "cg": "CG traffic generator: RTP video with SCReAM v2, constant rate, TFRC or gTFRC",
    "dataset": "export a campaign as a publication dataset (parquet, metrics, datasheet)",
    "compare": "a new run or campaign against a baseline dataset, cell by cell, with its spread",
    "trace": "cellular link traces (mahimahi format): generate from the model, statistics, find",
    "schema": "the JSON schema of a run's metrics document or meta.json, derived from their types",
}
