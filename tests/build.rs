//! With the `agones` feature: server stubs of the Agones SDK services
//! (`agones.dev.sdk.SDK` and the beta `agones.dev.sdk.beta.SDK`), for the
//! fake SDK sidecar in `src/agones_sdk.rs`, generated from the protos the
//! `agones` crate is built from (vendored in `proto/agones/`, see its
//! README; `tests/agones.rs` checks they are still the crate's). Needs
//! protoc, like the `agones` crate itself.

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=proto/agones");
    // The host triple, for tests that ask cargo about this platform only.
    let host = std::env::var("TARGET").unwrap_or_default();
    println!("cargo:rustc-env=BITROOM_TESTS_HOST={host}");
    #[cfg(feature = "agones")]
    tonic_build::configure()
        .build_client(false)
        .build_server(true)
        .compile_protos(
            &[
                "proto/agones/sdk/sdk.proto",
                "proto/agones/sdk/beta/beta.proto",
            ],
            &[
                "proto/agones/googleapis",
                "proto/agones/grpc-gateway",
                "proto/agones/sdk",
                "proto/agones/sdk/beta",
            ],
        )
        .expect("compiling the Agones SDK protos (is protoc installed?)");
}
