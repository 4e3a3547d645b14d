# Stage: dual-point captures -> per-packet table, flow table, match summary.


rule packets:
    input:
        ingress=capture_input("ingress"),
        egress=capture_input("egress"),
    output:
        packets="data/processed/{campaign}/{run_id}/packets.parquet",
        egress_only="data/processed/{campaign}/{run_id}/packets.egress-only.parquet",
        flows="data/processed/{campaign}/{run_id}/flows.parquet",
        summary="data/processed/{campaign}/{run_id}/match.json",
    log:
        "logs/packets/{campaign}/{run_id}.log",
    conda:
        "../envs/cganalysis.yaml"
    params:
        engine=config["packets"]["engine"],
        max_delay_ms=config["packets"]["max_delay_ms"],
    shell:
        "cganalysis packets {input.ingress} {input.egress} -o {output.packets}"
        " --egress-only {output.egress_only} --flows {output.flows}"
        " --summary {output.summary} --engine {params.engine}"
        " --max-delay-ms {params.max_delay_ms} > {log} 2>&1"
