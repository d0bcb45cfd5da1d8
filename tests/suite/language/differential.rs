//! The differential run of `examples/differential` at a size a debug build
//! runs in seconds: the same generator and check, a fixed seed.

#[path = "../../../examples/differential/cases.rs"]
mod cases;

#[test]
fn table_agrees_with_reference_on_generated_cases() {
    match cases::run(7, 50_000) {
        Ok(tally) => {
            assert!(tally.cases >= 50_000);
            // The generator reaches every exposure and every cause but the
            // runtime-only ones often enough to mean something.
            assert!(tally.exposures.iter().all(|&n| n > 100), "{tally:?}");
            assert!(tally.causes.iter().all(|&n| n > 0), "{tally:?}");
        }
        Err((group, m)) => panic!(
            "group {group}: {}\ncontext {:?}\nitem {:?}\npolicy:\n{}",
            m.what, m.context, m.item, m.policy
        ),
    }
}

#[test]
fn the_same_seed_gives_the_same_cases() {
    let mut a = cases::SplitMix::for_group(3, 11);
    let mut b = cases::SplitMix::for_group(3, 11);
    assert_eq!(cases::policy(&mut a, 10), cases::policy(&mut b, 10));
    let modes = ["m1".to_string()];
    assert_eq!(
        cases::context(&mut a, &modes),
        cases::context(&mut b, &modes)
    );
}
