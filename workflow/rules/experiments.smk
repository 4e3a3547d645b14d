# Stage: campaigns -> raw runs, on the testbed (cganalysis experiment; docs/testbed.md).
#
#   data/raw/<campaign>/_calibration/<key>/calibration.json   one per bottleneck config
#   data/raw/<campaign>/<run_id>/{ingress,egress}.pcap, meta.json, iperf3-*.json, ...
#
# <campaign> is the campaign's name plus experiments.campaign_suffix (the quick profile
# writes to <name>-quick, so smoke runs never mix with full ones). Every job holds the
# testbed (resources: testbed=1; the workflow profiles cap the pool at 1), so extra cores
# never run two experiments, or an experiment and a calibration, at once; the runner's
# testbed lock (cganalysis.testbed.shared.lock) makes any other one wait. With a testbed pool
# (experiments.testbeds, and --resources testbed=N for N testbeds) each job takes the
# first free testbed of the pool, and its meta.json names it. A run or calibration
# already in data/raw is source data: no rule can make it (planned_campaigns_regex), so no
# change of code or params can remake it ('protected' alone does not stop root). One that
# another process finishes after this Snakemake planned it survives too: its outputs are
# update() (not removed before the job), the runner refuses it under the run's own lock,
# and profiles/default keeps a failed job's outputs (keep-incomplete).
# EXPERIMENT_PLAN (rules/common.smk) lists what the campaigns plan.


rule calibrate:
    input:
        campaign=lambda wc: ancient(
            EXPERIMENT_PLAN.calibration_job(wc.campaign, wc.key).campaign_file
        ),
    output:
        update(protected("data/raw/{campaign}/_calibration/{key}/calibration.json")),
    log:
        "logs/calibrate/{campaign}/{key}.log",
    wildcard_constraints:
        campaign=planned_campaigns_regex(),
        key=r"cal-[0-9a-f]+",
    conda:
        "../envs/cganalysis.yaml"
    resources:
        testbed=1,
    params:
        run=lambda wc: EXPERIMENT_PLAN.calibration_job(wc.campaign, wc.key).run_id,
        dir=lambda wc, output: Path(output[0]).parent,
        flags=EXPERIMENT_PLAN.testbed_flags(),
    shell:
        "cganalysis testbed calibrate {input.campaign:q} --run {params.run:q}"
        " -o {params.dir:q} {params.flags:q} > {log:q} 2>&1"


rule experiment:
    input:
        campaign=lambda wc: ancient(
            EXPERIMENT_PLAN.job(wc.campaign, wc.run_id).campaign_file
        ),
        calibration=lambda wc: EXPERIMENT_PLAN.calibration_file(wc.campaign, wc.run_id),
    # update(): Snakemake removes a job's existing outputs before it starts; a run that
    # another process (a second Snakemake, another clone) finished after this one planned
    # it must stay, and the runner then refuses it untouched (rundir.claimed).
    output:
        ingress=update(protected("data/raw/{campaign}/{run_id}/ingress.pcap")),
        egress=update(protected("data/raw/{campaign}/{run_id}/egress.pcap")),
        meta=update(protected("data/raw/{campaign}/{run_id}/meta.json")),
    log:
        "logs/experiment/{campaign}/{run_id}.log",
    wildcard_constraints:
        campaign=planned_campaigns_regex(),
        run_id=r"[A-Za-z0-9][A-Za-z0-9._-]*",
    conda:
        "../envs/cganalysis.yaml"
    resources:
        testbed=1,
    params:
        run=lambda wc: EXPERIMENT_PLAN.job(wc.campaign, wc.run_id).run_id,
        dir=lambda wc, output: Path(output.meta).parent,
        flags=lambda wc, input: EXPERIMENT_PLAN.experiment_flags(input.calibration),
    shell:
        "cganalysis experiment {input.campaign:q} --run {params.run:q}"
        " --campaign {wildcards.campaign:q} -o {params.dir:q} {params.flags:q}"
        " > {log:q} 2>&1"
