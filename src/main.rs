//! The `kapi` command line.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use clap::{Parser, Subcommand};

use kapi_apimachinery::codec::{Format, TypeMeta};

/// mimalloc instead of glibc's malloc: serving a write allocates and frees many small values
/// (see ARCHITECTURE.md, "Performance"; built without transparent huge pages, see Cargo.toml).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Parser)]
#[command(name = "kapi", version, about = "A Kubernetes API server generated from the upstream specs")]
#[command(args_conflicts_with_subcommands = true)]
struct Cli {
    /// What to do; without a command kapi serves, taking `kapi serve`'s flags.
    #[command(subcommand)]
    command: Option<Command>,
    #[command(flatten)]
    serve: kapi::server::ServeArgs,
}

#[derive(Subcommand)]
enum Command {
    /// Serve the Kubernetes API over HTTPS (the default).
    Serve(Box<kapi::server::ServeArgs>),
    /// Read an object in JSON, YAML or Kubernetes protobuf and print it as YAML (or JSON).
    ///
    /// The tool for reading raw etcd values: `etcdctl get --print-value-only KEY | kapi decode`.
    Decode(CodecArgs),
    /// Read an object in JSON, YAML or protobuf and write it in another form (default protobuf).
    Encode(CodecArgs),
    /// Write a kubeconfig for any user, with a client certificate signed by kapi's CA
    /// (`kapi kubeconfig --user alice --group dev > alice.kubeconfig`).
    Kubeconfig {
        /// The user (the certificate's common name).
        #[arg(long)]
        user: String,
        /// A group (the certificate's organizations); repeat for more.
        #[arg(long)]
        group: Vec<String>,
        /// The data directory of the kapi whose CA signs (its `pki/`).
        #[arg(long, default_value = "./kapi-data")]
        data_dir: PathBuf,
        /// The server URL (default: https://127.0.0.1 on the port in `<data-dir>/port`).
        #[arg(long)]
        server: Option<String>,
        /// Output file (default standard output).
        #[arg(short, long)]
        output: Option<PathBuf>,
    },
}

#[derive(clap::Args)]
struct CodecArgs {
    /// Input file; `-` or none reads standard input.
    file: Option<PathBuf>,
    /// Input format: json, yaml or protobuf (detected when not given).
    #[arg(long)]
    from: Option<String>,
    /// Output format: json, yaml or protobuf.
    #[arg(long)]
    to: Option<String>,
    /// Output file (default standard output).
    #[arg(short, long)]
    output: Option<PathBuf>,
    /// The kind, as `apiVersion/Kind` (e.g. `v1/WatchEvent`), for bodies that do not carry
    /// their own `apiVersion` and `kind`.
    #[arg(long)]
    kind: Option<String>,
}

fn main() -> ExitCode {
    match run(Cli::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("kapi: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn run(cli: Cli) -> Result<()> {
    let command = match cli.command {
        Some(c) => c,
        None => Command::Serve(Box::new(cli.serve)),
    };
    match command {
        Command::Serve(args) => {
            tracing_subscriber::fmt()
                .with_env_filter(
                    tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
                )
                .with_writer(std::io::stderr)
                .init();
            let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
            runtime.block_on(kapi::server::serve(*args))
        }
        Command::Kubeconfig { user, group, data_dir, server, output } => {
            let server = match server {
                Some(server) => server,
                None => {
                    let port = std::fs::read_to_string(data_dir.join("port")).context("reading <data-dir>/port (is kapi serving?)")?;
                    format!("https://127.0.0.1:{}", port.trim())
                }
            };
            let yaml = kapi::pki::user_kubeconfig(&data_dir, &server, &user, &group)?;
            match output {
                Some(path) => std::fs::write(&path, yaml).with_context(|| format!("writing {}", path.display()))?,
                None => print!("{yaml}"),
            }
            Ok(())
        }
        Command::Decode(args) => codec_command(args, Format::Yaml),
        Command::Encode(args) => codec_command(args, Format::Protobuf),
    }
}

fn parse_format(name: Option<&str>, what: &str) -> Result<Option<Format>> {
    match name {
        None => Ok(None),
        Some(n) => match Format::from_name(n) {
            Some(f) => Ok(Some(f)),
            None => bail!("unknown {what} format {n:?}: use json, yaml or protobuf"),
        },
    }
}

fn codec_command(args: CodecArgs, default_to: Format) -> Result<()> {
    let from = parse_format(args.from.as_deref(), "input")?;
    let to = parse_format(args.to.as_deref(), "output")?.unwrap_or(default_to);
    let input = match args.file.as_deref() {
        None => read_stdin()?,
        Some(p) if p == Path::new("-") => read_stdin()?,
        Some(p) => std::fs::read(p).with_context(|| format!("reading {}", p.display()))?,
    };
    if input.iter().all(u8::is_ascii_whitespace) {
        bail!("the input is empty");
    }
    let kind = match args.kind.as_deref() {
        None => None,
        Some(k) => match k.rsplit_once('/') {
            Some((api_version, kind)) if !api_version.is_empty() && !kind.is_empty() => {
                Some(TypeMeta { api_version: api_version.to_owned(), kind: kind.to_owned() })
            }
            _ => bail!("--kind {k:?}: expected apiVersion/Kind, e.g. apps/v1/Deployment or v1/Pod"),
        },
    };
    let mut out = match kapi::convert::convert(&input, from, to, kind.as_ref()) {
        // `etcdctl get --print-value-only` ends every value with a newline, which is not part
        // of a protobuf value: try again without it before reporting the first error.
        Err(e) if input.starts_with(b"k8s\0") && input.ends_with(b"\n") => {
            kapi::convert::convert(&input[..input.len() - 1], from, to, kind.as_ref()).map_err(|_| e)?
        }
        converted => converted?,
    };
    if to == Format::Json {
        out = kapi::convert::pretty_json(&out)?;
    }
    match args.output {
        Some(p) => std::fs::write(&p, out).with_context(|| format!("writing {}", p.display()))?,
        None => std::io::stdout().write_all(&out).context("writing standard output")?,
    }
    Ok(())
}

fn read_stdin() -> Result<Vec<u8>> {
    let mut buf = Vec::new();
    std::io::stdin().read_to_end(&mut buf).context("reading standard input")?;
    Ok(buf)
}
