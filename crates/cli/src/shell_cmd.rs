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
    /// Write distsync.1 and one page per verb at every depth (distsync-run.1,
    /// distsync-trace-render.1, distsync-cluster-up.1, ...) into this directory (created if
    /// needed); without it, print distsync.1 to standard output.
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
}

pub fn completions(
    args: CompletionsArgs,
    mut command: clap::Command,
) -> Result<Outcome, InputError> {
    // Into memory first: clap_complete panics on a failed write, ours is a clear error.
    let mut script = Vec::new();
    clap_complete::generate(args.shell, &mut command, "distsync", &mut script);
    crate::output::write_stdout(&String::from_utf8_lossy(&script))?;
    Ok(Outcome::Ok)
}

pub fn man(args: ManArgs, command: clap::Command) -> Result<Outcome, InputError> {
    let command = command.version(env!("CARGO_PKG_VERSION"));
    let Some(dir) = args.out else {
        let mut page = Vec::new();
        clap_mangen::Man::new(command)
            .render(&mut page)
            .map_err(|e| format!("cannot render the man page: {e}"))?;
        crate::output::write_stdout(&String::from_utf8_lossy(&page))?;
        return Ok(Outcome::Ok);
    };
    std::fs::create_dir_all(&dir)
        .map_err(|e| format!("--out {}: cannot create it: {e}", dir.display()))?;
    // Built, every subcommand at every depth knows its path: display name
    // `distsync-cluster-up` (the page's file and title), bin name `distsync cluster up` (its
    // synopsis).
    let mut command = command.bin_name("distsync").disable_help_subcommand(true);
    command.build();
    let mut pages = Vec::new();
    every_command(&command, &mut pages);
    let mut written = 0;
    for page in pages {
        let man = clap_mangen::Man::new(page);
        let path = dir.join(man.get_filename());
        let mut file = std::fs::File::create(&path)
            .map_err(|e| format!("--out: cannot write {}: {e}", path.display()))?;
        man.render(&mut file)
            .map_err(|e| format!("--out: cannot write {}: {e}", path.display()))?;
        written += 1;
    }
    crate::output::note(format!(
        "wrote {written} man pages to {}; read one with `man {}/distsync-run.1`",
        dir.display(),
        dir.display()
    ));
    Ok(Outcome::Ok)
}

/// `command` and its subcommands at every depth, parents first, hidden ones left out.
fn every_command(command: &clap::Command, into: &mut Vec<clap::Command>) {
    into.push(command.clone());
    for sub in command.get_subcommands().filter(|s| !s.is_hide_set()) {
        every_command(sub, into);
    }
}
