//! `bitroom-server token --key FILE --room NAME …`: mints one connect
//! token with a private key file and prints its text form (what a game
//! backend does in its own code; see `docs/connect-tokens.md`).

use bitroom_protocol::token::{Claims, Role, MAX_TOKEN_LIFETIME};
use bitroom_transport::keys;
use clap::{Args, ValueEnum};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

/// Arguments of `token`.
#[derive(Args, Debug)]
pub struct TokenArgs {
    /// The private key file (`token-key.pem` from `keygen`).
    #[arg(long, value_name = "FILE")]
    key: PathBuf,
    /// The room the token admits to.
    #[arg(long, value_name = "NAME")]
    room: String,
    /// Player or spectator.
    #[arg(long, value_enum, default_value_t = RoleArg::Player)]
    role: RoleArg,
    /// The seat the player must take (default: any free seat).
    #[arg(long, value_name = "N")]
    seat: Option<u8>,
    /// The user id (opaque, up to 64 bytes; reconnects are bound to it).
    #[arg(long, value_name = "ID", default_value = "")]
    user: String,
    /// How long the token is valid, e.g. 90s or 5m (at most 5m).
    #[arg(long, value_name = "DURATION", default_value = "5m", value_parser = humantime::parse_duration)]
    ttl: Duration,
    /// The id of the server it is for (`serve --server-id`; default: a
    /// server without an id).
    #[arg(long, value_name = "ID", default_value = "")]
    server_id: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum RoleArg {
    Player,
    Spectator,
}

/// The claims these arguments ask for, issued at `now` (Unix seconds).
///
/// # Errors
/// A TTL of zero, over [`MAX_TOKEN_LIFETIME`] or not whole seconds; a seat
/// on a spectator token.
fn claims(args: &TokenArgs, now: u64) -> Result<Claims, String> {
    let ttl = args.ttl;
    if ttl.subsec_nanos() != 0 || ttl.is_zero() || ttl.as_secs() > MAX_TOKEN_LIFETIME {
        return Err(format!(
            "--ttl {}: must be whole seconds from 1s to {MAX_TOKEN_LIFETIME}s",
            humantime::format_duration(ttl)
        ));
    }
    let role = match args.role {
        RoleArg::Player => Role::Player,
        RoleArg::Spectator => Role::Spectator,
    };
    if role == Role::Spectator && args.seat.is_some() {
        return Err("--seat: a spectator takes no seat".into());
    }
    Ok(Claims {
        room: args.room.clone(),
        role,
        seat: args.seat,
        user: args.user.as_bytes().to_vec(),
        server_id: args.server_id.clone(),
        issued_at: now,
        expires_at: now + ttl.as_secs(),
    })
}

/// Runs `token`: prints the token's text form on stdout (what it grants on
/// stderr); exit 0, or 2 for bad arguments or an unusable key file.
pub fn run(args: &TokenArgs) -> ExitCode {
    let bad = |msg: String| {
        eprintln!("error: {msg}");
        ExitCode::from(2)
    };
    let claims = match claims(args, keys::unix_now()) {
        Ok(c) => c,
        Err(e) => return bad(e),
    };
    let token = match keys::mint_from_file(&args.key, &claims) {
        Ok(t) => t,
        Err(e) => return bad(e.to_string()),
    };
    println!("{}", token.to_text());
    eprintln!(
        "{} token for room {:?}{}, {}, expires in {} s",
        claims.role,
        claims.room,
        claims.seat.map_or(String::new(), |s| format!(", seat {s}")),
        if claims.server_id.is_empty() {
            "for a server without an id".to_string()
        } else {
            format!("for server {:?}", claims.server_id)
        },
        claims.expires_at - claims.issued_at
    );
    ExitCode::SUCCESS
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        args: TokenArgs,
    }

    fn parse(extra: &[&str]) -> TokenArgs {
        let mut argv = vec!["token", "--key", "k.pem", "--room", "r"];
        argv.extend_from_slice(extra);
        Cli::try_parse_from(argv).expect("parses").args
    }

    #[test]
    fn arguments_become_claims() {
        let c = claims(&parse(&[]), 1000).unwrap();
        assert_eq!(c, Claims::player("r", 1000, 300));
        let c = claims(
            &parse(&[
                "--seat",
                "2",
                "--user",
                "ann",
                "--ttl",
                "90s",
                "--server-id",
                "eu-1",
            ]),
            1000,
        )
        .unwrap();
        assert_eq!(
            (
                c.seat,
                c.user.as_slice(),
                c.expires_at,
                c.server_id.as_str()
            ),
            (Some(2), &b"ann"[..], 1090, "eu-1")
        );
        let c = claims(&parse(&["--role", "spectator"]), 1000).unwrap();
        assert_eq!(c.role, Role::Spectator);
    }

    #[test]
    fn bad_ttls_and_seated_spectators_are_refused() {
        for ttl in ["0s", "301s", "10m", "1500ms"] {
            let e = claims(&parse(&["--ttl", ttl]), 1000).unwrap_err();
            assert!(e.contains("--ttl"), "{ttl}: {e}");
        }
        let e = claims(&parse(&["--role", "spectator", "--seat", "1"]), 1000).unwrap_err();
        assert!(e.contains("spectator takes no seat"), "{e}");
    }
}
