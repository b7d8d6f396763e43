//! `distsync web`: serve the interactive page (crates/web) and print its URL.

use crate::{InputError, Outcome};
use distsync_sim::Scenario;
use std::net::SocketAddr;
use std::path::PathBuf;

/// Arguments of `distsync web`.
#[derive(clap::Args)]
pub struct WebArgs {
    /// A scenario file (TOML) to open at start; without it the page starts from the algorithm
    /// you pick.
    scenario: Option<PathBuf>,
    /// The address to serve on; port 0 picks a free port.
    #[arg(long, default_value = "127.0.0.1:8080", value_parser = parse_listen)]
    listen: SocketAddr,
    /// Open the page in the desktop's browser (xdg-open, or open on macOS).
    #[arg(long)]
    open: bool,
}

fn parse_listen(text: &str) -> Result<SocketAddr, String> {
    text.parse().map_err(|_| {
        format!("expected an IP address and a port, like 127.0.0.1:8080 (port 0 picks a free port), got `{text}`")
    })
}

/// Runs `distsync web` until interrupted.
pub fn web(args: WebArgs) -> Result<Outcome, InputError> {
    let initial = match &args.scenario {
        Some(path) => {
            let origin = path.display().to_string();
            let toml = std::fs::read_to_string(path)
                .map_err(|e| InputError(format!("{origin}: cannot read the scenario: {e}")))?;
            let scenario = Scenario::from_toml(&toml, &origin)?;
            scenario.check(&origin)?;
            Some(distsync_web::Initial { toml, origin })
        }
        None => None,
    };
    let server = distsync_web::Server::start(args.listen, initial)?;
    let url = server.url();
    println!("distsync web: serving the page at {url} (ctrl-c stops it)");
    if let Some(note) = distsync_web::exposure(server.addr()) {
        crate::output::note(note);
    }
    if args.open {
        let opener = if cfg!(target_os = "macos") {
            "open"
        } else {
            "xdg-open"
        };
        if let Err(e) = std::process::Command::new(opener).arg(&url).spawn() {
            eprintln!("warning: --open: cannot start {opener} ({e}); open {url} yourself");
        }
    }
    server.wait();
    Ok(Outcome::Ok)
}
