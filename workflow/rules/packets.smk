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
        "cganalysis packets {input.ingress:q} {input.egress:q} -o {output.packets:q}"
        " --egress-only {output.egress_only:q} --flows {output.flows:q}"
        " --summary {output.summary:q} --engine {params.engine:q}"
        " --max-delay-ms {params.max_delay_ms:q} > {log:q} 2>&1"
