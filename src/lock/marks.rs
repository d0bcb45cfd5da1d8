//! Which tools a policy's lock leaves unlocked: [`mark`] sets it on a
//! registry, [`marks`] says what it would set.

use super::LockSetting;
use crate::policy::Policy;
use crate::registry::{Registry, Tool};

/// Sets [`Tool::unlocked`] on every tool of the registry for `policy`'s
/// lock: all false when the policy names none, all true when it names one
/// that was never [`attach`](super::attach)ed (fail closed). Returns how many are unlocked.
pub fn mark(registry: &mut Registry, policy: &Policy) -> usize {
    registry.set_unlocked(|t| unlocked_for(policy, t))
}

/// What [`mark`] would set on each tool of `registry`, in registry order:
/// for a caller that first looks whether anything would change, without
/// digesting every tool twice.
pub fn marks(registry: &Registry, policy: &Policy) -> Vec<bool> {
    registry
        .tools()
        .iter()
        .map(|t| unlocked_for(policy, t))
        .collect()
}

fn unlocked_for(policy: &Policy, tool: &Tool) -> bool {
    match &policy.lock {
        None => false,
        Some(LockSetting { file: None, .. }) => true,
        Some(LockSetting {
            file: Some(lock), ..
        }) => lock.is_unlocked(tool),
    }
}
