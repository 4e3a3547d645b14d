//! The link layers a capture may use: which ones are decoded, and the LINKTYPE_ names of
//! the others for error messages.

/// The link layers we can decode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Link {
    /// LINKTYPE_ETHERNET (1), with any stack of 802.1Q / 802.1ad / 0x9100 tags.
    Ethernet,
    /// LINKTYPE_LINUX_SLL (113): 16-byte header, protocol at offset 14.
    LinuxSll,
    /// LINKTYPE_LINUX_SLL2 (276): 20-byte header, protocol at offset 0.
    LinuxSll2,
    /// LINKTYPE_RAW (101, and the historical DLT values 12 and 14): version nibble decides.
    RawIp,
    /// LINKTYPE_IPV4 (228).
    Ipv4,
    /// LINKTYPE_IPV6 (229).
    Ipv6,
}

impl Link {
    /// The decoder of a pcap/pcapng link type (low 16 bits), if supported.
    pub fn from_linktype(link_type: u32) -> Option<Link> {
        match link_type {
            1 => Some(Link::Ethernet),
            113 => Some(Link::LinuxSll),
            276 => Some(Link::LinuxSll2),
            12 | 14 | 101 => Some(Link::RawIp),
            228 => Some(Link::Ipv4),
            229 => Some(Link::Ipv6),
            _ => None,
        }
    }
}

/// The LINKTYPE_ name of some common link types (for error messages).
pub fn linktype_name(link_type: u32) -> Option<&'static str> {
    const USER: [&str; 16] = [
        "USER0", "USER1", "USER2", "USER3", "USER4", "USER5", "USER6", "USER7", "USER8", "USER9",
        "USER10", "USER11", "USER12", "USER13", "USER14", "USER15",
    ];
    Some(match link_type {
        0 => "NULL",
        1 => "ETHERNET",
        3 => "AX25",
        6 => "IEEE802_5",
        7 => "ARCNET_BSD",
        8 => "SLIP",
        9 => "PPP",
        10 => "FDDI",
        12 | 14 | 101 => "RAW",
        50 => "PPP_HDLC",
        51 => "PPP_ETHER",
        100 => "ATM_RFC1483",
        104 => "C_HDLC",
        105 => "IEEE802_11",
        107 => "FRELAY",
        108 => "LOOP",
        113 => "LINUX_SLL",
        114 => "LTALK",
        119 => "IEEE802_11_PRISM",
        122 => "IP_OVER_FC",
        123 => "SUNATM",
        127 => "IEEE802_11_RADIOTAP",
        129 => "ARCNET_LINUX",
        138 => "APPLE_IP_OVER_IEEE1394",
        139 => "MTP2_WITH_PHDR",
        140 => "MTP2",
        141 => "MTP3",
        142 => "SCCP",
        143 => "DOCSIS",
        144 => "LINUX_IRDA",
        147..=162 => USER[(link_type - 147) as usize],
        163 => "IEEE802_11_AVS",
        165 => "BACNET_MS_TP",
        166 => "PPP_PPPD",
        169 => "GPRS_LLC",
        177 => "LINUX_LAPD",
        187 => "BLUETOOTH_HCI_H4",
        189 => "USB_LINUX",
        192 => "PPI",
        195 => "IEEE802_15_4_WITHFCS",
        196 => "SITA",
        197 => "ERF",
        201 => "BLUETOOTH_HCI_H4_WITH_PHDR",
        202 => "AX25_KISS",
        204 => "PPP_WITH_DIR",
        209 => "IPMB_LINUX",
        215 => "IEEE802_15_4_NONASK_PHY",
        220 => "USB_LINUX_MMAPPED",
        224 => "FC_2",
        225 => "FC_2_WITH_FRAME_DELIMS",
        226 => "IPNET",
        227 => "CAN_SOCKETCAN",
        228 => "IPV4",
        229 => "IPV6",
        230 => "IEEE802_15_4_NOFCS",
        231 => "DBUS",
        235 => "DVB_CI",
        236 => "MUX27010",
        237 => "STANAG_5066_D_PDU",
        239 => "NFLOG",
        240 => "NETANALYZER",
        241 => "NETANALYZER_TRANSPARENT",
        242 => "IPOIB",
        243 => "MPEG_2_TS",
        244 => "NG40",
        245 => "NFC_LLCP",
        247 => "INFINIBAND",
        248 => "SCTP",
        249 => "USBPCAP",
        250 => "RTAC_SERIAL",
        251 => "BLUETOOTH_LE_LL",
        253 => "NETLINK",
        254 => "BLUETOOTH_LINUX_MONITOR",
        255 => "BLUETOOTH_BREDR_BB",
        256 => "BLUETOOTH_LE_LL_WITH_PHDR",
        257 => "PROFIBUS_DL",
        258 => "PKTAP",
        259 => "EPON",
        260 => "IPMI_HPM_2",
        261 => "ZWAVE_R1_R2",
        262 => "ZWAVE_R3",
        263 => "WATTSTOPPER_DLM",
        264 => "ISO_14443",
        265 => "RDS",
        266 => "USB_DARWIN",
        268 => "SDLC",
        270 => "LORATAP",
        271 => "VSOCK",
        272 => "NORDIC_BLE",
        273 => "DOCSIS31_XRA31",
        274 => "ETHERNET_MPACKET",
        275 => "DISPLAYPORT_AUX",
        276 => "LINUX_SLL2",
        _ => return None,
    })
}
