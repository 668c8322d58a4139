//! `bitroom-server keygen --out DIR`: a connect-token key pair (the key
//! file format is in `bitroom_transport::keys`; tokens in
//! `docs/connect-tokens.md`).

use bitroom_transport::keys;
use clap::Args;
use std::path::PathBuf;
use std::process::ExitCode;

/// Arguments of `keygen`.
#[derive(Args, Debug)]
pub struct KeygenArgs {
    /// Directory for `token-key.pem` (private, mode 0600: keep it on the
    /// game backend) and `token-key.pub.pem` (public: give it to servers
    /// with `serve --token-key`). Existing keys are never replaced.
    #[arg(long, value_name = "DIR")]
    out: PathBuf,
}

/// Runs `keygen`: exit 0, or 2 when the files cannot be written.
pub fn run(args: &KeygenArgs) -> ExitCode {
    match keys::keygen(&args.out) {
        Ok(files) => {
            println!("private key {} (mode 0600)", files.private.display());
            println!("public key  {}", files.public.display());
            println!("{}", files.key_id);
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(2)
        }
    }
}
