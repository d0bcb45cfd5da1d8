//! The compiled table against the reference interpreter at scale.
//!
//! ```sh
//! cargo run --release --example differential -- --seed 2026 --cases 1000000
//! ```
//!
//! Each group (one random policy, 4 contexts, 8 items per context) is drawn
//! from its own generator derived from the seed and the group's number, so a
//! mismatch is reported with its group and can be replayed alone with
//! `--group N`. Exits 1 on the first mismatch, 2 on bad arguments.

mod cases;

use std::process::ExitCode;
use std::time::Instant;

use cases::{Mismatch, SplitMix, Tally};
use toolpolicy::{CauseKind, Exposure};

struct Args {
    seed: u64,
    cases: u64,
    group: Option<u64>,
}

fn parse_args() -> Result<Args, String> {
    let mut args = Args {
        seed: 2026,
        cases: 1_000_000,
        group: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut number = || -> Result<u64, String> {
            let v = it.next().ok_or(format!("`{flag}` needs a value"))?;
            v.replace('_', "")
                .parse()
                .map_err(|_| format!("`{flag}` takes a whole number, not `{v}`"))
        };
        match flag.as_str() {
            "--seed" => args.seed = number()?,
            "--cases" => args.cases = number()?,
            "--group" => args.group = Some(number()?),
            _ => {
                return Err(format!(
                    "unknown argument `{flag}` (--seed N, --cases N, --group N)"
                ));
            }
        }
    }
    Ok(args)
}

fn report_mismatch(group: u64, seed: u64, m: &Mismatch) {
    eprintln!(
        "mismatch in group {group} (replay: --seed {seed} --group {group}): {}",
        m.what
    );
    eprintln!("context: {:?}", m.context);
    if let Some(item) = &m.item {
        eprintln!("item: {item:?}");
    }
    eprintln!("policy:\n{}", m.policy);
}

fn print_tally(t: &Tally, seconds: f64) {
    println!(
        "{} cases ({} policies; {} in contexts the policy rejects, rejected alike) in {seconds:.1} s, {:.0} cases/s: no mismatch",
        t.cases,
        t.policies,
        t.rejected,
        t.cases as f64 / seconds.max(1e-9)
    );
    let exposures = [Exposure::Active, Exposure::Deferred, Exposure::Hidden];
    let line: Vec<String> = exposures
        .iter()
        .zip(t.exposures)
        .map(|(e, n)| format!("{e} {n}"))
        .collect();
    println!("by exposure: {}", line.join(", "));
    let line: Vec<String> = CauseKind::ALL
        .iter()
        .zip(t.causes)
        .map(|(c, n)| format!("{c} {n}"))
        .collect();
    println!("by cause: {}", line.join(", "));
}

fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    let start = Instant::now();
    let result = match args.group {
        Some(g) => cases::group(&mut SplitMix::for_group(args.seed, g), 4, 8).map_err(|m| (g, m)),
        None => cases::run(args.seed, args.cases),
    };
    match result {
        Ok(tally) => {
            println!("seed {}", args.seed);
            print_tally(&tally, start.elapsed().as_secs_f64());
            ExitCode::SUCCESS
        }
        Err((group, m)) => {
            report_mismatch(group, args.seed, &m);
            ExitCode::from(1)
        }
    }
}
