//! Campaigns split over machines: `--shard K/N` runs one shard of `stress`, `sweep` or `compare`
//! and prints its results file (JSON) on standard output; `--merge FILES` reads the results
//! files of all N shards and prints what the unsharded campaign prints, byte for byte.
//!
//! Every run of a campaign depends only on the campaign (seed, algorithms, sizes...) and its run
//! index, so shard K of N makes the runs whose index is K-1 modulo N, and the merge puts the
//! runs back in index order. A results file names its verb, the campaign (the options that
//! decide the runs) and its shard: a merge refuses files of different campaigns, a shard given
//! twice and a shard missing, naming the file. The distribution itself is a scheduler's (a
//! Kubernetes Indexed Job, a Slurm array: docs/stress.md), not this program's.

use crate::InputError;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// The version of the results file's format, refused by a merge that reads another.
const FORMAT: u32 = 1;

/// Shard K of N (`index` = K-1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shard {
    /// K-1.
    pub index: u64,
    /// N.
    pub count: u64,
}

impl Shard {
    /// Whether the run of this index is this shard's.
    pub fn takes(self, run: u64) -> bool {
        run % self.count == self.index
    }
}

impl std::fmt::Display for Shard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.index + 1, self.count)
    }
}

/// `K/N` with 1 <= K <= N (clap's value parser of `--shard`, whose error names the flag).
pub fn parse(text: &str) -> Result<Shard, String> {
    let expected =
        || format!("expected K/N with 1 <= K <= N, like 2/3 (shard 2 of 3), got `{text}`");
    let (k, n) = text.split_once('/').ok_or_else(expected)?;
    let k: u64 = k.trim().parse().map_err(|_| expected())?;
    let n: u64 = n.trim().parse().map_err(|_| expected())?;
    if n == 0 || k == 0 || k > n {
        return Err(expected());
    }
    Ok(Shard {
        index: k - 1,
        count: n,
    })
}

/// A results file: one shard's runs of one campaign (`Runs`: a slice of them to write, a
/// `Vec` to read).
#[derive(Serialize, Deserialize)]
struct ShardFile<Runs> {
    /// The format's version.
    distsync_shard: u32,
    /// The verb that made it.
    verb: String,
    /// "K/N".
    shard: String,
    /// The options that decide the runs; the same in every shard of a campaign.
    campaign: serde_json::Value,
    /// Whether a signal cut the shard short (its runs are then not all there, and a merge
    /// refuses it).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    interrupted: bool,
    /// The shard's runs, in index order.
    runs: Runs,
}

/// The results file of shard `shard` of a `verb` campaign, as text; `interrupted`: a signal cut
/// it short.
pub fn file_text<C: Serialize, R: Serialize>(
    verb: &str,
    shard: Shard,
    campaign: &C,
    runs: &[R],
    interrupted: bool,
) -> Result<String, InputError> {
    let file = ShardFile {
        distsync_shard: FORMAT,
        verb: verb.to_string(),
        shard: shard.to_string(),
        campaign: serde_json::to_value(campaign)?,
        interrupted,
        runs,
    };
    Ok(serde_json::to_string_pretty(&file)? + "\n")
}

/// Reads the results files of every shard of one `verb` campaign: the campaign and every run.
pub fn read<C: DeserializeOwned, R: DeserializeOwned>(
    verb: &str,
    files: &[PathBuf],
) -> Result<(C, Vec<R>), InputError> {
    let mut first: Option<(PathBuf, serde_json::Value, u64)> = None;
    let mut seen: Vec<Option<PathBuf>> = Vec::new();
    let mut runs = Vec::new();
    for path in files {
        let name = path.display();
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("--merge: cannot read {name}: {e}"))?;
        let header: serde_json::Value = serde_json::from_str(&text).map_err(|e| {
            format!("--merge: {name}: not a results file of `distsync {verb} --shard`: {e}")
        })?;
        match header.get("distsync_shard").and_then(|v| v.as_u64()) {
            Some(v) if v == u64::from(FORMAT) => {}
            Some(v) => {
                return Err(InputError(format!(
                    "--merge: {name}: results format {v}, and this distsync reads format {FORMAT}"
                )))
            }
            None => {
                return Err(InputError(format!(
                    "--merge: {name}: not a results file of `distsync {verb} --shard` (no `distsync_shard` field)"
                )))
            }
        }
        let made_by = header.get("verb").and_then(|v| v.as_str()).unwrap_or("?");
        if made_by != verb {
            return Err(InputError(format!(
                "--merge: {name} holds a `{made_by}` campaign's results, not `{verb}`'s"
            )));
        }
        let file: ShardFile<Vec<R>> =
            serde_json::from_value(header).map_err(|e| format!("--merge: {name}: {e}"))?;
        let shard =
            parse(&file.shard).map_err(|e| format!("--merge: {name}: field `shard`: {e}"))?;
        if file.interrupted {
            return Err(InputError(format!(
                "--merge: {name}: shard {shard} was interrupted after {} runs; make it again",
                file.runs.len()
            )));
        }
        match &first {
            None => {
                first = Some((path.clone(), file.campaign.clone(), shard.count));
                seen = vec![None; shard.count as usize];
            }
            Some((first_path, campaign, count)) => {
                if *campaign != file.campaign {
                    let differs = differing_field(campaign, &file.campaign);
                    return Err(InputError(format!(
                        "--merge: {name} and {} are shards of different campaigns ({differs} differs)",
                        first_path.display()
                    )));
                }
                if *count != shard.count {
                    return Err(InputError(format!(
                        "--merge: {name} is shard {shard}, and {} is one of {count} shards",
                        first_path.display()
                    )));
                }
            }
        }
        if let Some(other) = &seen[shard.index as usize] {
            return Err(InputError(format!(
                "--merge: {name} and {} are both shard {shard}",
                other.display()
            )));
        }
        seen[shard.index as usize] = Some(path.clone());
        runs.extend(file.runs);
    }
    let Some((_, campaign, count)) = first else {
        return Err(InputError(
            "--merge: expected the results files of the shards".into(),
        ));
    };
    let missing: Vec<String> = seen
        .iter()
        .enumerate()
        .filter(|(_, p)| p.is_none())
        .map(|(k, _)| format!("{}/{count}", k + 1))
        .collect();
    if !missing.is_empty() {
        return Err(InputError(format!(
            "--merge: shard{} {} missing (every shard's results file is needed)",
            if missing.len() == 1 { "" } else { "s" },
            missing.join(", ")
        )));
    }
    let campaign =
        serde_json::from_value(campaign).map_err(|e| format!("--merge: field `campaign`: {e}"))?;
    Ok((campaign, runs))
}

/// The first top-level field in which two campaigns differ, for the error message.
fn differing_field(a: &serde_json::Value, b: &serde_json::Value) -> String {
    if let (Some(a), Some(b)) = (a.as_object(), b.as_object()) {
        for (k, v) in a {
            if b.get(k) != Some(v) {
                return format!("`{k}`");
            }
        }
        for k in b.keys() {
            if !a.contains_key(k) {
                return format!("`{k}`");
            }
        }
    }
    "the campaign".into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shard_specs_are_one_based_and_bounded() {
        assert_eq!(parse("1/3"), Ok(Shard { index: 0, count: 3 }));
        assert_eq!(parse("3/3"), Ok(Shard { index: 2, count: 3 }));
        for bad in ["0/3", "4/3", "1/0", "x", "1/", "/3", "-1/3", "1/3/3"] {
            assert!(parse(bad).is_err(), "{bad}");
        }
        let s = parse("2/3").unwrap();
        let taken: Vec<u64> = (0..7).filter(|&r| s.takes(r)).collect();
        assert_eq!(taken, vec![1, 4]);
        assert_eq!(s.to_string(), "2/3");
    }
}
