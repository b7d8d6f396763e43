//! `distsync completions SHELL` and `distsync man`: shell completion scripts and man pages,
//! generated from the command line's own definitions, so they never drift from it.

use crate::{InputError, Outcome};
use std::path::PathBuf;

/// Arguments of `distsync completions`.
#[derive(clap::Args)]
pub struct CompletionsArgs {
    /// The shell: bash, zsh, fish, elvish or powershell. For bash, for example:
    /// `distsync completions bash > ~/.local/share/bash-completion/completions/distsync`.
    shell: clap_complete::Shell,
}

/// Arguments of `distsync man`.
#[derive(clap::Args)]
pub struct ManArgs {
    /// Write distsync.1 and one distsync-VERB.1 per verb into this directory (created if
    /// needed); without it, print distsync.1 to standard output.
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
}

pub fn completions(
    args: CompletionsArgs,
    mut command: clap::Command,
) -> Result<Outcome, InputError> {
    clap_complete::generate(args.shell, &mut command, "distsync", &mut std::io::stdout());
    Ok(Outcome::Ok)
}

pub fn man(args: ManArgs, command: clap::Command) -> Result<Outcome, InputError> {
    let command = command.version(env!("CARGO_PKG_VERSION"));
    let Some(dir) = args.out else {
        clap_mangen::Man::new(command)
            .render(&mut std::io::stdout())
            .map_err(|e| format!("cannot write the man page: {e}"))?;
        return Ok(Outcome::Ok);
    };
    std::fs::create_dir_all(&dir)
        .map_err(|e| format!("--out {}: cannot create it: {e}", dir.display()))?;
    let mut written = 0;
    let mut pages = vec![(String::from("distsync"), command.clone())];
    for sub in command.get_subcommands() {
        if sub.get_name() == "help" {
            continue;
        }
        let name = format!("distsync-{}", sub.get_name());
        let bin = format!("distsync {}", sub.get_name());
        pages.push((name.clone(), sub.clone().display_name(name).bin_name(bin)));
    }
    for (name, page) in pages {
        let path = dir.join(format!("{name}.1"));
        let mut file = std::fs::File::create(&path)
            .map_err(|e| format!("--out: cannot write {}: {e}", path.display()))?;
        clap_mangen::Man::new(page)
            .render(&mut file)
            .map_err(|e| format!("--out: cannot write {}: {e}", path.display()))?;
        written += 1;
    }
    eprintln!(
        "wrote {written} man pages to {}; read one with `man {}/distsync-run.1`",
        dir.display(),
        dir.display()
    );
    Ok(Outcome::Ok)
}
