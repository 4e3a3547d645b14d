//! RFC 8888 against a hand-built packet: decoding in both num_reports modes, encoding,
//! padding, damaged input, arrival-time offsets.

use super::*;

/// A report built by hand from the RFC's figure: sender SSRC 0x11223344, stream SSRC
/// 0xAABBCCDD, begin_seq 65534, three packets: 65534 received ECT(1) 2/1024 s before
/// the RTS, 65535 lost, 0 received CE 0 s before; RTS 0x12345678.
fn hand_built(num_reports_field: u16) -> Vec<u8> {
    let mut b = vec![
        0x80 | 11,
        205,
        0x00,
        0x06, // 7 words - 1
        0x11,
        0x22,
        0x33,
        0x44,
        0xAA,
        0xBB,
        0xCC,
        0xDD,
        0xFF,
        0xFE,
    ];
    b.extend_from_slice(&num_reports_field.to_be_bytes());
    b.extend_from_slice(&(0x8000u16 | (1 << 13) | 2).to_be_bytes());
    b.extend_from_slice(&0u16.to_be_bytes());
    b.extend_from_slice(&(0x8000u16 | (3 << 13)).to_be_bytes());
    b.extend_from_slice(&[0, 0]); // padding: 3 blocks
    b.extend_from_slice(&0x1234_5678u32.to_be_bytes());
    b
}

fn expected() -> Feedback {
    Feedback {
        sender_ssrc: 0x1122_3344,
        streams: vec![StreamReport {
            ssrc: 0xAABB_CCDD,
            begin_seq: 65_534,
            blocks: vec![
                MetricBlock {
                    received: true,
                    ecn: 1,
                    ato: 2,
                },
                MetricBlock::MISSING,
                MetricBlock {
                    received: true,
                    ecn: 3,
                    ato: 0,
                },
            ],
        }],
        report_ts: 0x1234_5678,
    }
}

#[test]
fn decodes_hand_built_packet_in_both_modes() {
    assert_eq!(
        Feedback::decode(&hand_built(3), NumReports::Count).unwrap(),
        expected()
    );
    assert_eq!(
        Feedback::decode(&hand_built(2), NumReports::CountMinusOne).unwrap(),
        expected()
    );
}

#[test]
fn encodes_to_the_hand_built_bytes() {
    let mut out = Vec::new();
    expected().encode(NumReports::Count, &mut out);
    assert_eq!(out, hand_built(3));
    out.clear();
    expected().encode(NumReports::CountMinusOne, &mut out);
    assert_eq!(out, hand_built(2));
}

#[test]
fn even_block_count_has_no_padding_and_round_trips() {
    let mut fb = expected();
    fb.streams[0].blocks.push(MetricBlock {
        received: true,
        ecn: 2,
        ato: ATO_OVERRANGE,
    });
    fb.streams.push(StreamReport {
        ssrc: 9,
        begin_seq: 10,
        blocks: vec![MetricBlock::MISSING; 5],
    });
    for mode in [NumReports::Count, NumReports::CountMinusOne] {
        let mut out = Vec::new();
        fb.encode(mode, &mut out);
        assert_eq!(out.len(), fb.encoded_len());
        assert_eq!(out.len() % 4, 0);
        assert_eq!(Feedback::decode(&out, mode).unwrap(), fb);
    }
}

#[test]
fn mismatched_mode_or_damage_is_rejected() {
    // Read with the other convention, an odd block count is ambiguous (the padding
    // reads as one more, missing, block), an even one is not.
    let odd = Feedback::decode(&hand_built(3), NumReports::CountMinusOne).unwrap();
    assert_eq!(odd.streams[0].blocks.len(), 4);
    assert_eq!(odd.streams[0].blocks[3], MetricBlock::MISSING);
    let mut even = expected();
    even.streams[0].blocks.push(MetricBlock::MISSING);
    let mut out = Vec::new();
    even.encode(NumReports::Count, &mut out);
    assert_eq!(
        Feedback::decode(&out, NumReports::CountMinusOne),
        Err(DecodeError::Truncated)
    );
    let mut bad = hand_built(3);
    bad[3] = 9;
    assert_eq!(
        Feedback::decode(&bad, NumReports::Count),
        Err(DecodeError::BadLength)
    );
    assert_eq!(
        Feedback::decode(&bad[..8], NumReports::Count),
        Err(DecodeError::TooShort)
    );
    let mut not_ccfb = hand_built(3);
    not_ccfb[0] = 0x80 | 15;
    assert_eq!(
        Feedback::decode(&not_ccfb, NumReports::Count),
        Err(DecodeError::NotCcfb)
    );
}

#[test]
fn ato_conversions() {
    assert_eq!(ato_from_ns(-1), ATO_UNAVAILABLE);
    assert_eq!(ato_from_ns(0), 0);
    assert_eq!(ato_from_ns(500_000_000), 512);
    // Truncated: 1.9 units is 1, so the recovered arrival is at or after the true one.
    assert_eq!(ato_from_ns(1_900_000_000 / 1024), 1);
    assert_eq!(ato_from_ns(8 * 1_000_000_000), ATO_OVERRANGE);
    assert_eq!(ato_to_ns(512), Some(500_000_000));
    assert_eq!(ato_to_ns(ATO_OVERRANGE), None);
    assert_eq!(ato_to_ns(ATO_UNAVAILABLE), None);
}
