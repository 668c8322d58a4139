//! Argument groups shared by the commands that connect: how to trust the
//! server's certificate, and the link conditioner.

use bitroom_client::conditioner::{ConditionerConfig, GilbertElliott, Outage, Percent, RateLimit};
use bitroom_client::link_model::{Bytes, Rate};
use bitroom_transport::{parse_fingerprint, CertPin, TlsError};
use std::path::PathBuf;
use std::time::Duration;

/// Certificate options shared by the commands that connect.
#[derive(clap::Args, Clone, Debug, Default)]
pub struct CertArgs {
    /// Trust the server whose certificate is this file (PEM or DER; its
    /// SHA-256 is pinned).
    #[arg(long, value_name = "FILE", group = "trust")]
    pub cert: Option<PathBuf>,
    /// Trust the server whose certificate has this SHA-256 (hex, colons
    /// allowed), as printed by `bitroom-server serve`.
    #[arg(long, value_name = "HEX", group = "trust")]
    pub cert_sha256: Option<String>,
    /// Do not verify the server's certificate at all (development only).
    #[arg(long, group = "trust")]
    pub insecure: bool,
}

impl CertArgs {
    /// The pin these options ask for.
    ///
    /// # Errors
    /// Unreadable certificate, bad fingerprint, or no option given.
    pub fn pin(&self) -> Result<CertPin, TlsError> {
        if let Some(p) = &self.cert {
            return CertPin::from_cert_file(p);
        }
        if let Some(h) = &self.cert_sha256 {
            return Ok(CertPin::Sha256(parse_fingerprint(h)?));
        }
        if self.insecure {
            return Ok(CertPin::Insecure);
        }
        Err(TlsError::Config(
            "say how to trust the server: --cert FILE, --cert-sha256 HEX or --insecure".into(),
        ))
    }
}

/// Link conditioner options (each direction).
#[derive(clap::Args, Clone, Debug, Default)]
pub struct ConditionerArgs {
    /// One-way added delay, e.g. 80ms.
    #[arg(long, value_name = "DURATION", value_parser = humantime::parse_duration)]
    pub sim_latency: Option<Duration>,
    /// Extra random delay up to this, e.g. 20ms.
    #[arg(long, value_name = "DURATION", value_parser = humantime::parse_duration)]
    pub sim_jitter: Option<Duration>,
    /// Datagram loss, e.g. 5%.
    #[arg(long, value_name = "PERCENT")]
    pub sim_loss: Option<Percent>,
    /// Datagram duplication, e.g. 1%.
    #[arg(long, value_name = "PERCENT")]
    pub sim_dup: Option<Percent>,
    /// Datagrams held back so later ones overtake them, e.g. 2%.
    #[arg(long, value_name = "PERCENT")]
    pub sim_reorder: Option<Percent>,
    /// Bursty loss (Gilbert–Elliott): ENTER,LEAVE,LOSS_BAD[,LOSS_GOOD] per
    /// datagram, e.g. 2%,25%,75% (bursts of 4 datagrams on average, 5.6 %
    /// lost overall).
    #[arg(long, value_name = "P,P,P")]
    pub sim_burst: Option<GilbertElliott>,
    /// A scheduled outage, AT+LENGTH from the bot's start, e.g. 45s+2s.
    #[arg(long, value_name = "AT+LEN")]
    pub sim_outage: Option<Outage>,
    /// Bandwidth cap per direction (token bucket, IP and UDP headers
    /// counted), e.g. 256kbit.
    #[arg(long, value_name = "RATE")]
    pub sim_rate: Option<Rate>,
    /// Queue in front of the bandwidth cap; datagrams that would wait
    /// behind more are dropped [default: half a second at --sim-rate].
    #[arg(long, value_name = "BYTES", requires = "sim_rate")]
    pub sim_queue: Option<Bytes>,
    /// Seed of the conditioner's decisions.
    #[arg(long, default_value_t = 1)]
    pub sim_seed: u64,
}

impl ConditionerArgs {
    /// The conditioner asked for, if any option is set.
    pub fn config(&self) -> Option<ConditionerConfig> {
        let c = ConditionerConfig {
            latency: self.sim_latency.unwrap_or_default(),
            jitter: self.sim_jitter.unwrap_or_default(),
            loss_ppm: self.sim_loss.map_or(0, |p| p.ppm),
            dup_ppm: self.sim_dup.map_or(0, |p| p.ppm),
            reorder_ppm: self.sim_reorder.map_or(0, |p| p.ppm),
            burst: self.sim_burst,
            outage: self.sim_outage,
            rate: self.sim_rate.map(|r| {
                let mut l = RateLimit::new(r.bytes_per_sec);
                if let Some(q) = self.sim_queue {
                    l.queue = q.0;
                }
                l
            }),
            seed: self.sim_seed,
        };
        (!c.is_noop()).then_some(c)
    }
}
